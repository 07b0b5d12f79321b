"""The dma-batch experiment (seed 000, Figure 5): records and invariants."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from cellsim import UsageError
from cellsim.experiments import dma_batch, get

PORT_GBS = 25.6
SIZES = [8 << i for i in range(12)]
BATCHES = [1, 2, 4, 8, 16, 32, 0]


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return dma_batch.run(machine="qs20-1chip", seed=0)


def _bw(records: list[dict[str, Any]]) -> dict[tuple[str, str, int, int], float]:
    return {(r["op"], r["target"], r["size"], r["batch"]): r["bandwidth_gbs"] for r in records}


def test_registered() -> None:
    exp = get("dma-batch")
    assert exp.run is dma_batch.run
    assert {o.name for o in exp.options} == {"ops", "targets", "sizes", "batches", "count"}


def test_records_fields_and_types(records: list[dict[str, Any]]) -> None:
    assert len(records) == 2 * 2 * len(SIZES) * len(BATCHES)
    for r in records:
        assert set(r) == set(dma_batch.FIELDS)
        assert r["batch"] in BATCHES
        assert type(r["batch"]) is int and type(r["size"]) is int and type(r["count"]) is int
        assert r["count"] % 32 == 0
        assert isinstance(r["latency_ns"], float) and isinstance(r["bandwidth_gbs"], float)
        assert r["bandwidth_gbs"] == pytest.approx(r["size"] / r["latency_ns"])
    json.loads(json.dumps(records))


def test_default_count_is_divisible_by_every_batch() -> None:
    for size in [*SIZES, 48, 1008]:
        c = dma_batch.default_count(size)
        assert 256 <= c <= 4096 and c % 32 == 0


def test_bandwidth_never_exceeds_the_port(records: list[dict[str, Any]]) -> None:
    for r in records:
        assert r["bandwidth_gbs"] <= PORT_GBS * 1.001, r


def test_batching_never_loses_to_blocking(records: list[dict[str, Any]]) -> None:
    bw = _bw(records)
    for (op, target, size, batch), v in bw.items():
        if size >= 256:
            assert v >= bw[(op, target, size, 1)] * 0.999, (op, target, size, batch)


def test_larger_batches_never_lose(records: list[dict[str, Any]]) -> None:
    bw = _bw(records)
    for op in ("get", "put"):
        for target in ("memory", "ls"):
            for size in SIZES:
                seq = [bw[(op, target, size, b)] for b in BATCHES]
                assert all(b >= a * 0.99 for a, b in itertools.pairwise(seq)), (op, target, size, seq)


def test_blocking_points_match_dma_latency(records: list[dict[str, Any]]) -> None:
    from cellsim.experiments import dma_latency

    lat = dma_latency.run(sizes=[256, 4096], count=256)
    bw = _bw(records)
    for r in lat:
        # the same benchmark, but runs of other lengths meet other DRAM refreshes
        assert bw[(r["op"], r["target"], r["size"], 1)] == pytest.approx(r["bandwidth_gbs"], rel=1e-2)


def test_speedups(records: list[dict[str, Any]]) -> None:
    s = dma_batch.speedups(records)
    assert s[("put", "ls", 256, 1)] == pytest.approx(1.0)
    assert all(v > 0 for v in s.values())


def test_compare_rows(records: list[dict[str, Any]]) -> None:
    rows = dma_batch.compare(records)
    assert {r["id"] for r in rows} == {
        "000-f5b-mem-put-nonblocking",
        "000-f5f-ls-put-nonblocking",
        "000-f5-batching-256",
    }
    batching = [r for r in rows if r["id"] == "000-f5-batching-256"]
    assert [r["point"] for r in batching] == [f"256 B, batch {b}" for b in (2, 4, 8, 16, 32)]
    for r in batching:
        assert r["kind"] == "range" and r["published"] == [2.0, 3.0] and r["note"]
    json.loads(json.dumps(rows))


def test_options_and_errors() -> None:
    recs = dma_batch.run(ops=["get"], targets=["memory"], sizes=[512], batches=[0, 4], count=64)
    assert [(r["batch"], r["count"]) for r in recs] == [(0, 64), (4, 64)]
    with pytest.raises(UsageError):
        dma_batch.run(batches=[-1], sizes=[128])


def test_plot_writes_an_image(records: list[dict[str, Any]], tmp_path: Any) -> None:
    path = tmp_path / "fig5.png"
    dma_batch.plot(records, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
