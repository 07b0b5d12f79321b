"""The MPI experiments (seed 003), reduced: records, side-by-side tables,
held-out comparisons (simulated values only), plots and the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cellsim import UsageError
from cellsim.experiments import get, mpi_collectives, mpi_matvec, mpi_pingpong
from cellsim.tools.cli import cli


def test_pingpong(tmp_path: Path) -> None:
    recs = mpi_pingpong.run(sizes=[0, 1024, 4096], reps=4, pages=["first-touch"], chips=["one"])
    assert [(r["protocol"], r["size"]) for r in recs] == [
        (p, s) for p in ("kumar", "direct") for s in (0, 1024, 4096)
    ]
    assert {r["mode"] for r in recs} == {"buffered", "synchronous", "eager", "pull"}
    for r in recs:
        assert set(mpi_pingpong.FIELDS) <= set(r)
        assert r["latency_us"] > 0 and r["bandwidth_gbs"] == pytest.approx(r["size"] / r["latency_us"] / 1e3)
    (table,) = mpi_pingpong.tables(recs)
    assert table.columns[1:3] == ["kumar latency (us)", "direct latency (us)"]
    rows = mpi_pingpong.compare(recs)
    assert {r["id"] for r in rows} == {"003-abstract-peak-bandwidth", "003-abstract-min-latency"}
    assert all(r["held_out"] and r["published"] is None and r["within"] is None for r in rows)
    mpi_pingpong.plot(recs, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_pingpong_on_a_blade_crosses_the_chips_and_memories() -> None:
    recs = mpi_pingpong.run(sizes=[65536], reps=2, protocols=["direct"])
    by = {(r["pages"], r["chips"]): r["latency_us"] for r in recs}
    configs = {("first-touch", "one"), ("remote", "one"), ("interleave", "one"), ("first-touch", "two")}
    assert set(by) == configs
    assert by[("first-touch", "one")] < by[("remote", "one")], by
    assert by[("first-touch", "one")] < by[("first-touch", "two")], by
    with pytest.raises(UsageError, match="one chip"):
        mpi_pingpong.run(machine="qs20-1chip", sizes=[0], chips=["two"])


def test_matvec_is_checked_and_below_peak(tmp_path: Path) -> None:
    recs = mpi_matvec.run(sizes=[128, 512], products=1, spes=[8], pages=["first-touch"])
    assert [(r["protocol"], r["n"]) for r in recs] == [
        ("kumar", 128),
        ("kumar", 512),
        ("direct", 128),
        ("direct", 512),
    ]
    for r in recs:
        assert r["checked"]
        assert 0 < r["gflops"] < r["peak_gflops"] == pytest.approx(8 * 3.2e9 * 2 / 7 / 1e9)
    rows = mpi_matvec.compare(recs)
    assert [r["id"] for r in rows] == ["003-matvec-512"]
    assert rows[0]["held_out"] and rows[0]["simulated"] == recs[1]["gflops"]
    assert mpi_matvec.tables(recs)[0].rows[1][0] == "512"
    mpi_matvec.plot(recs, tmp_path / "m.png")
    with pytest.raises(UsageError, match="a multiple of 16"):
        mpi_matvec.run(sizes=[100])


def test_collectives(tmp_path: Path) -> None:
    recs = mpi_collectives.run(spes=[2, 3], sizes=[8, 4096], reps=2)
    ops = {(r["op"], r["spes"], r["size"]) for r in recs if r["protocol"] == "kumar"}
    assert ("Barrier", 3, 0) in ops and ("Alltoall", 2, 4096) in ops
    assert len(recs) == 2 * 2 * (1 + 4 * 2)
    assert all(r["latency_us"] > 0 for r in recs)
    assert [t.title.split(":")[1].split()[0] for t in mpi_collectives.tables(recs)] == list(
        mpi_collectives.OPS
    )
    mpi_collectives.plot(recs, tmp_path / "c.png")
    with pytest.raises(UsageError, match="multiple of 8"):
        mpi_collectives.run(sizes=[3])


def test_cellsim_run_json() -> None:
    r = CliRunner().invoke(
        cli,
        [
            *("run", "mpi-pingpong", "--sizes", "0,64", "--reps", "3", "--protocol", "direct"),
            *("--chips", "one", "--pages", "first-touch", "--json", "-"),
        ],
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [(d["protocol"], d["size"]) for d in data] == [("direct", 0), ("direct", 64)]
    assert get("mpi-matvec").machine == "qs20"


def test_matvec_one_sum_waits_for_the_dp_latency() -> None:
    """The accumulator hypothesis: one running sum makes each element wait for the
    multiply-add before it (13 cycles on the Cell, against an issue every 7)."""

    def run(accumulator: str | None = None) -> dict[str, Any]:
        (r,) = mpi_matvec.run(
            sizes=[128],
            products=1,
            spes=[8],
            pages=["first-touch"],
            protocols=["direct"],
            accumulator=accumulator,
        )
        return r

    split, one = run(), run("one-sum")
    assert (split["accumulator"], one["accumulator"]) == ("partial-sums", "one-sum")
    assert one["peak_gflops"] == pytest.approx(8 * 3.2e9 * 2 / 13 / 1e9)
    assert one["checked"] and one["gflops"] < split["gflops"]
    assert "13 cycles per matrix element" in mpi_matvec.tables([one])[0].title
    with pytest.raises(UsageError, match="accumulator must be one of partial-sums, one-sum, not 'two'"):
        run("two")
