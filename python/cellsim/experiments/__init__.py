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

``options`` describes the experiment's own keyword options, from which the
CLI builds its command-line flags. To add an experiment, write the module
and append its name to ``_MODULES``.

>>> from cellsim import experiments
>>> [e.name for e in experiments.all_experiments()][:5]
['dma-latency', 'dma-batch', 'hotspot', 'collective', 'latency-hist']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..exceptions import UsageError

__all__ = ["Experiment", "Option", "Table", "all_experiments", "get", "names"]


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
