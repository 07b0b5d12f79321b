"""What each experiment reproduces, as data: ``data/experiments.toml``.

Each entry gives an experiment's title, the paper and figure, the machine the
paper measured and a description; the experiment's module holds its code and
its options. The entry's name is the experiment's one name: its module is
named after it (:func:`module_of`, :func:`name_of`). The file's order is the
registry's (the papers' figures in turn). Checked when read: every key known,
every value of its type, every paper one of the seeds.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["DATA", "Entry", "ValidateProfile", "catalog", "module_of", "name_of"]

DATA = Path(__file__).resolve().parent.parent / "data" / "experiments.toml"
_PAPERS = ("000", "001", "002", "003", "004")


@dataclass(frozen=True)
class ValidateProfile:
    """How ``cellsim validate`` runs an experiment at its smallest meaningful sizes."""

    options: dict[str, Any]
    """The experiment's options (keywords of its ``run``)."""
    why: str
    """Why these sizes still measure what the paper measured."""
    shard_option: str | None = None
    """An option the run is split over (points of the sweep), with :attr:`shards` its values."""
    shards: tuple[Any, ...] = ()
    seconds: tuple[float, ...] = (1.0,)
    """Host seconds of each point (each shard) at these sizes on one core, as measured: what
    orders the sweep (longest first) and weighs its progress."""
    full_seconds: tuple[float, ...] = (1.0,)
    """The same at ``cellsim reproduce``'s sizes (``cellsim validate --full``)."""

    def cost(self, shard: int, *, full: bool = False) -> float:
        """The estimated host seconds of point ``shard``."""
        s = self.full_seconds if full else self.seconds
        return s[shard] if len(s) > 1 else s[0]


@dataclass(frozen=True)
class Entry:
    """One experiment's entry (the fields of :class:`cellsim.experiments.Experiment` that are data)."""

    title: str
    paper: str
    figure: str
    machine: str
    description: str
    measured_on: tuple[str, ...] = ()
    validate: ValidateProfile | None = None
    """How ``cellsim validate`` runs it (``None``: it has no visible value to judge)."""


def module_of(name: str) -> str:
    """The module of experiment ``name`` in this package: ``dma-latency`` is ``dma_latency``."""
    return f"{__package__}.{name.replace('-', '_')}"


def name_of(module: str) -> str:
    """The experiment that ``module`` (its ``__name__``) implements: :func:`module_of` reversed."""
    return module.rpartition(".")[2].replace("_", "-")


@cache
def catalog() -> dict[str, Entry]:
    """Every experiment's entry by name, in the file's order."""
    with DATA.open("rb") as f:
        raw = tomllib.load(f)
    return {name: _entry(name, fields) for name, fields in raw.items()}


def _entry(name: str, fields: Any) -> Entry:
    where = f"{DATA.name} [{name}]"
    if not isinstance(fields, dict):
        raise ValueError(f"{where}: an experiment is a table")
    required = {"title", "paper", "figure", "machine", "description"}
    unknown = sorted(set(fields) - required - {"measured_on", "validate"})
    missing = sorted(required - set(fields))
    if unknown or missing:
        raise ValueError(f"{where}: unknown keys {unknown}, missing keys {missing}")
    for key in required:
        if not isinstance(fields[key], str) or not fields[key]:
            raise ValueError(f"{where}: {key} must be a non-empty string")
    if fields["paper"] not in _PAPERS:
        raise ValueError(f"{where}: paper {fields['paper']!r} is not one of {', '.join(_PAPERS)}")
    measured_on = fields.get("measured_on", [])
    if not isinstance(measured_on, list) or not all(isinstance(m, str) for m in measured_on):
        raise ValueError(f"{where}: measured_on must be a list of machine names")
    return Entry(**{**fields, "measured_on": tuple(measured_on), "validate": _profile(where, fields)})


def _profile(where: str, fields: dict[str, Any]) -> ValidateProfile | None:
    raw = fields.get("validate")
    if raw is None:
        return None
    unknown = sorted(set(raw) - {"options", "why", "shards", "seconds", "full_seconds"})
    if unknown or not isinstance(raw.get("options"), dict) or not isinstance(raw.get("why"), str):
        raise ValueError(
            f"{where}.validate: a table of options, why (and shards, seconds, full_seconds);"
            f" unknown keys {unknown}"
        )
    shards = raw.get("shards", {})
    if not isinstance(shards, dict) or len(shards) > 1:
        raise ValueError(f"{where}.validate: shards is one option and the list of its values")
    option, values = next(iter(shards.items()), (None, []))
    seconds = {k: _seconds(where, k, raw.get(k, 1.0), len(values)) for k in ("seconds", "full_seconds")}
    return ValidateProfile(
        dict(raw["options"]), " ".join(raw["why"].split()), option, tuple(values), **seconds
    )


def _seconds(where: str, key: str, raw: Any, shards: int) -> tuple[float, ...]:
    """A profile's measured seconds: one number, or one per shard."""
    values = raw if isinstance(raw, list) else [raw]
    if not all(isinstance(v, int | float) and v > 0 for v in values) or len(values) not in {
        1,
        max(shards, 1),
    }:
        raise ValueError(
            f"{where}.validate.{key}: positive seconds, one number or one per shard, not {raw!r}"
        )
    return tuple(float(v) for v in values)
