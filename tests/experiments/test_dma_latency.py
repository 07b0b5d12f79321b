"""The dma-latency experiment (seed 000, Table 1 and Figure 4): records and invariants."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from cellsim import CellsimError, UsageError
from cellsim.experiments import dma_latency, get
from cellsim.published import entries

PORT_GBS = 25.6  # one SPE's EIB port: 16 B per bus cycle at 1.6 GHz
SIZES = [8 << i for i in range(12)]


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return dma_latency.run(machine="qs20-1chip", seed=0)


def test_registered() -> None:
    exp = get("dma-latency")
    assert exp.run is dma_latency.run
    assert exp.paper == "000"
    assert {o.name for o in exp.options} == {"ops", "targets", "sizes", "count"}


def test_records_fields_and_types(records: list[dict[str, Any]]) -> None:
    assert len(records) == 2 * 2 * len(SIZES)
    for r in records:
        assert set(r) == set(dma_latency.FIELDS)
        assert r["op"] in ("get", "put")
        assert r["target"] in ("memory", "ls")
        assert type(r["size"]) is int and r["size"] in SIZES
        assert type(r["count"]) is int and r["count"] >= 64
        assert type(r["ticks"]) is int and r["ticks"] > 0
        assert isinstance(r["latency_ns"], float) and r["latency_ns"] > 0
        assert isinstance(r["bandwidth_gbs"], float)
        assert r["bandwidth_gbs"] == pytest.approx(r["size"] / r["latency_ns"])
        # the time per DMA is the decrementer time over the count (25 MHz timebase on qs20)
        assert r["latency_ns"] == pytest.approx(r["ticks"] * 40.0 / r["count"])
    assert {(r["op"], r["target"], r["size"]) for r in records} == {
        (o, t, s) for o in ("get", "put") for t in ("memory", "ls") for s in SIZES
    }
    json.loads(json.dumps(records))  # JSON-serialisable


def test_bandwidth_never_exceeds_the_port(records: list[dict[str, Any]]) -> None:
    for r in records:
        assert r["bandwidth_gbs"] <= PORT_GBS * 1.001, r


def curves(records: list[dict[str, Any]], field: str) -> dict[tuple[str, str], list[float]]:
    """``field`` of each (op, target)'s records, smallest size first."""
    out: dict[tuple[str, str], list[float]] = {}
    for r in sorted(records, key=lambda r: r["size"]):
        out.setdefault((r["op"], r["target"]), []).append(r[field])
    assert len(out) == 4
    return out


def test_latency_grows_with_size(records: list[dict[str, Any]]) -> None:
    for key, lat in curves(records, "latency_ns").items():
        assert all(b >= a for a, b in itertools.pairwise(lat)), (key, lat)
        assert lat[-1] > 5 * lat[0]


def test_bandwidth_grows_with_size(records: list[dict[str, Any]]) -> None:
    for key, bw in curves(records, "bandwidth_gbs").items():
        assert all(b > a for a, b in itertools.pairwise(bw)), (key, bw)


def test_filters_and_progress() -> None:
    calls = []
    recs = dma_latency.run(
        ops=["put"], targets=["ls"], sizes=[128, 1024], count=64, progress=lambda d, t: calls.append((d, t))
    )
    assert [(r["op"], r["target"], r["size"], r["count"]) for r in recs] == [
        ("put", "ls", 128, 64),
        ("put", "ls", 1024, 64),
    ]
    assert calls == [(1, 2), (2, 2)]


def test_python_and_native_programs_give_identical_records() -> None:
    opts = {"sizes": [8, 128, 2048], "count": 64}
    assert dma_latency.run(native=False, **opts) == dma_latency.run(native=True, **opts)


def test_seed_is_recorded_and_runs_are_deterministic() -> None:
    a = dma_latency.run(seed=3, sizes=[256], count=64)
    assert a == dma_latency.run(seed=3, sizes=[256], count=64)
    assert {r["seed"] for r in a} == {3}


@pytest.mark.parametrize(
    "options",
    [
        {"ops": ["copy"]},
        {"targets": ["disk"]},
        {"sizes": [24]},
        {"sizes": [32768]},
        {"sizes": [0]},
        {"count": 0},
    ],
)
def test_bad_options_are_usage_errors(options: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        dma_latency.run(**options)


def test_bad_machine_is_a_cellsim_error() -> None:
    with pytest.raises(CellsimError, match="unknown machine"):
        dma_latency.run(machine="nope", sizes=[128])


def test_compare_rows(records: list[dict[str, Any]]) -> None:
    rows = dma_latency.compare(records)
    ids = {e.id for e in entries(experiment="dma-latency")}
    assert {r["id"] for r in rows} == ids
    for row in rows:
        assert {"id", "description", "point", "published", "simulated", "error_pct", "within"} <= set(row)
        assert isinstance(row["simulated"], float)
        assert isinstance(row["within"], bool)
    json.loads(json.dumps(rows))
    # the 512 B points are reported, out of tolerance or not: nothing is hidden
    assert any("512 B" in r["point"] for r in rows)
    # a subset of records gives only the rows it covers
    sub = [r for r in records if r["size"] == 16384]
    assert {r["id"] for r in dma_latency.compare(sub)} == {
        e.id for e in entries(experiment="dma-latency") if "16k" in e.id
    }


def test_plot_writes_an_image(records: list[dict[str, Any]], tmp_path: Any) -> None:
    path = tmp_path / "fig4.png"
    dma_latency.plot(records, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a filtered run plots too (published values without a curve are left out)
    dma_latency.plot([r for r in records if r["op"] == "get"], tmp_path / "gets.png")
    assert (tmp_path / "gets.png").stat().st_size > 0
