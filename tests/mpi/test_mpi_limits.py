"""``cellsim mpirun`` against ranks that never call cellsim: ``--wall-limit``
stops a rank spinning in pure Python and says which rank was running its own
code; Ctrl-C stops it too; ``os.abort()`` in one rank is that rank's end, named as
mpiexec names it; ``Machine.run(wall_limit_s=...)`` stops a Python program's loop
that makes no SPU call."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from mpi_helpers import mpirun_command, script

from cellsim import Machine
from cellsim.exceptions import RunawayError


def test_wall_limit_stops_a_rank_spinning_in_pure_python(tmp_path: Path) -> None:
    p = script(
        tmp_path,
        "import numpy as np\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\n"
        "if c.rank == 1:\n    while True:\n        pass\nc.Recv(np.zeros(1), source=1, tag=3)\n",
    )
    r = mpirun_command("-n", "2", "--wall-limit", "0.5", p)
    assert r.exit_code == 1
    assert "host-time limit reached" in r.stderr
    assert "rank 1 was running its own Python code" in r.stderr


def test_os_abort_in_one_rank_names_the_rank(tmp_path: Path) -> None:
    p = script(
        tmp_path,
        "import os\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\nif c.rank == 2:\n    os.abort()\n"
        "c.Barrier()\nprint('after')\n",
    )
    r = mpirun_command("-n", "3", p)
    assert r.exit_code == 134
    assert "RANK 2 KILLED BY SIGNAL: 6 (Aborted)" in r.stderr
    assert "rank 2 called os.abort()" in r.stderr
    assert "after" not in r.stdout


def _interrupt_once(marker: Path) -> threading.Thread:
    """Ctrl-C once the ranks spin (the marker is there): on a loaded machine a fixed delay
    may land before the run has started."""

    def wait_then_kill() -> None:
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=wait_then_kill, daemon=True)
    t.start()
    return t


def test_ctrl_c_stops_a_rank_spinning_in_pure_python(tmp_path: Path) -> None:
    marker = tmp_path / "spinning"
    spin = f"from mpi4py import MPI\nopen({str(marker)!r}, 'w').close()\nwhile True:\n    pass\n"
    p = script(tmp_path, spin)
    t = _interrupt_once(marker)
    r = mpirun_command("-n", "2", p)
    t.join()
    assert r.exit_code == 130
    assert "interrupted" in r.stderr


def test_machine_wall_limit_stops_a_python_program_that_makes_no_call() -> None:
    def spin(speid: int, argp: int, envp: int) -> None:
        while True:
            pass

    m = Machine("qs20-1chip", seed=0)
    m.load(0, spin)
    with pytest.raises(RunawayError, match="host-time limit reached"):
        m.run(wall_limit_s=0.3)
