"""Hostile input at the command line and in sweeps and mpirun (issue 22):
untidy but handled, with one clear error line or mpiexec's behaviour."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from click.testing import Result

from cellsim.exceptions import UsageError
from cellsim.sweep import run_sweep
from cli_helpers import invoke, one_error_line

# -- CLI values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--seed", "-1"], ["--seed", "-1"]),
        (["--poll-cycles", str(10**23)], ["--poll-cycles"]),
        (["--mapping", "[0123"], ["unbalanced bracket"]),
        (["--mapping", "01234567]"], ["unbalanced bracket"]),
        (["--time-limit", "nan"], ["--time-limit"]),
        (["--wall-limit", "-3"], ["--wall-limit"]),
    ],
)
def test_bad_cli_values_are_one_error_line(args: list[str], words: list[str]) -> None:
    one_error_line(invoke("run", "ring", "--transmissions", "5", *args), *words)


def test_the_time_limit_option_stops_an_experiment() -> None:
    r = invoke("run", "ring", "--transmissions", "100000", "--time-limit", "0.000001")
    one_error_line(r, "simulated-time limit", status=None)


def test_the_wall_limit_option_stops_an_experiment() -> None:
    t0 = time.monotonic()
    r = invoke("run", "ring", "--transmissions", "100000000", "--wall-limit", "1")
    one_error_line(r, "host-time limit", "--wall-limit", status=None)
    assert time.monotonic() - t0 < 30


# -- sweep results files ------------------------------------------------------------------------


def square(p: dict) -> dict:
    return {"x": p["x"], "y": p["x"] ** 2}


def test_out_refuses_to_replace_a_plain_file(tmp_path: Path) -> None:
    f = tmp_path / "precious.txt"
    f.write_text("my thesis")
    with pytest.raises(UsageError, match="is a file"):
        run_sweep(square, [{"x": 1}], out=f, workers=1)
    assert f.read_text() == "my thesis"


@pytest.mark.parametrize("content", [b"not parquet at all", b"PAR1\x00\x01truncated"])
def test_resume_on_a_bad_part_file_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    out = tmp_path / "sweep"
    run_sweep(square, [{"x": i} for i in range(3)], out=out, workers=1)
    (out / "part-99999999999999999999-bad.parquet").write_bytes(content)
    with pytest.raises(UsageError, match="not a readable Parquet part"):
        run_sweep(square, [{"x": i} for i in range(3)], out=out, resume=True, workers=1)


def test_resume_on_a_foreign_parquet_file_is_a_clear_error(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "sweep"
    out.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), out / "part-1.parquet")
    with pytest.raises(UsageError, match="not sweep results"):
        run_sweep(square, [{"x": 1}], out=out, resume=True, workers=1)


_ORPHANS = """
import os, sys, time
from cellsim.sweep import run_sweep

def slow(p):
    os.write(1, f"{os.getpid()}\\n".encode())  # one write: the two workers' lines never interleave
    time.sleep(600)
    return p

if __name__ == "__main__":
    run_sweep(slow, [{"x": i} for i in range(4)], workers=2, chunk=1)
"""


def test_sweep_workers_exit_when_the_parent_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "orphans.py"
    script.write_text(_ORPHANS)
    # stderr to a file: a parent that warns a lot must not block on a full pipe
    with open(tmp_path / "stderr.txt", "w") as err:
        parent = subprocess.Popen(
            [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=err, text=True
        )
    try:
        workers = _worker_pids(parent, 2, seconds=240)
        assert len(workers) == 2, (
            f"the sweep never started its workers: {(tmp_path / 'stderr.txt').read_text()}"
        )
    finally:
        parent.kill()
        parent.wait()
        assert parent.stdout is not None
        parent.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    alive = [w for w in workers if _alive(w)]
    for w in alive:
        os.kill(w, signal.SIGKILL)
    assert not alive, f"workers {alive} outlived their parent"


def _worker_pids(parent: subprocess.Popen[str], n: int, seconds: float) -> list[int]:
    """The first ``n`` pids the workers print (other lines, warnings, are skipped),
    or fewer if ``seconds`` pass first. A thread reads the lines: a select on the
    pipe would miss lines already in the reader's buffer."""
    assert parent.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    stdout = parent.stdout

    def read() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    pids: list[int] = []
    deadline = time.monotonic() + seconds
    while len(pids) < n:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line.strip().isdigit():
            pids.append(int(line))
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie waits for its (dead) parent's reaper: it is gone for our purpose
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ")[1][0] != "Z"


# -- mpirun: as mpiexec does --------------------------------------------------------------------


def mpirun(tmp_path: Path, body: str, *args: str, stdin: str | None = None) -> Result:
    p = tmp_path / "prog.py"
    p.write_text(textwrap.dedent(body))
    return invoke("mpirun", *args, str(p), stdin=stdin)


def test_a_rank_calling_os_exit_is_a_bad_termination(tmp_path: Path) -> None:
    r = mpirun(
        tmp_path,
        """
        import os
        from mpi4py import MPI
        print("before", flush=True)
        if MPI.COMM_WORLD.rank == 1:
            os._exit(5)
        MPI.COMM_WORLD.Barrier()
        """,
        "-n",
        "3",
    )
    assert r.exit_code == 5, r.output
    assert "BAD TERMINATION" in r.stderr and "RANK 1" in r.stderr and "EXIT CODE: 5" in r.stderr
    assert "[1] before" in r.stdout  # the output of the other ranks is not lost


def test_a_thread_that_raises_makes_the_status_non_zero(tmp_path: Path) -> None:
    p = tmp_path / "prog.py"
    p.write_text(
        textwrap.dedent(
            """
            import threading
            from mpi4py import MPI
            def work():
                raise ValueError("boom in a thread")
            t = threading.Thread(target=work)
            t.start()
            t.join()
            """
        )
    )
    # a subprocess: pytest turns an exception in a thread into a warning (an error here)
    r = subprocess.run(
        [sys.executable, "-m", "cellsim.tools.cli", "mpirun", "-n", "2", str(p)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stderr
    assert "ValueError: boom in a thread" in r.stderr


def test_stdin_goes_to_rank_0_only(tmp_path: Path) -> None:
    r = mpirun(
        tmp_path,
        """
        import sys
        from mpi4py import MPI
        print(repr(sys.stdin.read()))
        """,
        "-n",
        "3",
        stdin="hello\n",
    )
    assert r.exit_code == 0, r.output
    assert "[0] 'hello\\n'" in r.stdout
    assert "[1] ''" in r.stdout and "[2] ''" in r.stdout


_IPROBE_FOREVER = """
from mpi4py import MPI
c = MPI.COMM_WORLD
if c.rank == 0:
    while not c.Iprobe(source=1):
        pass
"""


@pytest.mark.parametrize(
    ("limit", "words"),
    [
        (["--wall-limit", "1"], ["host-time limit", "polling"]),
        (["--time-limit", "0.0001"], ["simulated-time limit", "polling"]),
    ],
)
def test_mpirun_limits_stop_a_rank_polling_forever(
    tmp_path: Path, limit: list[str], words: list[str]
) -> None:
    r = mpirun(tmp_path, _IPROBE_FOREVER, "-n", "2", *limit)
    assert r.exit_code == 1
    for w in words:
        assert w in r.stderr, r.stderr
