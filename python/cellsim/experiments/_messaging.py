"""Options shared by Keller and Varbanescu 2010's experiments (``ring``, ``mapping``) and ``cellsim map``."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict, cast

from ..exceptions import UsageError
from ..messaging.simulate import MODES, Params, Variation, check_contexts
from . import Option, RunSettings

__all__ = [
    "LIBRARY_OPTIONS",
    "SWEEP_OPTIONS",
    "VARIATION_OPTIONS",
    "LibrarySettings",
    "MessagingSettings",
    "VariationFlags",
    "default_sweep_path",
    "library_options",
    "one_contexts",
    "one_mode",
    "variation_flags",
    "variation_from",
]

LIBRARY_OPTIONS = (
    Option("mode", "str", "placement: default (drawn per run, as libspe) or pinned", default="pinned"),
    Option(
        "contexts",
        "str",
        "where the SPE contexts land: physical (context i on SPE i), local (chip 0 first, seeded "
        "order) or spread (any SPE of the machine, seeded order)",
        default_note="physical when pinned on one chip, else spread",
    ),
    Option(
        "packet",
        "int",
        "packet size (Keller and Varbanescu: 512, 1024, 2048)",
        default=Params.packet,
        unit="B",
    ),
    Option("transmissions", "int", "sends per SPE (Keller and Varbanescu: 10^7)"),
    Option("unidirectional", "flag", "a unidirectional ring (Keller and Varbanescu, Figure 5)"),
    Option("buffers", "int", "buffers per neighbour and direction", default=Params.nbuf),
    Option(
        "poll_cycles", "int", "time between polls when idle", default=Params.poll_cycles, unit="SPU cycles"
    ),
)

VARIATION_OPTIONS = (
    Option("quiet", "flag", "switch every run-to-run variation mechanism off"),
    Option("no_skew", "flag", "no start-time skew between SPEs"),
    Option("no_phase", "flag", "no arbitration-phase offsets"),
    Option("no_os_noise", "flag", "no background traffic of the PPE's operating system"),
    Option("no_hypervisor", "flag", "no background traffic of the PS3 hypervisor's SPE"),
    Option(
        "visible",
        "ints",
        "physical SPEs Linux sees",
        default_note="the machine file's; ps3: 0, 1, 2, 3, 4, 5",
    ),
    Option(
        "hypervisor_spe", "int", "physical SPE of the PS3 hypervisor", default_note="the first hidden one"
    ),
)


def library_options(default: int | None = None, default_note: str = "") -> tuple[Option, ...]:
    """:data:`LIBRARY_OPTIONS` with an experiment's default number of transmissions."""
    return tuple(
        replace(o, default=default, default_note=default_note) if o.name == "transmissions" else o
        for o in LIBRARY_OPTIONS
    )


SWEEP_OPTIONS = (
    Option("workers", "int", "local worker processes", default_note="all cores"),
    Option("cluster", "str", "address of a Dask scheduler to run the sweep on (tcp://host:8786)"),
    Option("out", "str", "Parquet dataset the finished points are appended to", default_note="a cache file"),
    Option("resume", "flag", "keep the points already in the results file and run only the rest"),
)


def one_mode(mode: Any) -> str:
    """The placement mode (``pinned`` if not given)."""
    if mode in (None, "", ()):
        return "pinned"
    if isinstance(mode, (list, tuple)):
        if len(mode) != 1:
            raise UsageError(f"give one mode, not {list(mode)}")
        mode = mode[0]
    if mode not in MODES:
        raise UsageError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    return str(mode)


def one_contexts(contexts: Any) -> str | None:
    """The context placement asked for (``None``: the mode's default)."""
    if contexts in (None, "", ()):
        return None
    return check_contexts(str(contexts))


class VariationFlags(TypedDict, total=False):
    """The flags of :data:`VARIATION_OPTIONS`: which run-to-run variation mechanisms are on."""

    quiet: bool
    no_skew: bool
    no_phase: bool
    no_os_noise: bool
    no_hypervisor: bool
    visible: Iterable[int]
    hypervisor_spe: int | None


class LibrarySettings(TypedDict, total=False):
    """The options of :data:`LIBRARY_OPTIONS`: how the message-passing library runs
    (``None``: the option's default)."""

    mode: str | None
    contexts: str | None
    packet: int | None
    transmissions: int | None
    unidirectional: bool
    buffers: int | None
    poll_cycles: int | None


class MessagingSettings(RunSettings, LibrarySettings, VariationFlags, total=False):
    """The ``**settings`` of ``ring`` and ``mapping``: a run's settings, the library's
    options and the variation flags."""


def variation_flags(settings: MessagingSettings) -> VariationFlags:
    """The variation flags among ``settings``."""
    return cast(VariationFlags, {k: v for k, v in settings.items() if k in VariationFlags.__annotations__})


def variation_from(flags: VariationFlags) -> Variation:
    """The variation mechanisms the flags leave on."""
    v = Variation.off() if flags.get("quiet") else Variation()
    d = v.as_dict()
    if flags.get("no_skew"):
        d["skew_ns"] = 0.0
    if flags.get("no_phase"):
        d["phase"] = False
    if flags.get("no_os_noise"):
        d["os_noise_ns"] = 0.0
    if flags.get("no_hypervisor"):
        d["hypervisor_ns"] = 0.0
    vis = tuple(int(x) for x in flags.get("visible", ()))
    if vis:
        if len(set(vis)) != len(vis) or any(not 0 <= x < 8 for x in vis):
            raise UsageError(f"visible SPEs {list(vis)} must be distinct physical SPEs 0-7")
        d["visible"] = tuple(sorted(vis))
    else:
        d["visible"] = None
    hypervisor_spe = flags.get("hypervisor_spe")
    if hypervisor_spe is not None:
        d["hypervisor_spe"] = int(hypervisor_spe)
    return Variation(**d)


def default_sweep_path(name: str, fingerprint: str) -> Path:
    """Where a sweep's results go when no ``--out`` is given:
    ``$CELLSIM_SWEEPS`` or ``~/.cache/cellsim/sweeps``, one file per settings."""
    base = os.environ.get("CELLSIM_SWEEPS") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cellsim", "sweeps"
    )
    return Path(base) / f"{name}-{fingerprint}.parquet"
