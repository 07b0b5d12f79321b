"""``cellsim plan-buffers``, ``cellsim run buffering`` and ``cellsim bench planner`` on the command line."""

from __future__ import annotations

import json

import pytest

from cli_helpers import invoke, one_error_line

T1 = ["--c-inner", "0.51", "--c-outer", "300", "--bytes-per-iter", "24", "--budget", "65536"]


def test_plan_buffers_prints_the_plan_and_the_alternatives() -> None:
    r = invoke("plan-buffers", *T1)
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "recommended: k = 2 buffers, block factor" in out
    assert "predicted throughput:" in out and "MB/s" in out
    assert "fit qs20" in out and "S = 130 ns, D1 = 0.0877 ns/B" in out  # the paper's beside the fit
    assert "alternatives" in out and "dma-bound" in out and "serial" in out


def test_plan_buffers_json() -> None:
    r = invoke("plan-buffers", *T1, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["k"] == 2 and d["bf"] % 2 == 0 and d["regime"] in ("dma-bound", "incomplete overlap")
    assert d["predicted_mbs"] > 0 and d["space_bytes"] <= 65536 and d["machine"] == "qs20"
    assert [a["k"] for a in d["alternatives"]] == [1, 2, 3, 4]
    assert d["constants"] == "fit qs20"


def test_plan_buffers_with_the_papers_constants_and_cycles() -> None:
    d = json.loads(invoke("plan-buffers", *T1, "--S", "130", "--D1", "0.0877", "--json").stdout)
    assert (d["S_ns"], d["D1_ns_per_byte"], d["constants"]) == (130.0, 0.0877, "given")
    ns = json.loads(invoke("plan-buffers", *T1, "--json").stdout)
    cyc = [
        "--c-inner", "1.632", "--c-outer", "960", "--unit", "cycles",
        "--bytes-per-iter", "24", "--budget", "65536", "--json",
    ]  # fmt: skip
    d = json.loads(invoke("plan-buffers", *cyc).stdout)
    assert (d["k"], d["bf"]) == (ns["k"], ns["bf"]) and d["c_inner_ns"] == pytest.approx(0.51)
    d = json.loads(invoke("plan-buffers", *T1, "--inputs", "8,8", "--outputs", "8", "--json").stdout)
    assert d["granularity"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--c-inner", "-1"], "error: C_inner must be a positive number of ns, not -1.0"),
        (["--c-inner", "0"], "error: C_inner must be a positive number of ns, not 0.0"),
        (["--c-outer", "-5"], "error: C_outer must be a non-negative number of ns, not -5.0"),
        (["--budget", "20"], "error: a budget of 20 bytes is smaller than one buffer of one element"),
        (["--budget", "300000"], "error: a budget of 300000 bytes does not fit in the local store"),
        (["--machine", "cray1"], "error: unknown machine 'cray1'"),
        (["--S", "0"], "error: S must be a positive number of ns, not 0.0"),
        (["--D1", "-0.1"], "error: D1 must be a positive number of ns per byte, not -0.1"),
        (["--inputs", "8,8", "--outputs", "4"], "error: the streams move 20 bytes per iteration"),
        (["--inputs", "8,3", "--outputs", "8"], "element size 3 is not one of 1, 2, 4, 8"),
        (["--margin", "0.5"], "error: the margin on the set-up time must be a number >= 1, not 0.5"),
    ],
)
def test_plan_buffers_bad_input(args: list[str], message: str) -> None:
    base = dict(zip(T1[::2], T1[1::2], strict=True))
    extra = dict(zip(args[::2], args[1::2], strict=True))
    argv = [x for kv in {**base, **extra}.items() for x in kv]
    assert message in one_error_line(invoke("plan-buffers", *argv))


def test_run_buffering_json_and_constants() -> None:
    r = invoke("run", "buffering", "--figure", "12", "--kernel", "t3", "--blocks", "16", "--json", "-")
    assert r.exit_code == 0, r.output
    recs = json.loads(r.stdout)
    assert len(recs) == 11 * 3
    need = {"figure", "kernel", "scheme", "block", "space_bytes", "c_scale", "simulated_mbs", "predicted_mbs"}
    assert all(need <= set(x) for x in recs)
    small = ["--figure", "12", "--kernel", "t3", "--blocks", "16"]
    paper = invoke("run", "buffering", *small, "--S", "130", "--D1", "0.0877", "--json", "-")
    for x in json.loads(paper.stdout):
        assert x["predicted_mbs"] == pytest.approx(x["paper_predicted_mbs"]) and x["constants"] == "given"


def test_run_buffering_tables_and_comparison() -> None:
    r = invoke("run", "buffering", "--figure", "12", "--kernel", "t3", "--kernel", "t4", "--blocks", "16")
    assert r.exit_code == 0, r.output
    assert "Figure 12: 2b" in r.stdout and "C x 0.9" in r.stdout
    assert "004-f12-relative" in r.stdout and "004-f12-overestimate" in r.stdout and "withheld" in r.stdout
    assert "004-s4-S" in r.stdout and "130 ns" in r.stdout


def test_run_buffering_bad_options() -> None:
    assert "kernel" in one_error_line(invoke("run", "buffering", "--kernel", "t9"))
    assert "--S" in one_error_line(invoke("run", "buffering", "--S", "-1"))
    assert "--blocks" in one_error_line(invoke("run", "buffering", "--blocks", "0"))


def test_bench_planner_json() -> None:
    r = invoke("bench", "planner", "--loops", "2", "--no-figure12", "--per-octave", "1", "--json", "-")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert {"model_mean_error", "model_max_error", "optimal_fraction", "loops"} <= set(d)
    assert d["loops"] == 2 and 0 <= d["optimal_fraction"] <= 1
    assert 0 <= d["model_mean_error"] <= d["model_max_error"]
    assert len(d["per_loop"]) == 2 and all(x["fraction_of_best"] <= 1 for x in d["per_loop"])
    assert 0 <= d["refined_optimal_fraction"] <= 1
    for x in d["per_loop"]:
        # The best is over everything simulated, the refined short list included.
        assert x["refined_fraction_of_best"] <= 1 and 1 <= x["refined_trials"] <= x["points"] + 12


def test_bench_planner_text() -> None:
    r = invoke("bench", "planner", "--loops", "1", "--no-figure12", "--per-octave", "1")
    assert r.exit_code == 0, r.output
    assert "optimal_fraction" in r.stdout and "model_mean_error" in r.stdout


def test_plan_buffers_simulate_refines_on_the_chip() -> None:
    r = invoke("plan-buffers", *T1, "--simulate")
    assert r.exit_code == 0, r.output
    assert "simulated on the chip" in r.stdout and "<- model" in r.stdout
    assert "recommended after simulation: k =" in r.stdout
    d = json.loads(invoke("plan-buffers", *T1, "--simulate", "--json").stdout)
    sim = d["simulated"]
    trials = {(t["k"], t["bf"]): t["simulated_mbs"] for t in sim["trials"]}
    assert (d["k"], d["bf"]) in trials and (sim["k"], sim["bf"]) in trials
    assert sim["simulated_mbs"] >= 0.99 * max(trials.values())


def test_plan_buffers_simulate_needs_the_streams() -> None:
    argv = [*T1[:5], "16", *T1[6:], "--simulate"]
    assert "give --inputs and --outputs" in one_error_line(invoke("plan-buffers", *argv))
    r = invoke("plan-buffers", *argv, "--inputs", "8", "--outputs", "8", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["simulated"]["k"] >= 1
