"""The sweep runner: local processes, Dask, Parquet results, resume, Ctrl-C."""

from __future__ import annotations

import pytest

from cellsim.exceptions import UsageError
from cellsim.messaging.explorer import explore
from cellsim.sweep import MARKER, SweepInterrupted, Work, read_results, run_sweep

CALLS: list[int] = []
STOP_AT: list[int] = []


def square(p: dict) -> dict:
    CALLS.append(p["x"])
    if STOP_AT and p["x"] == STOP_AT[0]:
        raise KeyboardInterrupt
    return {"x": p["x"], "y": p["x"] ** 2, "nested": [p["x"], {"a": 1}]}


def failing(p: dict) -> dict:
    if p["x"] == 3:
        raise UsageError("point 3 is bad")
    return {"x": p["x"]}


POINTS = [{"x": i} for i in range(12)]


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLS.clear()
    STOP_AT.clear()


def test_serial_and_parallel_agree(tmp_path) -> None:
    a = run_sweep(square, POINTS, workers=1)
    b = run_sweep(square, POINTS, workers=2, out=tmp_path / "b.parquet", chunk=2)
    assert a == b == [{"x": i, "y": i * i, "nested": [i, {"a": 1}]} for i in range(12)]
    assert read_results(tmp_path / "b.parquet") == a


def test_with_costs_the_longest_points_run_first_and_progress_counts_work(tmp_path) -> None:
    cost = {i: 1.0 + (i * 7) % 5 for i in range(12)}  # 1..5, in no order
    seen: list[tuple[int, int]] = []
    out = run_sweep(
        square, POINTS, workers=1, cost=lambda p: cost[p["x"]], progress=lambda d, t: seen.append((d, t))
    )
    # results in point order, whatever order the points ran in
    assert [r["x"] for r in out] == list(range(12))
    # longest first; equal costs keep the points' order
    assert sorted(range(12), key=lambda i: -cost[i]) == CALLS
    # progress in Work (thousandths of the cost unit), from none to all
    assert all(isinstance(d, Work) and isinstance(t, Work) for d, t in seen)
    assert seen[0] == (0, 1000 * sum(cost.values())) and seen[-1][0] == seen[-1][1]
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    # the same results in parallel, and the same file either way
    assert run_sweep(square, POINTS, workers=2, cost=lambda p: cost[p["x"]], out=tmp_path / "c") == out
    with pytest.raises(UsageError, match="cost must be positive"):
        run_sweep(square, POINTS, workers=1, cost=lambda p: 0.0)


def test_results_are_appended_as_points_finish(tmp_path) -> None:
    out = tmp_path / "r.parquet"
    run_sweep(square, POINTS, workers=1, out=out, flush_s=0.0)
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) == 12  # one append per finished point with flush_s=0
    import pandas as pd

    df = pd.read_parquet(out)
    assert sorted(df["y"]) == [i * i for i in range(12)]
    assert set(df.columns) >= {"key", "index", "settings", "record", "x", "y"}


def test_ctrl_c_keeps_finished_points_and_resume_runs_the_rest(tmp_path) -> None:
    out = tmp_path / "r.parquet"
    STOP_AT.append(7)
    with pytest.raises(SweepInterrupted, match="7 of 12 points finished") as e:
        run_sweep(square, POINTS, workers=1, out=out, settings={"s": 1})
    assert e.value.done == 7 and e.value.out == str(out)
    assert len(read_results(out)) == 7
    STOP_AT.clear()
    CALLS.clear()
    res = run_sweep(square, POINTS, workers=1, out=out, resume=True, settings={"s": 1})
    assert list(range(7, 12)) == CALLS  # nothing run twice
    assert res == run_sweep(square, POINTS, workers=1)
    assert len(read_results(out)) == 12


def test_resume_refuses_other_settings(tmp_path) -> None:
    out = tmp_path / "r.parquet"
    run_sweep(square, POINTS[:3], workers=1, out=out, settings={"s": 1})
    with pytest.raises(UsageError, match="other settings"):
        run_sweep(square, POINTS, workers=1, out=out, resume=True, settings={"s": 2})
    run_sweep(square, POINTS, workers=1, out=out, settings={"s": 2})  # without --resume: replaced
    assert len(read_results(out)) == 12


def test_a_failing_point_keeps_the_others(tmp_path) -> None:
    out = tmp_path / "r.parquet"
    with pytest.raises(UsageError, match="point 3 is bad"):
        run_sweep(failing, POINTS, workers=1, out=out)
    assert [r["x"] for r in read_results(out)] == [0, 1, 2]
    with pytest.raises(UsageError, match="point 3 is bad"):
        run_sweep(failing, POINTS, workers=2, chunk=1)


def test_dask_local_cluster_agrees_with_local(tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        d = run_sweep(square, POINTS, cluster=client, out=tmp_path / "d.parquet", chunk=3)
        assert d == run_sweep(square, POINTS, workers=1)
        kw = {"tasks": 4, "transmissions": 6, "runs": 2, "seed": 2}
        on_dask = explore("ps3", cluster=client, **kw)
        assert on_dask == explore("ps3", workers=2, **kw)


def test_unreachable_scheduler() -> None:
    pytest.importorskip("distributed")
    with pytest.raises(UsageError, match=r"cannot reach the Dask scheduler at .tcp://127\.0\.0\.1:9."):
        run_sweep(square, POINTS, cluster="tcp://127.0.0.1:9")


def test_duplicate_keys() -> None:
    with pytest.raises(UsageError, match="same key"):
        run_sweep(square, [{"x": 1}, {"x": 1}], workers=1)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(args: list[str], log: object) -> object:
    import subprocess
    import sys

    # `timeout` bounds the process even if the test dies before its teardown
    return subprocess.Popen(
        ["timeout", "180", sys.executable, "-m", "dask", *args], stdout=log, stderr=subprocess.STDOUT
    )


@pytest.fixture
def dask_scheduler(tmp_path):
    """A real `dask scheduler` and one `dask worker` on 127.0.0.1 (stopped after the test)."""
    import subprocess
    import time

    distributed = pytest.importorskip("distributed")
    address = f"tcp://127.0.0.1:{_free_port()}"
    log = (tmp_path / "dask.log").open("w")
    procs = [
        _start(
            ["scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--no-dashboard"], log
        )
    ]
    try:
        procs.append(
            _start(
                [
                    "worker",
                    address,
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                ],
                log,
            )
        )
        with distributed.Client(address, timeout="60s") as client:
            client.wait_for_workers(1, timeout=60)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()  # type: ignore[attr-defined]
        for p in procs:
            try:
                p.wait(timeout=20)  # type: ignore[attr-defined]
            except subprocess.TimeoutExpired:
                p.kill()  # type: ignore[attr-defined]
        log.close()
        time.sleep(0.1)


@pytest.mark.slow
def test_cli_runs_a_sweep_on_a_scheduler_by_address(dask_scheduler, tmp_path) -> None:
    """`--cluster tcp://HOST:PORT` through the command line, against a scheduler and a
    worker of their own (the client made from an address is not the default client)."""
    import json

    from click.testing import CliRunner

    from cellsim.tools.cli import cli

    args = [
        "run",
        "mapping",
        "--machine",
        "ps3",
        "--tasks",
        "4",
        "--transmissions",
        "6",
        "--runs",
        "2",
        "--seed",
        "2",
        "--json",
        "-",
    ]
    r = CliRunner().invoke(
        cli, [*args, "--cluster", dask_scheduler, "--out", str(tmp_path / "d")], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    local = CliRunner().invoke(cli, [*args, "--workers", "1", "--out", str(tmp_path / "l")])
    assert json.loads(r.stdout) == json.loads(local.stdout)


# -- what a sweep may write and remove, two sweeps at once, dead workers (issue 33) ----------


def test_out_never_removes_a_users_files(tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-1.tex").write_text("my paper")
    with pytest.raises(UsageError, match="not a sweep's dataset"):
        run_sweep(square, POINTS[:2], out=out, workers=1)
    assert (out / "part-1.tex").read_text() == "my paper"
    # a dataset a sweep made: a user's file put there later is left alone by the next sweep
    out2 = tmp_path / "out2"
    run_sweep(square, POINTS[:2], out=out2, workers=1)
    assert (out2 / MARKER).is_file()
    (out2 / "part-1.tex").write_text("notes")
    run_sweep(square, POINTS[:3], out=out2, workers=1)
    assert (out2 / "part-1.tex").read_text() == "notes"
    assert [r["x"] for r in read_results(out2)] == [0, 1, 2]


def test_two_sweeps_cannot_write_one_dataset(tmp_path) -> None:
    import fcntl
    import os

    out = tmp_path / "out"
    run_sweep(square, POINTS[:2], out=out, workers=1)
    fd = os.open(out / ".cellsim-sweep.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a sweep in another process holds it
    try:
        with pytest.raises(UsageError, match="another sweep is writing"):
            run_sweep(square, POINTS[:2], out=out, workers=1, resume=True)
    finally:
        os.close(fd)
    run_sweep(square, POINTS[:2], out=out, workers=1, resume=True)


def dies(p: dict) -> dict:
    import os

    if p["x"] == 5:
        os._exit(3)
    return {"x": p["x"]}


def test_a_dead_worker_is_an_error_naming_its_point_after_the_others_are_written(tmp_path) -> None:
    from cellsim.sweep import WorkerDied

    out = tmp_path / "out"
    with pytest.raises(WorkerDied, match=r'point \{"x": 5\}') as e:
        run_sweep(dies, POINTS, out=out, workers=2, chunk=1)
    assert e.value.key == '{"x": 5}'
    done = {r["x"] for r in read_results(out)}
    assert 5 not in done and done  # what finished is there; --resume finishes the rest


def test_resume_keys_on_the_machine_file_contents_not_its_name(tmp_path) -> None:
    from cellsim.machine import machine_digest

    f = tmp_path / "m.toml"
    f.write_text('base = "ps3"\n')
    before = machine_digest(str(f))
    f.write_text('base = "ps3"\n[mic]\ndram_latency_ns = 80\n')
    assert machine_digest(str(f)) != before
    assert machine_digest("ps3") != machine_digest("qs20")
    assert machine_digest("ps3", ["mic.dram_latency_ns=80"]) != machine_digest("ps3")
    from cellsim.messaging.explorer import settings_of

    a = settings_of([{"machine": str(f), "mapping": [0], "run": 0}])
    f.write_text('base = "ps3"\n[mic]\ndram_latency_ns = 90\n')
    b = settings_of([{"machine": str(f), "mapping": [0], "run": 0}])
    assert a["machine"] == b["machine"] and a != b
