"""Seed 002's PPE and SPU load/store experiments (ppe-cache, ppe-mem, spu-ls)
and the PPE/SPE co-streaming experiment (ppe-spe-mem): records, the visible
statements, invariants, the CLI and the report."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cellsim import UsageError
from cellsim import published as pub
from cellsim.experiments import get, ppe_cache, ppe_mem, ppe_spe_mem, spu_ls
from cellsim.tools.cli import cli

PEAK_GBS = 33.6  # 16 B per cycle at 2.1 GHz


@pytest.fixture(scope="module")
def cache() -> list[dict[str, Any]]:
    return ppe_cache.run()


@pytest.fixture(scope="module")
def mem() -> list[dict[str, Any]]:
    return ppe_mem.run()


@pytest.fixture(scope="module")
def ls() -> list[dict[str, Any]]:
    return spu_ls.run()


def _bw(records: list[dict[str, Any]], **key: Any) -> float:
    (r,) = [r for r in records if all(r[k] == v for k, v in key.items())]
    return float(r["bandwidth_gbs"])


def test_cache_records(cache: list[dict[str, Any]]) -> None:
    assert len(cache) == 3 * 3 * 2 * 5
    for r in cache:
        assert set(ppe_cache.FIELDS) <= set(r)
        assert r["machine"] == "blade21"
        assert 0 < r["bandwidth_gbs"] <= PEAK_GBS + 1e-9 or r["level"] == "l1-l2"
        if r["level"] == "l1":
            assert r["l1_misses"] == 0, r
        if r["level"] == "l2":
            assert r["l2_misses"] == 0, r


def test_the_l1_load_figures_and_the_visible_statements(cache: list[dict[str, Any]]) -> None:
    rows = ppe_cache.compare(cache)
    by_id: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_id.setdefault(row["id"], []).append(row)
    for eid in (
        "002-f3a-l1-load-16b",
        "002-f3a-l1-load-8b",
        "002-f3a-l1-load-4b",
        "002-f3a-l1-load-2b",
        "002-f3a-l1-load-1b",
        "002-f3a-l1-load-16b-no-gain",
        "002-f3b-l1-store-below-load",
        "002-f3b-l1-store-proportional",
        "002-f3c-l1-copy-half-peak",
        "002-f3c-l1-copy-16b-over-8b",
        "002-f3c-l1-copy-two-threads-help",
        "002-f4-l2-below-l1",
        "002-f4-l2-two-threads-help",
        "002-f5-l1l2-above-l2",
        "002-f5-l1l2-below-bus-peak",
    ):
        assert by_id[eid] and all(r["within"] for r in by_id[eid]), by_id[eid]
    # "almost twice" holds at 8 B; the model's ratio grows with the element size
    twice = {r["point"]: r for r in by_id["002-f4-l2-store-twice-load"]}
    assert twice["l2 store 1t 8 B"]["within"]


def test_two_threads_never_lose_to_one_on_loads(
    cache: list[dict[str, Any]], mem: list[dict[str, Any]]
) -> None:
    for recs, where in ((cache, "level"), (mem, "bank")):
        for r in recs:
            if r["op"] == "load" and r["threads"] == 1:
                two = _bw(recs, **{where: r[where]}, op="load", threads=2, element=r["element"])
                assert two >= r["bandwidth_gbs"], r


def test_memory_statements(mem: list[dict[str, Any]]) -> None:
    assert all(r["bandwidth_gbs"] < 6.0 for r in mem)
    rows = ppe_mem.compare(mem)
    local = [r for r in rows if r["point"].startswith("local")]
    assert local and all(r["within"] for r in local), [r for r in local if not r["within"]]
    assert any(r["id"] == "002-f7-mem-load-as-l2" for r in rows)
    for r in mem:
        if r["op"] == "store":
            assert r["bandwidth_gbs"] < r["l2_gbs"], r
        if (r["bank"], r["op"]) == ("remote", "load"):
            assert r["bandwidth_gbs"] <= _bw(
                mem, bank="local", op="load", threads=r["threads"], element=r["element"]
            )


def test_the_spu_reaches_16_bytes_per_cycle_and_dma_slows_it(ls: list[dict[str, Any]]) -> None:
    rows = spu_ls.compare(ls)
    assert len(rows) == 3 and all(r["within"] for r in rows), rows
    for r in ls:
        assert r["bandwidth_gbs"] <= PEAK_GBS + 1e-9
        quiet = _bw(ls, op=r["op"], element=r["element"], dma="none")
        assert r["bandwidth_gbs"] <= quiet
    assert _bw(ls, op="load", element=16, dma="in") < 0.97 * _bw(ls, op="load", element=16, dma="none")


def test_co_streaming_slows_the_ppe_more_than_the_spes() -> None:
    recs = ppe_spe_mem.run(ppe_ops=["load"], spe_ops=["get"], spes=[1, 8], ppe_kb=128)
    assert [r["spes"] for r in recs] == [1, 8]
    for r in recs:
        assert set(ppe_spe_mem.FIELDS) <= set(r)
        assert r["spes_outlasted"]
        assert r["spe_gbs"] <= r["spe_alone_gbs"] * 1.02
    one, eight = recs
    assert eight["ppe_slowdown"] > one["ppe_slowdown"] and eight["ppe_slowdown"] > 1.5
    assert eight["spe_slowdown"] < eight["ppe_slowdown"]
    assert ppe_spe_mem.compare(recs) == []
    assert ppe_spe_mem.tables(recs)


def test_bad_options() -> None:
    with pytest.raises(UsageError, match="level 'l3'"):
        ppe_cache.run(levels=["l3"])
    with pytest.raises(UsageError, match="threads 3"):
        ppe_cache.run(levels=["l1"], threads=[3])
    with pytest.raises(UsageError, match="element size 32"):
        ppe_mem.run(elements=[32])
    with pytest.raises(UsageError, match="bank 'remote'"):
        ppe_mem.run(machine="qs20-1chip", banks=["remote"], ops=["load"], elements=[8])
    with pytest.raises(UsageError, match="SPE count 9"):
        ppe_spe_mem.run(spes=[9])


def test_quotes_are_in_seed_002() -> None:
    (paper,) = glob.glob(str(Path(__file__).resolve().parents[3] / "shared" / "seeds" / "002_*.txt")) or [
        None
    ]
    if paper is None:
        pytest.skip("the seed papers are not next to the repository")
    text = " ".join(Path(paper).read_text().split())
    for name in ("ppe-cache", "ppe-mem", "spu-ls"):
        entries = pub.entries(experiment=name)
        assert entries and not any(e.held_out for e in entries)
        for e in entries:
            assert " ".join(e.quote.split()) in text, e.id


def test_plots_and_tables(
    tmp_path: Path, cache: list[dict[str, Any]], mem: list[dict[str, Any]], ls: list[dict[str, Any]]
) -> None:
    for name, recs in (("ppe-cache", cache), ("ppe-mem", mem), ("spu-ls", ls)):
        exp = get(name)
        assert exp.machine == "blade21" and exp.paper == "002"
        exp.plot(recs, tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert exp.tables is not None and exp.tables(recs)


def test_cli_run_json_and_reproduce(tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(
        cli, ["run", "ppe-cache", "--level", "l1", "--op", "load", "--threads", "1", "--json", "-"]
    )
    assert r.exit_code == 0, r.output
    recs = json.loads(r.output)
    assert [round(x["bandwidth_gbs"], 1) for x in recs] == [2.1, 4.2, 8.4, 16.8, 16.8]
    r = runner.invoke(cli, ["run", "ppe-mem", "--bank", "local", "--op", "store", "--element", "16"])
    assert r.exit_code == 0 and "002-f7-mem-below-6" in r.output, r.output
    out = tmp_path / "res"
    only = ("ppe-cache", "ppe-mem", "spu-ls", "ppe-spe-mem")
    r = runner.invoke(cli, ["reproduce", "--out", str(out), *(a for n in only for a in ("--only", n))])
    assert r.exit_code == 0, r.output
    for n in only:
        assert (out / f"{n}.png").exists() and json.loads((out / f"{n}.json").read_text())
    html = (out / "report.html").read_text()
    assert "002-f3a-l1-load-8b" in html and "002-s422-spu-ls-16b-peak" in html
