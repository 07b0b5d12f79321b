"""Ctrl-C on the command line: exit status 130, one line on stderr, no traceback
(from a sweep's worker pool or from an MPI rank)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SPIN = """\
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
a = np.zeros(1024)
while True:
    if comm.Get_rank() == 0:
        comm.Send(a, dest=1)
    else:
        comm.Recv(a, source=0)
"""


def _interrupt(args: list[str], cwd: Path, ready: float) -> subprocess.CompletedProcess[str]:
    """Runs ``cellsim ARGS`` in its own process group, sends Ctrl-C's SIGINT to
    the whole group (as a terminal does) after ``ready`` seconds, and returns
    what it did."""
    p = subprocess.Popen(
        [sys.executable, "-m", "cellsim.tools.cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        time.sleep(ready)
        assert p.poll() is None, p.communicate()
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def test_ctrl_c_in_a_parallel_sweep_exits_130_without_traceback(tmp_path: Path) -> None:
    r = _interrupt(
        [
            "run",
            "mapping",
            "--machine",
            "qs20",
            "--transmissions",
            "200",
            "--runs",
            "1",
            "--workers",
            "2",
            "--out",
            "sweep",
        ],
        tmp_path,
        ready=6.0,
    )
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr and "Exception in thread" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted: "), r.stderr
    assert "--resume" in lines[0]


def test_ctrl_c_in_mpirun_is_an_interrupt_not_a_rank_failure(tmp_path: Path) -> None:
    (tmp_path / "spin.py").write_text(SPIN)
    r = _interrupt(["mpirun", "-n", "2", "spin.py"], tmp_path, ready=5.0)
    assert r.returncode == 130, r.stderr
    assert "KeyboardInterrupt" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert [ln for ln in r.stderr.splitlines() if ln.strip()] == ["interrupted (Ctrl-C)"]
