"""Helpers for the MPI tests: run a function as N ranks and collect what each returned."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from cellsim.mpi import MpirunResult, mpirun

PROTOCOLS = ("direct", "kumar")


def run(fn: Callable[[], Any], n: int, protocol: str, **kw: Any) -> MpirunResult:
    """Runs ``fn`` as ``n`` ranks (output captured) and returns the result."""
    out = io.StringIO()
    kw.setdefault("stdout", out)
    kw.setdefault("stderr", out)
    return mpirun(fn, n, protocol=protocol, **kw)


def all_true(res: MpirunResult) -> None:
    """Every rank returned a dict of checks that all hold."""
    bad = [(r, k) for r, v in enumerate(res.values) for k, ok in v.items() if not ok]
    assert not bad, bad
