"""Seed 000's contention experiments (hotspot, collective, latency-hist): records
and invariants, on reduced sizes (a few seconds in all)."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from cellsim import Machine, UsageError
from cellsim.experiments import collective, get, hotspot, latency_hist

PORT_GBS = 25.6  # one EIB port direction on qs20: 16 B per bus cycle at 1.6 GHz
EIB_GBS = 204.8  # one 128-byte command per bus cycle
SLACK = 1.001  # decrementer quantisation


@pytest.fixture(scope="module")
def hot() -> list[dict[str, Any]]:
    return hotspot.run(spes=[1, 2, 3, 8], count=48)


@pytest.fixture(scope="module")
def coll() -> list[dict[str, Any]]:
    return collective.run(count=24, placements=2)


@pytest.fixture(scope="module")
def lat() -> list[dict[str, Any]]:
    return latency_hist.run(count=64)


def test_registered_on_qs20() -> None:
    for mod in (hotspot, collective, latency_hist):
        exp = get(mod.EXPERIMENT.name)
        assert exp.run is mod.run and exp.paper == "000" and exp.machine == "qs20-1chip"
        assert exp.tables is not None


def test_hotspot_fields_and_types(hot: list[dict[str, Any]]) -> None:
    assert len(hot) == 2 * 2 * 4
    for r in hot:
        assert set(r) == set(hotspot.FIELDS)
        assert r["target"] in ("memory", "ls") and r["op"] in ("get", "put")
        assert type(r["spes"]) is int and len(r["per_spe_gbs"]) == r["spes"]
        assert isinstance(r["aggregate_gbs"], float)
        assert r["aggregate_gbs"] == pytest.approx(sum(r["per_spe_gbs"]))
        assert sorted(r["placement"]) == list(range(8))
    json.loads(json.dumps(hot))


def test_hotspot_never_exceeds_the_port(hot: list[dict[str, Any]]) -> None:
    # every byte of a hot spot crosses the MIC's or the hot SPE's port in one direction
    for r in hot:
        assert r["aggregate_gbs"] <= PORT_GBS * SLACK, r
        assert max(r["per_spe_gbs"]) <= PORT_GBS * SLACK, r


def test_ls_hotspot_gets_reach_the_port_with_two_or_more_spes(hot: list[dict[str, Any]]) -> None:
    for r in hot:
        if (r["target"], r["op"]) == ("ls", "get") and r["spes"] >= 2:
            assert r["aggregate_gbs"] == pytest.approx(PORT_GBS, rel=0.02), r


def test_hotspot_puts_lose_the_receiving_ports_turns(hot: list[dict[str, Any]]) -> None:
    # Many senders into one port: a bus cycle each time it turns to the next
    # one (8 beats in 9 bus cycles); one sender (one SPE) never turns.
    for r in hot:
        if r["op"] != "put":
            continue
        if r["spes"] >= 2:
            assert r["aggregate_gbs"] == pytest.approx(PORT_GBS * 8 / 9, rel=0.02), r
        elif r["target"] == "ls":
            assert r["aggregate_gbs"] == pytest.approx(PORT_GBS, rel=0.02), r


def test_two_or_more_get_sources_saturate_memory(hot: list[dict[str, Any]]) -> None:
    one = next(r for r in hot if (r["target"], r["op"], r["spes"]) == ("memory", "get", 1))
    assert one["aggregate_gbs"] < 0.8 * PORT_GBS  # one SPE's read window over the DRAM latency
    for r in hot:
        if (r["target"], r["op"]) == ("memory", "get") and r["spes"] >= 2:
            # the DRAM's refreshes take 105 ns in every 7.8 us
            assert r["aggregate_gbs"] == pytest.approx(PORT_GBS * (1 - 105 / 7800), rel=0.01), r


def test_hotspot_shares_fairly(hot: list[dict[str, Any]]) -> None:
    for r in hot:
        if r["spes"] >= 2:
            assert max(r["per_spe_gbs"]) <= 1.05 * min(r["per_spe_gbs"]), r


def test_hotspot_is_deterministic(hot: list[dict[str, Any]]) -> None:
    again = hotspot.run(targets=["ls"], ops=["put"], spes=[3], count=48)
    assert again == [r for r in hot if (r["target"], r["op"], r["spes"]) == ("ls", "put", 3)]


def test_python_twin_gives_the_same_hotspot() -> None:
    native = hotspot.run(targets=["memory"], ops=["get"], spes=[2], count=8)
    python = hotspot.run(targets=["memory"], ops=["get"], spes=[2], count=8, native=False)
    assert native == python


def test_hotspot_compare_rows(hot: list[dict[str, Any]]) -> None:
    rows = hotspot.compare(hot)
    ids = {r["id"] for r in rows}
    assert {"000-f6a-ls-hotspot-asymptote", "000-f6a-mem-get-saturates", "000-f6a-put-degradation"} <= ids
    for row in rows:
        if row["id"] in ("000-f6a-ls-hotspot-asymptote", "000-f6a-get-outperforms-put"):
            assert row["within"] is True, row
        if row["held_out"]:
            assert row["published"] is None and row["within"] is None


def test_patterns() -> None:
    perms = {p: [collective.target_of(p, i) for i in range(8)] for p in collective.PATTERNS if p != "uniform"}
    assert perms["complement"] == [7, 6, 5, 4, 3, 2, 1, 0]
    assert perms["pairwise"] == [1, 0, 3, 2, 5, 4, 7, 6]
    assert perms["neighbor"] == [1, 2, 3, 4, 5, 6, 7, 0]
    assert perms["transpose"] == [0, 2, 4, 6, 1, 3, 5, 7]  # (b2 | b1 b0) -> (b1 b0 | b2)
    assert perms["bit-reverse"] == [0, 4, 2, 6, 1, 5, 3, 7]
    for targets in perms.values():
        assert sorted(targets) == list(range(8))  # every static pattern is a permutation
    assert collective.target_of("uniform", 3) is None


def test_collective_fields_and_limits(coll: list[dict[str, Any]]) -> None:
    assert [(r["numbering"], r["pattern"], r["op"]) for r in coll] == [
        (nb, p, o) for nb in ("physical", "random") for p in collective.PATTERNS for o in ("get", "put")
    ]
    for r in coll:
        assert set(r) == set(collective.FIELDS)
        assert isinstance(r["aggregate_gbs"], float)
        assert r["placements"] == (1 if r["numbering"] == "physical" else 2)
        if r["numbering"] == "physical":
            assert r["best_placement"] == list(range(8))
        assert r["aggregate_gbs"] <= EIB_GBS * SLACK, r
        assert max(r["per_spe_gbs"]) <= PORT_GBS * SLACK, r
        if r["placements"] == 1:
            assert r["aggregate_gbs"] == pytest.approx(sum(r["per_spe_gbs"]))
    uniform = [r["aggregate_gbs"] for r in coll if r["pattern"] == "uniform"]
    assert max(uniform) < 0.75 * EIB_GBS  # random targets collide at receivers


def test_complement_packs_two_halfway_flows_per_ring(coll: list[dict[str, Any]]) -> None:
    # Under the physical numbering every complement pair is six hops apart:
    # both directions' rings take two flows each, each flow holding a ring's
    # transfer slot for (8 beats + 5 hops) of every 8 bus cycles, so three
    # slots carry 3 / 3.25 of the peak. That is the gets' bound; puts also wait
    # for their receivers' credits (eib.put_flow), so they stay at or below it.
    by = {(r["numbering"], r["pattern"], r["op"]): r["aggregate_gbs"] for r in coll}
    assert by[("physical", "complement", "get")] == pytest.approx(EIB_GBS * 3 / 3.25, rel=0.01)
    assert by[("physical", "pairwise", "get")] == pytest.approx(EIB_GBS, rel=0.01)
    for pattern in ("complement", "pairwise"):
        assert by[("physical", pattern, "put")] <= by[("physical", pattern, "get")]


def test_collective_over_placements() -> None:
    recs = collective.run(
        patterns=["neighbor"], ops=["get"], numberings=["random"], placements=3, count=24, seed=5
    )
    (r,) = recs
    assert r["placements"] == 3 and r["placement_seeds"] == [5, 6, 7]
    assert r["min_gbs"] <= r["median_gbs"] <= r["max_gbs"]
    assert r["min_gbs"] <= r["aggregate_gbs"] == r["mean_gbs"] <= r["max_gbs"]
    assert sorted(r["best_placement"]) == sorted(r["worst_placement"]) == list(range(8))
    assert r["best_placement"] == Machine("qs20-1chip", seed=r["best_seed"]).placement
    # the best placement alone gives the best value again
    (best,) = collective.run(
        patterns=["neighbor"], ops=["get"], numberings=["random"], placements=1, count=24, seed=r["best_seed"]
    )
    assert best["aggregate_gbs"] == pytest.approx(r["max_gbs"])


def test_collective_compare_has_held_out_rows_without_values(coll: list[dict[str, Any]]) -> None:
    rows = collective.compare(coll)
    held = [r for r in rows if r["held_out"]]
    assert {r["id"] for r in held} == {"000-f6b-complement", "000-f6b-pairwise-gap", "000-f6b-uniform"}
    assert all(r["published"] is None and r["within"] is None for r in held)
    assert any(r["id"] == "000-f6b-pairwise-get-over-put" for r in rows)


def test_latency_hist_fields(lat: list[dict[str, Any]]) -> None:
    assert [(r["op"], r["spe"]) for r in lat] == [(o, s) for o in ("put", "get") for s in range(8)]
    for r in lat:
        assert set(r) == set(latency_hist.FIELDS)
        assert len(r["latencies_ns"]) == r["count"] == 64
        assert r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"]
        assert (
            r["min_ns"] - latency_hist.MODE_BIN_NS <= r["mode_ns"] <= r["max_ns"] + latency_hist.MODE_BIN_NS
        )
        assert r["mean_ns"] == pytest.approx(statistics.fmean(r["latencies_ns"]))
        assert r["physical"] == Machine("qs20-1chip", seed=0).placement[r["spe"]]
        # a 16 KB DMA takes at least its 16 KB over one port
        assert r["min_ns"] >= r["unloaded_ns"] >= 16384 / PORT_GBS
        assert r["increase_ns"] == pytest.approx(r["mode_ns"] - r["unloaded_ns"])
        # Little's law: with the queue kept full (16 commands and the one the
        # SPU holds), a DMA's time from issue is 17 services of an SPE's share.
        share_gbs = r["bandwidth_gbs"]
        assert r["queued_mean_ns"] == pytest.approx(17 * 16384 / share_gbs, rel=0.15)
        # ... while the chip serves each in about eight times the unloaded time
        assert 4 < r["increase_x"] < 12


def test_latency_distributions_are_fair(lat: list[dict[str, Any]]) -> None:
    for op in ("put", "get"):
        rs = [r for r in lat if r["op"] == op]
        means = [r["mean_ns"] for r in rs]
        assert max(means) <= 1.02 * min(means), means
        p99 = [r["p99_ns"] for r in rs]
        assert max(p99) <= 1.02 * min(p99), p99
    rows = latency_hist.compare(lat)
    assert [r["within"] for r in rows if r["id"] == "000-f7-fair"] == [True, True]


def test_bad_options() -> None:
    with pytest.raises(UsageError, match="SPE count 9"):
        hotspot.run(spes=[9])
    with pytest.raises(UsageError, match="pattern"):
        collective.run(patterns=["tornado"])
    with pytest.raises(UsageError, match="count"):
        latency_hist.run(count=0)
