"""The experiments: each reproduces one published measurement.

An experiment is a module named after it (``dma_latency`` is ``dma-latency``)
that defines

``run(*, OPTION=..., **settings) -> list[dict]``
    one JSON-serialisable dict per measured point; ``settings`` are the
    :class:`RunSettings` every experiment takes (``machine``, ``overrides``,
    ``seed``, ``native``, ``progress``, ``time_limit_ns``, ``exact_reference``,
    ``trace``, ``check_dma``), which ``EXPERIMENT.settings(settings)`` turns into a
    :class:`Setup` with the experiment's defaults: its ``spec`` carries the
    run's options, so every machine is built by ``spec.machine(seed, ...)``;
    ``progress(done, total)`` is called after each point (``done`` and
    ``total`` count points, or estimated work where points cost unequally:
    then they are :class:`~cellsim.sweep.Work`);
``plot(records, path)``
    draws the records like the paper's figure, with the published values
    beside them, into an image file;
``compare(records) -> list[dict]``
    one row per published value that the records cover (see
    :func:`cellsim.experiments._common.compare_row`);
``tables(records)`` (optional)
    how ``cellsim run`` prints the records;

and declares them with ``EXPERIMENT = Experiment.of_module(__name__, ...)``;
its code says its name as ``EXPERIMENT.name``.

``options`` declares the experiment's own keyword options once (name, type,
default, unit, help): the CLI builds its command-line flags from it, ``run``'s
keyword-only parameters must be exactly these names with the "not given"
default of their type, but for the options of a set that several experiments
share, which travel in ``**settings`` (typed by the set's extension of
:class:`RunSettings`, read by the set's helper; checked when the experiment
registers), ``run``'s
docstring lists them, and the options reference ``docs/experiments.md`` is
generated from it (:func:`options_reference`; ``python -m
cellsim.experiments > docs/experiments.md``). What an experiment reproduces
(title, paper, figure, machine, description) is data: its entry in
``data/experiments.toml``, whose order is the registry's and whose keys are
the experiments' one list of names. To add an experiment, write the module
and add its entry.

>>> from cellsim import experiments
>>> [e.name for e in experiments.all_experiments()][:5]
['dma-latency', 'dma-batch', 'hotspot', 'collective', 'latency-hist']
"""

from __future__ import annotations

import importlib
import inspect
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal, NamedTuple, TypedDict

from ..exceptions import UsageError
from ..spec import MachineSpec, RunOptions
from ..trace import Capture
from ._catalog import ValidateProfile

__all__ = [
    "Experiment",
    "Option",
    "ProgressFn",
    "RunSettings",
    "Setup",
    "Table",
    "all_experiments",
    "get",
    "names",
    "options_reference",
    "run_settings",
]

ProgressFn = Callable[[int, int], None]
"""``progress(done, total)``: called after each measured point; ``done`` and
``total`` count points, or :class:`~cellsim.sweep.Work` (estimated work, an
``int``) in a run whose points cost unequally (the mapping study's panels)."""


class RunSettings(TypedDict, total=False):
    """The keywords every experiment's ``run`` takes besides its own options
    (``run(**settings, OPTION=...)``); see :class:`Setup` for their meaning."""

    machine: str | MachineSpec
    overrides: Sequence[str]
    seed: int
    native: bool
    progress: ProgressFn | None
    time_limit_ns: float | None
    exact_reference: bool
    trace: Capture | None
    check_dma: bool


class Setup(NamedTuple):
    """A run's settings, each given or the experiment's default."""

    spec: MachineSpec
    """The machine: a name or TOML path and overrides (default: the machine the paper measured),
    with the run's options (:class:`~cellsim.spec.RunOptions`: time limit, exact reference,
    trace) that ``spec.machine(seed, ...)``, the one way an experiment builds a machine, applies."""
    seed: int
    """Seed of the machines, and of any seeded placement (placement ``k`` uses ``seed + k``)."""
    native: bool
    """Run the native (Rust) programs where the experiment has them, else their Python twins."""
    progress: ProgressFn | None
    """``progress(done, total)`` after each measured point."""


def run_settings(run: RunOptions) -> RunSettings:
    """A run's options as settings of another ``run`` call (an experiment's panels)."""
    return {
        "time_limit_ns": run.time_limit_ns,
        "exact_reference": run.exact_reference,
        "trace": run.trace,
        "check_dma": run.check_dma,
    }


_SETTINGS_DOC = {
    "overrides": "machine settings to change, ``section.key=value`` (a model variant, a what-if), "
    "applied to every machine the experiment runs",
    "seed": "seed of the machines, and of any seeded placement (placement ``k`` uses ``seed + k``)",
    "native": "run the native (Rust) programs where the experiment has them, else their Python twins",
    "progress": "``progress(done, total)`` after each measured point (points, or "
    ":class:`~cellsim.sweep.Work` where points cost unequally)",
    "time_limit_ns": "every machine's simulated-time limit is at most this (``--time-limit``)",
    "exact_reference": "simulate every bus transfer event by event, without the fast-forward "
    "(``--exact-reference``; identical results, slower)",
    "trace": "a :class:`cellsim.trace.Capture`: trace the first machine built (``--trace``)",
    "check_dma": "stop a program at a DMA race, in every machine of the run (``--check-dma``)",
}


@dataclass(frozen=True)
class Option:
    """A keyword option of an experiment's ``run``.

    ``type`` is ``choice`` (several of ``choices`` may be given), ``ints``
    (a list of integers, ``8,16,128`` on the command line), ``int`` or
    ``float`` (a positive number), ``str`` (a string) or ``flag`` (on/off).
    ``run`` takes the type's "not given" value (``()`` or ``None``) to mean
    ``default``: the value the experiment then uses, or, when that depends on
    the run (the machine, other options), ``None`` with ``default_note``
    saying how it is chosen. ``help`` says what the option is; the unit and
    the default are added to it from ``unit`` and ``default`` wherever the
    option is shown (``--help``, ``run``'s docstring, ``docs/experiments.md``).
    """

    name: str
    type: Literal["choice", "ints", "int", "float", "str", "flag"]
    help: str
    choices: Sequence[str] = ()
    flag: str = ""
    """The command-line flag (default ``--<name>``)."""
    default: Any = None
    """What ``run`` uses when the option is not given (``None``: see ``default_note``)."""
    default_note: str = ""
    """How the default is chosen when it is no single value, or a remark on it."""
    unit: str = ""
    """The unit of the option's numbers (``B``, ``MB``, ``SPU cycles``...)."""

    @property
    def cli_flag(self) -> str:
        return self.flag or f"--{self.name.replace('_', '-')}"

    @property
    def not_given(self) -> Any:
        """What ``run`` takes when the option is not given (its experiment then
        uses ``default``); ``str`` options may name their default directly."""
        return {"choice": (), "ints": (), "int": None, "float": None, "flag": False}.get(self.type)

    @property
    def kind(self) -> str:
        """What the option takes, for the reference."""
        if self.type == "choice":
            return f"one or more of {', '.join(self.choices)} (repeat the flag)"
        return {
            "ints": "integers, comma-separated",
            "int": "a positive integer",
            "float": "a positive number",
            "str": "a string",
            "flag": "on/off",
        }[self.type]

    @property
    def default_text(self) -> str:
        """The default as a reader wants it: ``all``, ``8, 16, ..., 16384``, a note."""
        parts = [] if self.default is None else [_show_value(self.default, self.choices)]
        if self.default_note:
            parts.append(self.default_note)
        return "; ".join(parts)

    @property
    def described(self) -> str:
        """``help`` with the unit and the default: what ``--help`` and the docs show."""
        extra = [self.unit] if self.unit else []
        if self.default_text:
            extra.append(f"default: {self.default_text}")
        return f"{self.help} ({'; '.join(extra)})" if extra else self.help


def _show_value(value: Any, choices: Sequence[str]) -> str:
    """A default value in words: every choice is ``all`` (``both`` of two),
    a doubling sequence is ``8, 16, ..., 16384``."""
    if isinstance(value, bool) or not isinstance(value, tuple | list):
        return str(value)
    vals = list(value)
    if choices and sorted(vals) == sorted(choices):
        return "both" if len(vals) == 2 else "all"
    doubling = len(vals) >= 6 and all(isinstance(v, int) and v > 0 for v in vals)
    if doubling and all(b == 2 * a for a, b in pairwise(vals)):
        return f"{vals[0]}, {vals[1]}, ..., {vals[-1]}"
    return ", ".join(map(str, vals))


@dataclass(frozen=True)
class Experiment:
    """One experiment (see the module docstring)."""

    name: str
    title: str
    paper: str
    figure: str
    description: str
    run: Callable[..., list[dict[str, Any]]]
    plot: Callable[[Sequence[dict[str, Any]], Any], None]
    compare: Callable[[Sequence[dict[str, Any]]], list[dict[str, Any]]]
    options: Sequence[Option] = field(default_factory=tuple)
    tables: Callable[[Sequence[dict[str, Any]]], list[Table]] | None = None
    """How ``cellsim run`` prints the records, if not one row per record:
    ``tables(records)`` returns :class:`Table` values."""
    machine: str = "qs20"
    """The machine the paper measured: what ``cellsim run`` and ``cellsim
    reproduce`` use when no ``--machine`` is given."""
    measured_on: Sequence[str] = ()
    """Every machine the paper measured, when it is more than ``machine``: on
    the others its published values are a reference, not a check."""
    validate: ValidateProfile | None = None
    """How ``cellsim validate`` runs it at its smallest meaningful sizes (``None``: it
    has no visible published value to judge)."""

    def measured(self, machine: str | MachineSpec) -> bool:
        """Whether the paper measured ``machine`` (its values then judge a run): one of its
        shipped machines, whatever the overrides (a variant of the machine is still judged)."""
        source = machine.source if isinstance(machine, MachineSpec) else machine
        return source == self.machine or source in self.measured_on

    @classmethod
    def of_module(cls, module: str, **fields: Any) -> Experiment:
        """The experiment module ``module`` (its ``__name__``) declares: its
        entry in ``data/experiments.toml`` under the name the module is named
        after (title, paper, figure, machine, description), the other fields
        given (``options``) and the module's ``run``, ``plot``, ``compare`` and
        ``tables`` (if it has one) where ``fields`` does not give them (an
        experiment described by shared code: :meth:`Links.experiment
        <cellsim.experiments._links.Links.experiment>`)."""
        from ._catalog import catalog, name_of

        mod = sys.modules[module]
        name = name_of(module)
        parts = {
            part: getattr(mod, part) for part in ("run", "plot", "compare", "tables") if hasattr(mod, part)
        }
        return cls(name=name, **vars(catalog()[name]), **{**parts, **fields})

    def __post_init__(self) -> None:
        # run()'s docstring is its summary; the arguments are written from the declaration
        if self.run.__doc__ is not None and "Args:" not in self.run.__doc__:
            self.run.__doc__ = self.run.__doc__.rstrip() + "\n\n" + self._args_doc()

    def _args_doc(self) -> str:
        lines = [
            "    Args:",
            f"        machine: machine name, TOML path or MachineSpec (default ``{self.machine}``).",
        ]
        lines += [f"        {name}: {text}." for name, text in _SETTINGS_DOC.items()]
        lines += [f"        {o.name}: {o.described}." for o in self.options]
        return "\n".join(lines) + "\n    "

    def settings(self, given: RunSettings) -> Setup:
        """The :class:`Setup` of a call ``run(**given, ...)``: each setting given, or its default."""
        unknown = sorted(set(given) - set(RunSettings.__annotations__) - {o.name for o in self.options})
        if unknown:
            raise TypeError(f"{self.name} run() got an unexpected keyword argument {unknown[0]!r}")
        spec = MachineSpec.of(given.get("machine") or self.machine, given.get("overrides", ()))
        # a spec given with run options keeps those the settings do not name
        run = RunOptions(
            time_limit_ns=given.get("time_limit_ns", spec.run.time_limit_ns),
            exact_reference=given.get("exact_reference", spec.run.exact_reference),
            trace=given.get("trace", spec.run.trace),
            check_dma=given.get("check_dma", spec.run.check_dma),
        )
        return Setup(
            spec=spec.running(run),
            seed=given.get("seed", 0),
            native=given.get("native", True),
            progress=given.get("progress"),
        )

    def check_declaration(self) -> None:
        """Raises ``TypeError`` unless ``run`` takes exactly the declared
        options as keywords, each defaulting to its type's "not given" value,
        and the :class:`RunSettings` as ``**settings``."""
        params = inspect.signature(self.run).parameters
        keywords = {n: p.default for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
        others = [n for n, p in params.items() if p.kind not in (p.KEYWORD_ONLY, p.VAR_KEYWORD)]
        declared = {o.name: o for o in self.options}
        star = [n for n, p in params.items() if p.kind is p.VAR_KEYWORD]
        if others or not star:
            raise TypeError(f"experiment {self.name}: run() takes its options and **settings, no other")
        # options carried in **settings (a TypedDict extending RunSettings) take their default there
        carried = _typed_dict_keys(self.run, star[0]) - set(RunSettings.__annotations__)
        if carried - set(declared):
            undeclared = sorted(carried - set(declared))
            raise TypeError(f"experiment {self.name}: run() **settings keys {undeclared} are not its options")
        declared = {n: o for n, o in declared.items() if n not in carried}
        if set(keywords) != set(declared):
            raise TypeError(
                f"experiment {self.name}: run() keywords {sorted(keywords)} are not its declared "
                f"options {sorted(declared)}"
            )
        for name, opt in declared.items():
            if opt.type != "str" and keywords[name] != opt.not_given:
                raise TypeError(
                    f"experiment {self.name}: run(..., {name}={keywords[name]!r}): a {opt.type} option "
                    f"defaults to {opt.not_given!r} (the experiment's own default is its declared one)"
                )


def _typed_dict_keys(fn: Callable[..., Any], param: str) -> set[str]:
    """The keys of the TypedDict that ``fn``'s ``**param: Unpack[...]`` takes."""
    hint = typing.get_type_hints(fn, include_extras=True)[param]
    (td,) = typing.get_args(hint)
    return set(td.__required_keys__ | td.__optional_keys__)


@dataclass(frozen=True)
class Table:
    """A table of an experiment's records for the command line."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[str]]


_REGISTRY: dict[str, Experiment] = {}


def _load() -> dict[str, Experiment]:
    if not _REGISTRY:
        from ._catalog import catalog, module_of

        for name in catalog():
            exp = importlib.import_module(module_of(name)).EXPERIMENT
            exp.check_declaration()
            _REGISTRY[exp.name] = exp
    return _REGISTRY


def all_experiments() -> list[Experiment]:
    """Every registered experiment, in the order of the papers' figures."""
    return list(_load().values())


def names() -> list[str]:
    """Names of the registered experiments."""
    return list(_load())


def get(name: str) -> Experiment:
    """The experiment called ``name``; ``UsageError`` if there is none."""
    reg = _load()
    if name not in reg:
        raise UsageError(f"unknown experiment {name!r}: known experiments are {', '.join(reg)}")
    return reg[name]


def options_reference() -> str:
    """``docs/experiments.md``: every experiment's options, from their declarations."""
    lines = [
        "# Experiment options",
        "",
        "<!-- Generated from each experiment's declared options: python -m cellsim.experiments > "
        "docs/experiments.md -->",
        "",
        "Every experiment also takes the common options of `cellsim run NAME` (`--machine`, `--seed`, "
        "`--json`, `--plot`, `--csv`, `--trace`, `--python`, `--exact-reference`, `--time-limit`, "
        "`--wall-limit`; see `cellsim run NAME --help`). In Python, each option is a keyword of the "
        "experiment's `run()` (`cellsim.experiments.get(NAME).run(..., OPTION=...)`).",
    ]
    for exp in all_experiments():
        lines += ["", f"## {exp.name}", "", exp.title, ""]
        if not exp.options:
            lines.append("No options of its own.")
            continue
        lines += ["| flag | `run()` keyword | takes | unit | default | what |", "|---|---|---|---|---|---|"]
        for o in exp.options:
            cells = (o.unit, o.default_text, o.help)
            what = " | ".join(c.replace("|", "\\|") for c in cells)
            lines.append(f"| `{o.cli_flag}` | `{o.name}` | {o.kind} | {what} |")
    return "\n".join(lines) + "\n"
