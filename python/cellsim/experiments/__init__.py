"""The experiments: each reproduces one published measurement.

An experiment is a module that defines ``EXPERIMENT``, an :class:`Experiment`
with

``run(machine="qs20", seed=0, native=True, progress=None, **options) -> list[dict]``
    one JSON-serialisable dict per measured point; ``progress(done, total)``
    is called after each point;
``plot(records, path)``
    draws the records like the paper's figure, with the published values
    beside them, into an image file;
``compare(records) -> list[dict]``
    one row per published value that the records cover (see
    :func:`cellsim.experiments._common.compare_row`).

``options`` declares the experiment's own keyword options once: the CLI
builds its command-line flags from it, ``run``'s keyword-only parameters
must be exactly these names with the "not given" default of their type
(checked when the experiment registers), and the options reference
``docs/experiments.md`` is generated from it (:func:`options_reference`;
``python -m cellsim.experiments > docs/experiments.md``). To add an
experiment, write the module and append its name to ``_MODULES``.

>>> from cellsim import experiments
>>> [e.name for e in experiments.all_experiments()][:5]
['dma-latency', 'dma-batch', 'hotspot', 'collective', 'latency-hist']
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..exceptions import UsageError

__all__ = ["Experiment", "Option", "Table", "all_experiments", "get", "names", "options_reference"]


@dataclass(frozen=True)
class Option:
    """A keyword option of an experiment's ``run``.

    ``type`` is ``choice`` (several of ``choices`` may be given), ``ints``
    (a list of integers, ``8,16,128`` on the command line), ``int`` or
    ``float`` (a positive number), ``str`` (a string) or ``flag`` (on/off).
    The default (``None`` / empty) means the experiment's own default.
    """

    name: str
    type: Literal["choice", "ints", "int", "float", "str", "flag"]
    help: str
    choices: Sequence[str] = ()
    flag: str = ""
    """The command-line flag (default ``--<name>``)."""

    @property
    def cli_flag(self) -> str:
        return self.flag or f"--{self.name.replace('_', '-')}"

    @property
    def not_given(self) -> Any:
        """What ``run`` takes when the option is not given (its experiment then
        uses its own default); ``str`` options may name a default of their own."""
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

    def measured(self, machine: str) -> bool:
        """Whether the paper measured ``machine`` (its values then judge a run)."""
        return machine == self.machine or machine in self.measured_on

    def check_declaration(self) -> None:
        """Raises ``TypeError`` unless ``run`` takes ``machine, seed, native,
        progress`` and then exactly the declared options as keywords, each
        defaulting to its type's "not given" value."""
        params = inspect.signature(self.run).parameters
        keywords = {n: p.default for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
        declared = {o.name: o for o in self.options}
        if set(keywords) != set(declared):
            raise TypeError(
                f"experiment {self.name}: run() keywords {sorted(keywords)} are not its declared "
                f"options {sorted(declared)}"
            )
        for name, opt in declared.items():
            if opt.type != "str" and keywords[name] != opt.not_given:
                raise TypeError(
                    f"experiment {self.name}: run(..., {name}={keywords[name]!r}): a {opt.type} option "
                    f"defaults to {opt.not_given!r} (the experiment's own default is in its help)"
                )


@dataclass(frozen=True)
class Table:
    """A table of an experiment's records for the command line."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[str]]


_MODULES = (
    "dma_latency",
    "dma_batch",
    "hotspot",
    "collective",
    "latency_hist",
    "ppe_cache",
    "ppe_mem",
    "spe_mem",
    "spu_ls",
    "spe_spe",
    "couples",
    "cycle",
    "ppe_spe_mem",
    "cross_chip",
    "buffering",
    "ring",
    "mapping",
    "mpi_pingpong",
    "mpi_matvec",
    "mpi_collectives",
)
_REGISTRY: dict[str, Experiment] = {}


def _load() -> dict[str, Experiment]:
    if not _REGISTRY:
        for mod in _MODULES:
            exp = importlib.import_module(f"{__name__}.{mod}").EXPERIMENT
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
        lines += ["| flag | `run()` keyword | takes | what |", "|---|---|---|---|"]
        for o in exp.options:
            what = o.help.replace("|", "\\|")
            lines.append(f"| `{o.cli_flag}` | `{o.name}` | {o.kind} | {what} |")
    return "\n".join(lines) + "\n"
