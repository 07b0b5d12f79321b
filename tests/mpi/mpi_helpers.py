"""Helpers for the MPI tests: run a function as N ranks and collect what each returned; run
``cellsim mpirun`` on a script."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from cellsim.mpi import MpirunResult, mpirun
from cli_helpers import invoke

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


def mpirun_command(*args: str) -> Result:
    """``cellsim mpirun ARGS``: the command line, in this process (not :func:`cellsim.mpi.mpirun`)."""
    return invoke("mpirun", *args)


def script(tmp_path: Path, text: str) -> str:
    """``text`` written as ``prog.py`` in ``tmp_path``; its path."""
    p = tmp_path / "prog.py"
    p.write_text(text)
    return str(p)
