"""A machine as a value: a shipped machine or a machine file, with overrides.

A :class:`MachineSpec` is what the layers above the engine pass around instead
of a machine's name: it is resolved once (the engine merges the machine file
over its ``base`` machines, applies the overrides and validates everything)
into the machine's TOML, its facts (:class:`MachineFacts`, read from the
resolved file, no machine built) and its model variants
(:class:`VariantInfo`). ``spec.machine(seed)`` builds a :class:`~cellsim.Machine`.
It is immutable, hashable and picklable, so a sweep can send it to workers
and key results on :attr:`MachineSpec.fingerprint` (the resolved contents, not
the name).

A spec also carries how its machines are built for a run, its
:class:`RunOptions` (the simulated-time limit, the reference path, the trace:
``--time-limit``, ``--exact-reference``, ``--trace``): every machine built from
it applies them, wherever the spec is passed down (an experiment's helpers,
``mpirun``, a sweep's worker). They change no result, so they are no part of
the spec's equality or fingerprint.

>>> from cellsim.spec import MachineSpec
>>> spec = MachineSpec.of("qs20-1chip", ["eib.recv_switch_bus_cycles=0"])
>>> spec.name, spec.facts.spes, spec.variant("recv_switch").value
('qs20-1chip', 8, '0')
>>> str(spec)
'qs20-1chip with eib.recv_switch_bus_cycles=0'
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from . import _engine
from .exceptions import UsageError

if TYPE_CHECKING:
    from .machine import Machine
    from .trace import Capture

__all__ = [
    "ChoiceInfo",
    "MachineFacts",
    "MachineLike",
    "MachineSpec",
    "RunOptions",
    "VariantInfo",
    "override_strings",
    "variants_markdown",
]


_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def override_strings(overrides: Mapping[str, Any] | Iterable[str]) -> tuple[str, ...]:
    """Overrides as ``section.key=value`` strings, from a mapping or strings."""
    if isinstance(overrides, Mapping):
        return tuple(f"{k}={_toml_value(v)}" for k, v in overrides.items())
    if isinstance(overrides, str):
        raise UsageError(f"overrides {overrides!r}: give a list of section.key=value strings or a mapping")
    return tuple(str(o) for o in overrides)


_SCOPED = re.compile(r"([A-Za-z0-9_-]+):(.+=.*)")


def _scoped_to(source: str, overrides: tuple[str, ...]) -> tuple[str, ...]:
    """The overrides for the machine of ``source``: ``NAME:section.key=value`` applies to the
    shipped machine NAME only (a sweep over several papers' machines can change one of them)."""
    if not any(_SCOPED.fullmatch(o) for o in overrides):
        return overrides
    names = _shipped()
    own = MachineSpec(source).name
    kept = []
    for o in overrides:
        m = _SCOPED.fullmatch(o)
        if m is None:
            kept.append(o)
        elif m[1] not in names:
            raise UsageError(
                f"override {o!r}: {m[1]!r} is not a shipped machine ({', '.join(sorted(names))}); "
                "NAME:section.key=value changes that machine only"
            )
        elif m[1] == own:
            kept.append(m[2])
    return tuple(kept)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        # a plain word reads as itself (the engine takes a bare word as a string)
        bare = _BARE.fullmatch(v) and v not in ("true", "false", "inf", "nan")
        return v if bare else f'"{v}"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return str(v)


def _pass_delay_ns(messaging: Mapping[str, Any]) -> float:
    """The library's wait after every pass: its ``pass_delay_ns`` if it polls ``every_pass``."""
    if messaging.get("polling", "on_idle") != "every_pass":
        return 0.0
    return float(messaging.get("pass_delay_ns", 0.0))


@lru_cache(maxsize=1)
def _shipped() -> frozenset[str]:
    return frozenset(_engine.machine_names())


@lru_cache(maxsize=256)
def _resolved_shipped(source: str, overrides: tuple[str, ...]) -> str:
    """A shipped machine resolved once per process and overrides: its files are in the engine,
    so they cannot change, and every machine a sweep builds reads its facts."""
    return str(_engine.resolved_machine(source, list(overrides)))


@lru_cache(maxsize=64)
def _parsed(toml: str) -> dict[str, Any]:
    """A resolved machine file's table, parsed once per contents: parsing takes several times
    as long as building the machine, and a sweep resolves the same machine at every point."""
    return tomllib.loads(toml)


@dataclass(frozen=True)
class MachineFacts:
    """What the layers above the engine read of a machine, from its resolved file."""

    name: str
    description: str
    core_hz: float
    timebase_hz: float
    chips: int
    spes: int
    """SPEs software can use."""
    physical_spes: tuple[int, ...]
    """Their physical numbers, sorted."""
    memory_bytes: int
    ls_bytes: int
    """Each SPE's local store."""
    ls_reserved_bytes: int
    """The bottom of each local store, kept for the runtime (a program's buffers start above it)."""
    ppe_l2_bytes: int
    dp_issue_cycles: int
    """SPU cycles between two double-precision SIMD instructions (``spu.dp_issue_cycles``: 7 on the
    original Cell, 1 on the fully pipelined PowerXCell 8i)."""
    dp_latency_cycles: int
    """SPU cycles from a double-precision multiply-add's issue to the use of its result
    (``spu.dp_latency_cycles``: 13 on the original Cell, 9 on the PowerXCell 8i)."""
    page_bytes: int
    numa_policy: str
    tlb_entries: int
    ramps: tuple[str, ...]
    bif_link_gbs: float | None
    """The link between the chips (GB/s each way), on a two-chip machine."""
    messaging_dma_wait: str = "batched"
    """When Keller and Varbanescu's message-passing library waits for its DMAs (``messaging.dma_wait``)."""
    messaging_pass_delay_ns: float = 0.0
    """Its wait after every pass of its loop (``messaging.pass_delay_ns`` when ``messaging.polling =
    "every_pass"``; 0: it waits only after a pass that did nothing)."""


@dataclass(frozen=True)
class ChoiceInfo:
    """One candidate form of a model variant."""

    name: str
    status: str
    """``sourced`` (a document says so) or ``inferred`` (explains visible statements)."""
    source: str
    explains: tuple[str, ...]
    """Ids of the visible published statements an inferred choice is meant to explain."""
    params: tuple[str, ...]
    what: str


@dataclass(frozen=True)
class VariantInfo:
    """A model variant of a machine: a mechanism no source fixes, and the choice this spec runs."""

    name: str
    key: str
    """The machine setting that selects the choice."""
    about: str
    why: str
    """Why the machine file's value is the default."""
    value: str
    """The choice this spec runs."""
    default: str
    """The machine file's own choice."""
    choices: tuple[ChoiceInfo, ...]

    @property
    def chosen(self) -> ChoiceInfo:
        return next(c for c in self.choices if c.name == self.value)

    @property
    def is_default(self) -> bool:
        return self.value == self.default


@dataclass(frozen=True)
class RunOptions:
    """How every machine of a run is built, besides its spec and seed.

    A machine's own arguments come first: ``Machine(time_limit_ns=...)`` is
    bounded by :attr:`time_limit_ns`, ``Machine(exact_reference=...)`` and
    ``Machine(check_dma=...)`` given win. The host-time limit (``--wall-limit``) is not here: it is a
    process-wide alarm (:func:`cellsim.limits.command_limits`).
    """

    time_limit_ns: float | None = None
    """Every machine's simulated-time limit is at most this (``--time-limit``; ``None``: its own)."""
    exact_reference: bool = False
    """Simulate every bus transfer event by event, without the fast-forward (``--exact-reference``)."""
    trace: Capture | None = None
    """Trace the first machine built (``--trace``); copies in other processes never trace."""
    check_dma: bool = False
    """Every machine stops a program at a DMA race (``--check-dma``; :mod:`cellsim.dmacheck`), in a
    sweep's worker processes too."""

    def point(self) -> dict[str, Any]:
        """The options as a sweep point's JSON fields (the trace stays in this process)."""
        return {
            "time_limit_ns": self.time_limit_ns,
            "exact_reference": self.exact_reference,
            "check_dma": self.check_dma,
        }


@dataclass(frozen=True)
class MachineSpec:
    """A machine: a shipped name or a machine file's path, and overrides (``section.key=value``;
    ``NAME:section.key=value`` only if this is the shipped machine NAME), with the
    :class:`RunOptions` its machines are built with."""

    source: str
    overrides: tuple[str, ...] = ()
    run: RunOptions = field(default=RunOptions(), compare=False, repr=False)
    """How its machines are built for a run (limits, reference path, trace): not the machine itself."""

    @classmethod
    def of(cls, machine: str | MachineSpec, overrides: Mapping[str, Any] | Iterable[str] = ()) -> MachineSpec:
        """The spec of a name, a path or a spec, with more overrides (applied after its own)."""
        more = override_strings(overrides)
        if isinstance(machine, MachineSpec):
            more = _scoped_to(machine.source, more)
            return machine if not more else replace(machine, overrides=machine.overrides + more)
        if not isinstance(machine, str):
            raise UsageError(f"machine {machine!r}: give a machine name, a TOML file's path or a MachineSpec")
        return cls(machine, _scoped_to(machine, more))

    def with_overrides(self, overrides: Mapping[str, Any] | Iterable[str]) -> MachineSpec:
        """This spec with more overrides."""
        return MachineSpec.of(self, overrides)

    def running(self, run: RunOptions) -> MachineSpec:
        """This machine, its machines built with ``run``."""
        return replace(self, run=run)

    @cached_property
    def toml(self) -> str:
        """The resolved machine file (bases merged, overrides applied); ``ConfigError`` if invalid."""
        if self.source in _shipped():
            return _resolved_shipped(self.source, self.overrides)
        return str(_engine.resolved_machine(self.source, list(self.overrides)))

    @cached_property
    def _table(self) -> dict[str, Any]:
        return _parsed(self.toml)

    @cached_property
    def facts(self) -> MachineFacts:
        """The machine's facts, read from the resolved file."""
        t = self._table
        spes = tuple(sorted(int(s) for s in t["spes"]))
        bif = t.get("bif")
        return MachineFacts(
            name=str(t["name"]),
            description=str(t["description"]),
            core_hz=float(t["core_ghz"]) * 1e9,
            timebase_hz=float(t["timebase_mhz"]) * 1e6,
            chips=int(t.get("chips", 1)),
            spes=len(spes),
            physical_spes=spes,
            memory_bytes=int(t["memory_mb"]) << 20,
            ls_bytes=int(t["spu"]["ls_kb"]) << 10,
            ls_reserved_bytes=int(t["spu"]["ls_reserved_bytes"]),
            ppe_l2_bytes=int(t["ppe"]["l2_kb"]) << 10,
            dp_issue_cycles=int(t["spu"]["dp_issue_cycles"]),
            dp_latency_cycles=int(t["spu"]["dp_latency_cycles"]),
            page_bytes=int(t["numa"]["page_kb"]) << 10,
            numa_policy=str(t["numa"]["policy"]),
            tlb_entries=int(t["tlb"]["entries"]),
            ramps=tuple(t["ramps"]),
            bif_link_gbs=float(bif["link_gbs"]) if bif else None,
            messaging_dma_wait=str(t.get("messaging", {}).get("dma_wait", "batched")),
            messaging_pass_delay_ns=_pass_delay_ns(t.get("messaging", {})),
        )

    def setting(self, key: str) -> Any:
        """The resolved value of the setting ``section.key`` (``mfc.command_cycles``);
        ``UsageError`` naming the key if the machine has no such setting."""
        node: Any = self._table
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise UsageError(f"machine {self.name} has no setting {key!r}")
            node = node[part]
        return node

    @property
    def name(self) -> str:
        """The machine's name (from its file: ``qs20``)."""
        return self.facts.name

    @cached_property
    def variants(self) -> tuple[VariantInfo, ...]:
        """The machine's model variants, with the choice this spec runs."""
        out = []
        for v in _engine.machine_variants(self.source, list(self.overrides)):
            choices = tuple(
                ChoiceInfo(
                    name=c,
                    status=d["status"],
                    source=d["source"],
                    explains=tuple(d["explains"]),
                    params=tuple(d["params"]),
                    what=d["what"],
                )
                for c, d in v["choices"].items()
            )
            out.append(
                VariantInfo(
                    name=v["name"],
                    key=v["key"],
                    about=v["about"],
                    why=v["why"],
                    value=v["value"],
                    default=v["default"] or v["value"],
                    choices=choices,
                )
            )
        return tuple(out)

    def variant(self, name: str) -> VariantInfo:
        """The variant called ``name``; ``UsageError`` naming the others if there is none."""
        for v in self.variants:
            if v.name == name:
                return v
        known = ", ".join(v.name for v in self.variants)
        raise UsageError(f"machine {self.name} has no variant {name!r} (it has: {known})")

    @cached_property
    def fingerprint(self) -> str:
        """A digest of the resolved machine: equal for equal contents, whatever the name or path."""
        return hashlib.sha256(self.toml.encode()).hexdigest()[:16]

    def machine(self, seed: int = 0, **kwargs: Any) -> Machine:
        """A :class:`~cellsim.Machine` of this spec, built with its :attr:`run` options
        (``kwargs`` as ``Machine`` takes them)."""
        from .machine import Machine

        return Machine(self, seed=seed, **kwargs)

    def __str__(self) -> str:
        return self.source + (f" with {' '.join(self.overrides)}" if self.overrides else "")

    def __getstate__(self) -> dict[str, Any]:
        # only the fields travel (to a worker, a cache): the rest is derived again there
        return {"source": self.source, "overrides": self.overrides, "run": self.run}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "source", state["source"])
        object.__setattr__(self, "overrides", tuple(state["overrides"]))
        object.__setattr__(self, "run", state.get("run", RunOptions()))


def variants_markdown(machines: Iterable[str] | None = None) -> str:
    """The variants of the shipped machines as a Markdown table (docs/model.md's, generated
    from the machine files: ``python -m cellsim.spec``): one row per choice, with its status, its
    source or the statements it explains, its parameters and the machines that run it."""
    from . import _engine
    from .published import plain

    names = list(machines) if machines is not None else list(_engine.machine_names())
    specs = [MachineSpec.of(n) for n in names]
    rows = [
        "| variant: setting = choice | status | source, or the visible statements it explains | parameters "
        "| what it does | default on |",
        "|---|---|---|---|---|---|",
    ]
    for v in specs[0].variants:
        for c in v.choices:
            on = [s.name for s in specs if any(x.name == v.name and x.value == c.name for x in s.variants)]
            basis = plain(c.source) if c.status == "sourced" else ", ".join(f"`{e}`" for e in c.explains)
            params = ", ".join(f"`{p}`" for p in c.params) or "-"
            cells = (
                f"{v.name}: `{v.key} = {c.name}`",
                c.status,
                basis,
                params,
                plain(" ".join(c.what.split())),
                ", ".join(on) or "-",
            )
            rows.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(rows) + "\n"


MachineLike = str | MachineSpec
"""What a function that builds machines takes: a name, a TOML path or a :class:`MachineSpec`."""
