"""``cellsim mpirun``: unmodified mpi4py scripts, rank-prefixed output, exit
statuses, tracebacks, the compute rules and the trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mpi_helpers import mpirun_command, script

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mpi"


def test_hello_world_unmodified_mpi4py() -> None:
    assert "mpi4py" not in sys.modules
    r = mpirun_command("-n", "4", str(EXAMPLES / "hello.py"))
    assert r.exit_code == 0, r.output
    lines = sorted(r.stdout.splitlines())
    assert [ln.split()[0] for ln in lines] == ["[0]", "[1]", "[2]", "[3]"]
    assert "[2] Hello, World! I am process 2 of 4 on SPE 2" in r.stdout
    assert "4 ranks on qs20, protocol direct" in r.stderr
    assert "mpi4py" not in sys.modules  # the stand-in is only there during the run


@pytest.mark.parametrize("protocol", ["direct", "kumar"])
def test_pingpong_and_collective_examples(protocol: str) -> None:
    r = mpirun_command("-n", "2", "--protocol", protocol, str(EXAMPLES / "pingpong.py"), "0", "4096")
    assert r.exit_code == 0, r.output
    rows = [ln.split() for ln in r.stdout.splitlines()]
    assert [(row[0], row[1]) for row in rows] == [("[0]", "0"), ("[0]", "4096")]
    r = mpirun_command("-n", "8", "--protocol", protocol, str(EXAMPLES / "allreduce.py"))
    assert r.exit_code == 0, r.output
    assert "sum checked" in r.stdout and "rank 7: demo" in r.stdout


def test_spe_program_with_the_spu_api() -> None:
    r = mpirun_command("-n", "4", str(EXAMPLES / "spe_sum.py"))
    assert r.exit_code == 0, r.output
    assert "[0] sum of 0..4095 = 8386560 (expected 8386560)" in r.stdout


def test_arguments_reach_the_script(tmp_path: Path) -> None:
    p = script(
        tmp_path,
        "import sys\nfrom mpi4py import MPI\nassert MPI.argv()[1:] == sys.argv[1:]\nprint(sys.argv[1:])\n",
    )
    r = mpirun_command("-n", "2", "-q", p, "a", "--b", "3")
    assert r.exit_code == 0, r.output
    assert r.stdout.count("['a', '--b', '3']") == 2
    assert r.stderr == ""


def test_traceback_with_the_rank_and_exit_status(tmp_path: Path) -> None:
    p = script(
        tmp_path,
        "from mpi4py import MPI\ncomm = MPI.COMM_WORLD\nif comm.rank == 1:\n    {}['missing']\n"
        "comm.Barrier()\nprint('after')\n",
    )
    r = mpirun_command("-n", "3", p)
    assert r.exit_code == 1
    assert "[1] Traceback (most recent call last):" in r.stderr
    assert f'[1]   File "{p}", line 4, in <module>' in r.stderr
    assert "[1] KeyError: 'missing'" in r.stderr
    assert "rank 1 raised KeyError" in r.stderr and "the other ranks were stopped" in r.stderr
    assert "after" not in r.stdout
    p = script(
        tmp_path,
        "import sys\nfrom mpi4py import MPI\nr = MPI.COMM_WORLD.rank\nsys.exit(r + 4 if r == 2 else 0)\n",
    )
    assert mpirun_command("-n", "3", p).exit_code == 6


def test_deadlock_report(tmp_path: Path) -> None:
    p = script(
        tmp_path,
        "import numpy as np\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\n"
        "c.Recv(np.zeros(1), source=1 - c.rank, tag=9)\n",
    )
    for proto in ("direct", "kumar"):
        r = mpirun_command("-n", "2", "--protocol", proto, p)
        assert r.exit_code == 1
        assert "deadlock" in r.stderr
        assert "rank 0: waits in Recv(source=1, tag=9) on MPI_COMM_WORLD" in r.stderr


def test_bad_input_is_one_line() -> None:
    r = mpirun_command("-n", "17", str(EXAMPLES / "hello.py"))
    assert r.exit_code == 2  # a usage error
    assert (
        r.stderr.strip()
        == "error: -n 17: this qs20 has 16 SPEs and an MPI rank needs one, so at most 16 ranks"
    )
    for args in (["-n", "2", "nope.py"], ["-n", "2", "--compute", "fast", str(EXAMPLES / "hello.py")]):
        r = mpirun_command(*args)
        assert r.exit_code == 2 and r.stderr.startswith("error: ") and len(r.stderr.splitlines()) == 1


def test_compute_rules(tmp_path: Path) -> None:
    p = script(
        tmp_path,
        "from mpi4py import MPI\nc = MPI.COMM_WORLD\nc.Barrier()\nt = MPI.Wtime()\n"
        "x = sum(i * i for i in range(20000))\nMPI.compute(320000)\nc.Barrier()\n"
        "print(f'{(MPI.Wtime() - t) * 1e6:.1f}')\n",
    )

    def took(rule: str) -> float:
        r = mpirun_command("-n", "2", "-q", "--compute", rule, p)
        assert r.exit_code == 0, r.output
        return float(r.stdout.split()[1])

    zero, model, host = took("zero"), took("model"), took("host-scaled:1")
    assert zero < 5
    assert model == pytest.approx(zero + 100, abs=5)  # 320,000 cycles at 3.2 GHz, stated
    assert host > zero + 50  # the host's own time for the loop (about a millisecond)


def test_trace(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    r = mpirun_command("-n", "2", "--trace", str(out), str(EXAMPLES / "hello.py"))
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["traceEvents"]
    assert "wrote" in r.stderr


def test_module_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mpiprog.py").write_text(
        "from cellsim import mpi\n\ndef main():\n    print(mpi.COMM_WORLD.allreduce(mpi.COMM_WORLD.rank))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    r = mpirun_command("-n", "3", "-q", "mpiprog:main")
    assert r.exit_code == 0, r.output
    assert sorted(r.stdout.splitlines()) == ["[0] 3", "[1] 3", "[2] 3"]


def test_host_scaled_time_shows_between_two_wtimes(tmp_path: Path) -> None:
    p = script(
        tmp_path,
        "from mpi4py import MPI\nt = MPI.Wtime()\nx = sum(i * i for i in range(100000))\n"
        "print((MPI.Wtime() - t) * 1e6)\n",
    )
    r = mpirun_command("-n", "1", "-q", "--compute", "host-scaled:1", p)
    assert float(r.stdout.split()[1]) > 500  # the loop's host time, at least 0.5 ms on any host
    r = mpirun_command("-n", "1", "-q", "--compute", "zero", p)
    assert float(r.stdout.split()[1]) == 0.0
