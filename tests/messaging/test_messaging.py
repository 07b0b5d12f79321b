"""Seed 001's message-passing library, the ring benchmark and the mapping explorer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cellsim import Machine
from cellsim.exceptions import UsageError
from cellsim.experiments import mapping as mapping_exp
from cellsim.experiments import ring as ring_exp
from cellsim.messaging import (
    Variation,
    builtin,
    format_mapping,
    load_pattern,
    parse_mapping,
    ring_pattern,
    simulate,
)
from cellsim.messaging.explorer import all_mappings, explore, summary
from cellsim.messaging.mapper import link_loads, model_agreement, optimize, spearman
from cellsim.messaging.simulate import check_bytes
from cli_helpers import invoke, one_error_line

QUIET = Variation.off()


@pytest.mark.parametrize(
    ("machine", "pattern", "mapping", "mode", "variation"),
    [
        ("qs20", ring_pattern(8), (0, 2, 4, 6, 7, 5, 3, 1), "pinned", QUIET),
        ("ps3", ring_pattern(6), (0, 3, 1, 5, 2, 4), "default", Variation()),
        ("qs20", ring_pattern(5, unidirectional=True), (0, 1, 2, 3, 4), "pinned", Variation()),
        ("qs20", builtin("all-to-all", 4, 512), (0, 2, 1, 3), "pinned", QUIET),
        ("qs22", ring_pattern(16), (0, *range(15, 0, -1)), "pinned", Variation()),
    ],
)
def test_python_twin_gives_identical_cycles(machine, pattern, mapping, mode, variation) -> None:
    """The Python programs make the same SPU calls as the native kernels: same cycles, same traffic."""
    kw = {"count": 12, "mode": mode, "seed": 5, "variation": variation, "packet": 512}
    native = simulate(machine, pattern, mapping, native=True, **kw)
    python = simulate(machine, pattern, mapping, native=False, **kw)
    assert native["runtime_cycles"] == python["runtime_cycles"]
    assert native["command_bus_requests"] == python["command_bus_requests"]
    assert native["segments"] == python["segments"]
    assert native["bytes_ok"] and python["bytes_ok"]


def test_packets_really_move_and_are_checked() -> None:
    """Every receive buffer holds the bytes it must; a corrupted byte is found."""
    from cellsim.kernels import Kernel
    from cellsim.messaging import setup

    m = Machine("qs20", seed=1, overrides={"placement": "identity"})
    pat = ring_pattern(4)
    specs = pat.task_specs(9, 256)
    st = setup(m, specs, [0, 1, 2, 3], packet=256, nbuf=2, seed=3)
    for t in range(4):
        m.start_spe(t, Kernel("forward_task", argp=st.argp, envp=st.envp[t]))
    m.run()
    assert check_bytes(m, st, pat, 9) == []
    ls = m.local_store(2)
    at = st.layouts[2].recv[0]
    ls[at + 17] ^= 0xFF
    assert any("task 2" in b for b in check_bytes(m, st, pat, 9))


def test_sixteen_tasks_use_wider_matrix_rows() -> None:
    """Up to 8 tasks a matrix row is one 128-byte line (as on one chip); 16 tasks get 256-byte
    rows, slot [r][s] at r * 256 + s * 16, polled with one 256-byte get."""
    from cellsim.kernels import Kernel
    from cellsim.messaging import setup
    from cellsim.messaging.library import row_bytes

    assert [row_bytes(n) for n in (2, 6, 8, 9, 16)] == [128, 128, 128, 256, 256]
    m = Machine("qs22", seed=1, overrides={"placement": "identity"})
    specs = ring_pattern(16).task_specs(7, 128)
    st = setup(m, specs, list(range(16)), packet=128, seed=3)
    assert st.layouts[0].ackrow - st.layouts[0].row == 256
    for t in range(16):
        m.start_spe(t, Kernel("forward_task", argp=st.argp, envp=st.envp[t]))
    m.run()
    notify = st.notify.array().view(">u4")
    for r in range(16):
        for s, want in (((r - 1) % 16, 4), ((r + 1) % 16, 3)):  # 7 sends: 4 clockwise, 3 back
            assert int(notify[(r * 256 + s * 16) // 4]) == want
    with pytest.raises(UsageError, match="17 tasks: the library supports at most 16"):
        setup(Machine("qs22"), ring_pattern(17).task_specs(4, 128), list(range(17)), packet=128)


def test_exchange_headers_and_partial_packets() -> None:
    """A pattern whose bytes are not a multiple of the packet: every packet's header is checked."""
    from cellsim.messaging import Pattern

    pat = Pattern("custom", 3, ((0, 1, 1000), (1, 2, 300), (2, 0, 2048), (0, 2, 16)))
    r = simulate("qs20", pat, (0, 1, 2), count=5, packet=512, variation=QUIET)
    assert r["bytes_ok"]


def test_blade_contexts_land_on_both_chips_and_crossing_costs() -> None:
    """On a two-chip blade a pinned run's contexts land by spufs on either chip; ring links
    and polls that cross the BIF cost what the engine makes them cost."""
    from cellsim.messaging.simulate import default_contexts, run_placement

    assert default_contexts("ps3", "pinned") == "physical"
    assert default_contexts("qs22", "pinned") == default_contexts("qs22", "default") == "spread"
    runs = [run_placement("qs22", "pinned", "spread", seed=0, pattern="ring", run=r) for r in range(3)]
    assert any(p >= 8 for pl in runs for p in pl[:8])
    local = run_placement("qs22", "pinned", "local", seed=0, pattern="ring", run=0)
    assert sorted(local[:8]) == list(range(8))
    pat, mp = ring_pattern(8), tuple(range(8))
    kw = {"count": 20, "variation": QUIET, "traffic": False}
    one_chip = simulate("qs22", pat, mp, placement=list(range(16)), **kw)
    halves = [0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15]
    two_chips = simulate("qs22", pat, mp, placement=halves, **kw)
    assert two_chips["placement"] == halves[:8]
    assert two_chips["runtime_ns"] > 1.1 * one_chip["runtime_ns"]


def test_pinned_writes_task_ids_into_the_local_stores() -> None:
    r = simulate(
        "qs20", ring_pattern(4), (0, 3, 1, 2), count=4, mode="pinned", variation=QUIET, contexts="physical"
    )
    assert r["placement"] == [0, 3, 1, 2]
    d = simulate("qs20", ring_pattern(4), (0, 3, 1, 2), count=4, mode="default", seed=9, variation=QUIET)
    assert sorted(d["placement"]) != d["placement"] or d["placement"] != [0, 3, 1, 2]


def test_variation_is_seeded() -> None:
    """Same seed, same run; the mechanisms make runs differ; switched off, pinned runs are equal."""
    p, mp = ring_pattern(6), (0, 1, 2, 3, 4, 5)
    a = simulate("ps3", p, mp, count=30, seed=1)
    assert a == simulate("ps3", p, mp, count=30, seed=1)
    assert a["runtime_cycles"] != simulate("ps3", p, mp, count=30, seed=2)["runtime_cycles"]
    q1 = simulate("ps3", p, mp, count=30, seed=1, variation=QUIET)
    q2 = simulate("ps3", p, mp, count=30, seed=2, variation=QUIET)
    assert q1["runtime_cycles"] == q2["runtime_cycles"]


def test_ps3_hypervisor_runs_on_a_hidden_spe() -> None:
    r = simulate("ps3", ring_pattern(6), tuple(range(6)), count=20, seed=0)
    assert 6 not in r["placement"] and 7 not in r["placement"]
    v = Variation(visible=(1, 2, 3, 5, 6, 7))
    r = simulate("ps3", ring_pattern(6), tuple(range(6)), count=20, variation=v)
    assert r["placement"] == [1, 2, 3, 5, 6, 7]
    with pytest.raises(UsageError, match="hypervisor SPE 1"):
        simulate("ps3", ring_pattern(6), tuple(range(6)), count=4, variation=Variation(hypervisor_spe=1))


def test_ring_experiment_reports_traffic() -> None:
    (r,) = ring_exp.run(machine="qs20", transmissions=40, mapping="[02467531]")
    assert r["bytes_ok"] and r["mapping"] == "[02467531]"
    assert len(r["segments"]) == 48  # 12 ramps, two directions, two chips
    crossing = any(p >= 8 for p in r["placement"]) and any(p < 8 for p in r["placement"])
    assert (sum(r["bif_bytes"]) > 0) == crossing
    (one,) = ring_exp.run(machine="qs20-1chip", transmissions=40, mapping="[02467531]")
    assert len(one["segments"]) == 24 and "bif_bytes" not in one
    assert r["command_bus_requests"] > 40 * 8 * 8
    assert 0 < r["command_bus_utilisation"] < 1
    assert sum(s["bytes"] for s in r["segments"]) >= 40 * 8 * 1024
    assert ring_exp.tables([r])


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mapping": "[01234567]", "machine": "ps3"}, "has 8 tasks but ps3 has 6 SPEs"),
        ({"mapping": "[0124]"}, "not a permutation of 0..3"),
        ({"mapping": "[01234566]"}, "not a permutation"),
        ({"mapping": "[10234567]"}, "fix task 0"),
        ({"mapping": "[0a]"}, "not a list of SPE numbers"),
        ({"transmissions": 1}, "transmissions 1"),
        ({"packet": 16384, "buffers": 8}, "packet size 16384 does not fit"),
        ({"packet": 100}, "packet size 100"),
        ({"mode": "random"}, "mode 'random'"),
        ({"unidirectional": True, "buffers": 1}, "at least 2 buffers"),
    ],
)
def test_bad_ring_input(kwargs, match) -> None:
    kw = {"machine": "qs20", "transmissions": 4, **kwargs}
    with pytest.raises(UsageError, match=match):
        ring_exp.run(**kw)


def test_parse_mapping() -> None:
    assert parse_mapping("[024531]") == (0, 2, 4, 5, 3, 1)
    assert parse_mapping("0,2,1") == (0, 2, 1)
    assert format_mapping((0, 2, 1)) == "[021]"
    with pytest.raises(UsageError, match="empty"):
        parse_mapping("[]")


def test_more_tasks_than_spes() -> None:
    with pytest.raises(UsageError, match="7 tasks but ps3 has 6 SPEs"):
        explore("ps3", tasks=7, transmissions=4, runs=1, workers=1)


@pytest.mark.parametrize(
    ("text", "suffix", "match"),
    [
        ('{"edges": [[0, 1, 10], [1, 0]]}', ".json", "edge 2"),
        ('{"edges": [[0, 0, 10]]}', ".json", "does not send to itself"),
        ('{"edges": [[0, 1, 10], [0, 1, 5]]}', ".json", "appears twice"),
        ('{"edges": [[0, 1, -3]]}', ".json", "must be positive"),
        ("{oops", ".json", "not valid JSON"),
        ('{"tasks": 2, "edges": [[0, 3, 1]]}', ".json", "'tasks' is 2"),
        ('{"edges": [[0, 16, 1]]}', ".json", "17 tasks; the library takes at most 16"),
        ("source,destination,bytes\n0,1\n", ".csv", "line 2 has 2 fields"),
        ("src,dst\n", ".csv", "CSV header"),
        ("0,1,x\n", ".csv", "edge 1"),
    ],
)
def test_malformed_pattern_files(tmp_path, text, suffix, match) -> None:
    f = tmp_path / f"p{suffix}"
    f.write_text(text)
    with pytest.raises(UsageError, match=match):
        load_pattern(f)


def test_pattern_files(tmp_path) -> None:
    j = tmp_path / "p.json"
    j.write_text(json.dumps({"edges": [{"source": 0, "destination": 1, "bytes": 4096}, [1, 2, 100]]}))
    p = load_pattern(j)
    assert p.tasks == 3 and p.edges == ((0, 1, 4096), (1, 2, 100))
    c = tmp_path / "p.csv"
    c.write_text("source,destination,bytes\n0,1,4096\n1,2,100\n")
    assert load_pattern(c).edges == p.edges


# -- the explorer --------------------------------------------------------------------------


def test_explorer_ranks_every_mapping(tmp_path) -> None:
    recs = explore("ps3", tasks=4, transmissions=6, runs=2, workers=1, out=tmp_path / "r.parquet")
    assert len(recs) == len(all_mappings(4)) == 6
    assert [r["rank"] for r in recs] == list(range(1, 7))
    assert all(len(r["runs_ns"]) == 2 for r in recs)
    assert recs == sorted(recs, key=lambda r: r["mean_ns"])
    s = summary(recs)
    assert s["worst_over_best_mean"] >= 1 and s["worst_over_best_single"] >= s["worst_over_best_mean"]
    assert s["identity"] == "[0123]" and 1 <= s["identity_rank"] <= 6


def _contexts_of(rec: dict, run: int) -> list[int]:
    """The physical SPE of each context (logical SPE) in run ``run`` of a record."""
    mp = parse_mapping(rec["mapping"])
    out = [0] * len(mp)
    for task, logical in enumerate(mp):
        out[logical] = rec["placements"][run][task]
    return out


def test_the_mappings_of_a_run_share_its_placement(tmp_path) -> None:
    """Keller and Varbanescu start the threads once per run and run every mapping on them."""
    recs = explore("ps3", mode="default", tasks=4, transmissions=4, runs=3, workers=1, out=None)
    per_run = [{tuple(_contexts_of(r, i)) for r in recs} for i in range(3)]
    assert all(len(p) == 1 for p in per_run)  # one placement per run
    assert len(set().union(*per_run)) > 1  # drawn anew for each run
    old = explore("ps3", mode="default", tasks=4, transmissions=4, runs=3, workers=1, placement_per="mapping")
    assert any(len({tuple(_contexts_of(r, i)) for r in old}) > 1 for i in range(3))
    with pytest.raises(UsageError, match="placement per 'x'"):
        explore("ps3", tasks=4, transmissions=4, runs=1, workers=1, placement_per="x")


def test_a_sample_of_mappings_holds_the_named_ones() -> None:
    from cellsim.messaging.explorer import chosen_mappings

    a = chosen_mappings(8, 12, seed=1)
    assert a == chosen_mappings(8, 12, seed=1) and len(a) == 12 == len(set(a))
    assert {(0, 1, 2, 3, 4, 5, 6, 7), (0, 2, 4, 6, 7, 5, 3, 1), (0, 1, 3, 5, 7, 6, 4, 2)} <= set(a)
    assert chosen_mappings(4, 100, seed=1) == all_mappings(4)
    assert len(chosen_mappings(16, 5, seed=0)) == 5
    with pytest.raises(UsageError, match="give --mappings N"):
        chosen_mappings(9, None, seed=0)


def test_ring_runs_are_the_explorer_runs() -> None:
    """Run r of the ring experiment is run r of the explorer for that mapping."""
    recs = explore("ps3", mode="default", tasks=6, transmissions=4, runs=2, workers=1, mappings=3)
    r0 = recs[0]
    ring = ring_exp.run(machine="ps3", mode="default", transmissions=4, runs=2, mapping=r0["mapping"])
    assert [r["runtime_ns"] for r in ring] == r0["runs_ns"]


def test_same_seed_same_ranking_serial_or_parallel(tmp_path) -> None:
    a = explore("ps3", tasks=4, transmissions=6, runs=2, workers=1, seed=3)
    b = explore("ps3", tasks=4, transmissions=6, runs=2, workers=2, seed=3, out=tmp_path / "b.parquet")
    assert a == b
    c = explore("ps3", tasks=4, transmissions=6, runs=2, workers=1, seed=4)
    assert [r["runs_ns"] for r in a] != [r["runs_ns"] for r in c]


def test_mapping_experiment_tables_and_compare(tmp_path) -> None:
    recs = mapping_exp.run(
        machine="ps3", transmissions=6, runs=2, tasks=4, workers=1, out=tmp_path / "m.parquet"
    )
    assert mapping_exp.tables(recs)
    rows = mapping_exp.compare(recs)
    assert {r["id"] for r in rows} >= {"001-f3-average-straight", "001-f3-worst-over-best-mean"}
    visible = {"001-f3-average-straight", "001-f3-top-two-nearby"}  # the statements of Fig 3 alone
    assert all(r["held_out"] for r in rows if r["id"] not in visible)
    mapping_exp.plot(recs, tmp_path / "m.png")
    assert (tmp_path / "m.png").stat().st_size > 0


# -- the model and the optimizer ------------------------------------------------------------


def test_link_loads_follow_the_short_way() -> None:
    p = ring_pattern(8, packet=1000)
    ring_order = (0, 2, 4, 6, 7, 5, 3, 1)  # physical neighbours along the rings
    a = link_loads("qs20-1chip", p, ring_order, packet=1000)
    b = link_loads("qs20-1chip", p, (0, 7, 1, 6, 2, 5, 3, 4), packet=1000)
    assert a.byte_hops < b.byte_hops
    assert a.most <= b.most


def test_link_loads_know_two_chips_and_the_bif() -> None:
    """On a blade the model routes cross-chip edges over both EIBs and the BIF, and the
    matrices' traffic of tasks on chip 1 crosses too; on chip 0 it is the one-chip model."""
    p = ring_pattern(8, packet=1024)
    one = link_loads("qs20-1chip", p, tuple(range(8)))
    chip0 = link_loads("qs22", p, tuple(range(8)))
    assert np.array_equal(chip0.segments[0], one.segments[0]) and chip0.bif.sum() == 0
    assert chip0.segments[1].sum() == 0
    halves = link_loads("qs22", p, (0, 1, 2, 3, 8, 9, 10, 11))
    alternate = link_loads("qs22", p, (0, 8, 1, 9, 2, 10, 3, 11))
    assert 0 < halves.bif.sum() < alternate.bif.sum()
    assert halves.bif[0] > halves.bif[1] > 0  # row gets to chip 1 outweigh the 16-byte puts back
    assert alternate.most >= alternate.bif.max() * alternate.bif_weight > alternate.bif.max()
    sixteen = ring_pattern(16)
    loads = link_loads("qs22", sixteen, tuple(range(16)))
    assert loads.bif.sum() > 0 and loads.segments[1].sum() > 0


def test_spearman() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)


def test_optimizer_finds_a_good_mapping() -> None:
    p = ring_pattern(5)
    res = optimize("qs20", p, count=10, top=3, budget=8, sample=4, workers=1, variation=QUIET)
    assert res["simulated"] >= 3
    assert res["best_ns"] == min(res["evaluated"].values())
    recs = explore("qs20", tasks=5, transmissions=10, runs=1, workers=1, variation=QUIET, contexts="physical")
    by = {r["mapping"]: r["mean_ns"] for r in recs}
    assert by[res["best"]] == res["best_ns"]  # the optimizer's runs are the explorer's
    agree = model_agreement(recs, "qs20", p)
    assert -1 <= agree["rho_model"] <= 1


# -- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["run", "ring", "--mapping", "[01234566]"], ["[01234566]", "not a permutation"]),
        (["run", "ring", "--mapping", "[2013]", "--machine", "ps3"], ["[2013]"]),
        (["run", "ring", "--transmissions", "0"], ["--transmissions", "0"]),
        (["run", "ring", "--packet", "65536"], ["65536"]),
        (["run", "mapping", "--tasks", "7"], ["7 tasks", "6 SPEs"]),
        (["run", "mapping", "--cluster", "tcp://127.0.0.1:9", "--tasks", "3"], ["tcp://127.0.0.1:9"]),
        (["map", "--pattern", "nope", "--machine", "qs20"], ["'nope'"]),
    ],
)
def test_cli_errors_are_one_line(args, words, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CELLSIM_SWEEPS", str(tmp_path))
    one_error_line(invoke(*args), *words)


def test_cli_malformed_pattern_file(tmp_path) -> None:
    f = tmp_path / "bad.json"
    f.write_text('{"edges": [[0, 1]]}')
    one_error_line(invoke("map", "--pattern", str(f), "--machine", "qs20"), "bad.json", "edge 1")
    f.write_text('{"edges": [[0, 1, 10], [1, 2, 10], [2, 3, 10], [3, 4, 10], [4, 5, 10], [5, 6, 10]]}')
    one_error_line(invoke("map", "--pattern", str(f), "--machine", "ps3"), "7 tasks", "6 SPEs")


def test_cli_ring_and_map(tmp_path) -> None:
    r = invoke("run", "ring", "--transmissions", "30", "--mapping", "[02467531]", "--json", "-")
    assert r.exit_code == 0, r.output
    (rec,) = json.loads(r.stdout)
    assert rec["mapping"] == "[02467531]" and rec["bytes_ok"]
    f = tmp_path / "p.csv"
    f.write_text("source,destination,bytes\n0,1,2048\n1,0,2048\n2,3,512\n3,2,512\n")
    r = invoke(
        "map",
        "--pattern",
        str(f),
        "--machine",
        "qs20",
        "--count",
        "5",
        "--budget",
        "6",
        "--top",
        "3",
        "--sample",
        "3",
        "--workers",
        "1",
    )
    assert r.exit_code == 0, r.output
    assert "best mapping found" in r.stdout


def test_cli_map_sixteen_tasks_on_a_blade(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CELLSIM_SWEEPS", str(tmp_path))
    args = ["--count", "4", "--budget", "3", "--top", "2", "--sample", "2", "--workers", "1"]
    r = invoke("map", "--machine", "qs22", "--pattern", "ring", *args)
    assert r.exit_code == 0, r.output
    assert "ring: 16 tasks" in r.stdout and "1,307,674,368,000 mappings" in r.stdout
    one_error_line(invoke("map", "--machine", "qs22", "--pattern", "ring", "--tasks", "17"), "17", "16")
    ps3 = invoke("map", "--machine", "ps3", "--pattern", "ring", "--tasks", "8")
    one_error_line(ps3, "8 tasks", "6 SPEs")


def test_cli_mapping_resume(tmp_path) -> None:
    out = tmp_path / "m.parquet"
    args = ["run", "mapping", "--tasks", "4", "--transmissions", "4", "--runs", "2", "--workers", "1"]
    args += ["--mode", "default"]
    r1 = invoke(*args, "--out", str(out), "--json", "-")
    r2 = invoke(*args, "--out", str(out), "--resume", "--json", "-")
    assert r1.exit_code == r2.exit_code == 0
    assert json.loads(r1.stdout) == json.loads(r2.stdout)


def test_seed_001_quotes_are_in_the_paper() -> None:
    import re
    from pathlib import Path

    from cellsim.published import entries

    seeds = Path(__file__).resolve().parents[3] / "shared" / "seeds"
    papers = list(seeds.glob("001_*.txt")) if seeds.is_dir() else []
    if not papers:
        pytest.skip("the seed papers are not next to the repository")
    text = " ".join(papers[0].read_text().split())
    for e in entries(paper="001"):
        for piece in re.split(r"\s*\[page break\]\s*", e.quote):
            assert " ".join(piece.split()) in text, e.id


def test_the_documented_pattern_files_load(tmp_path) -> None:
    """Every example of docs/messaging.md's 'Pattern files' loads as the text says."""
    import re
    from pathlib import Path

    from cellsim.messaging.patterns import load_pattern

    doc = (Path(__file__).resolve().parents[2] / "docs" / "messaging.md").read_text()
    section = doc[doc.index("### Pattern files") :]
    section = section[: section.index("\n## ")]
    blocks = re.findall(r"```(json|text)\n(.*?)```", section, re.S)
    assert len(blocks) == 4
    loaded = []
    for i, (kind, text) in enumerate(blocks):
        f = tmp_path / f"p{i}.{'json' if kind == 'json' else 'csv'}"
        f.write_text(text)
        loaded.append(load_pattern(f))
    assert [p.tasks for p in loaded] == [4, 2, 3, 3]
    assert loaded[1].edges == ((0, 1, 4096), (1, 0, 512))
