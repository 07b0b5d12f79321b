"""What each experiment reproduces, as data: ``data/experiments.toml``.

Each entry gives an experiment's title, the paper and figure, the machine the
paper measured and a description; the experiment's module holds its code and
its options. The file's order is the registry's (the papers' figures in
turn). Checked when read: every key known, every value of its type, every
paper one of the seeds.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["DATA", "Entry", "catalog"]

DATA = Path(__file__).resolve().parent.parent / "data" / "experiments.toml"
_PAPERS = ("000", "001", "002", "003", "004")


@dataclass(frozen=True)
class Entry:
    """One experiment's entry (the fields of :class:`cellsim.experiments.Experiment` that are data)."""

    title: str
    paper: str
    figure: str
    machine: str
    description: str
    measured_on: tuple[str, ...] = ()


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
    unknown = sorted(set(fields) - required - {"measured_on"})
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
    return Entry(**{**fields, "measured_on": tuple(measured_on)})
