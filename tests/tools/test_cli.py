"""The ``cellsim`` command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import cellsim
from cellsim.experiments import all_experiments
from cli_helpers import invoke, one_error_line

SMALL = ["--op", "put", "--target", "ls", "--sizes", "128,256"]


def test_json_to_stdout_is_only_json() -> None:
    r = invoke("run", "dma-latency", *SMALL, "--json", "-")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [(d["op"], d["target"], d["size"]) for d in data] == [("put", "ls", 128), ("put", "ls", 256)]
    assert {"latency_ns", "bandwidth_gbs"} <= set(data[0])


def test_run_prints_points_and_comparison() -> None:
    r = invoke("run", "dma-latency", *SMALL)
    assert r.exit_code == 0, r.output
    assert "time per DMA" in r.stdout
    assert "000-t1-spe-put-latency" in r.stdout and "90.6 ns" in r.stdout
    assert "000 Kistler et al. 2006" in r.stdout, "the ids are explained"
    assert "published values reproduced" in r.stdout


def test_run_batch_pivot_table() -> None:
    r = invoke("run", "dma-batch", *SMALL, "--batches", "1,4,0", "--count", "64")
    assert r.exit_code == 0, r.output
    assert "nonblocking" in r.stdout and "batch 4" in r.stdout


def test_python_programs_give_the_same_json() -> None:
    native = invoke("run", "dma-latency", *SMALL, "--count", "64", "--json", "-")
    python = invoke("run", "dma-latency", *SMALL, "--count", "64", "--json", "-", "--python")
    assert native.exit_code == python.exit_code == 0
    assert json.loads(native.stdout) == json.loads(python.stdout)


def test_output_files(tmp_path: Path) -> None:
    j, p, c = tmp_path / "x.json", tmp_path / "x.png", tmp_path / "x.csv"
    r = invoke("run", "dma-latency", *SMALL, "--json", str(j), "--plot", str(p), "--csv", str(c))
    assert r.exit_code == 0, r.output
    assert len(json.loads(j.read_text())) == 2
    assert p.read_bytes()[:4] == b"\x89PNG"
    assert list(pd.read_csv(c)["size"]) == [128, 256]
    assert "000-t1-spe-put-latency" in r.stdout  # the tables are still printed


def test_seed_and_machine_options() -> None:
    r = invoke("run", "dma-latency", *SMALL, "--seed", "7", "--machine", "qs22", "--json", "-")
    assert r.exit_code == 0, r.output
    assert {(d["seed"], d["machine"]) for d in json.loads(r.stdout)} == {(7, "qs22")}


def test_experiment_help_lists_its_options() -> None:
    for name, flags in {"dma-latency": ["--op", "--target", "--sizes"], "dma-batch": ["--batches"]}.items():
        r = invoke("run", name, "--help")
        assert r.exit_code == 0
        for flag in ["--machine", "--seed", "--json", "--plot", "--csv", "--python", *flags]:
            assert flag in r.stdout
    r = invoke("run", "--help")
    assert "dma-latency" in r.stdout and "dma-batch" in r.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["run", "nope"],
        ["run", "dma-latency", "--machine", "nope"],
        ["run", "dma-latency", "--sizes", "24"],
        ["run", "dma-latency", "--sizes", "x"],
        ["run", "dma-latency", "--op", "copy"],
        ["run", "dma-latency", "--count", "0"],
        ["reproduce", "--machine", "nope"],
        ["machine", "show", "nope"],
        ["bench", "speed", "--traffic", "uniform", "--cycles", "0"],
        ["bench", "speed", "--traffic", "uniform", "--cycles", "-5"],
        ["bench", "speed", "--traffic", "uniform", "--rate", "2"],
        ["bench", "speed", "--pairs", "0"],
        ["bench", "switch", "--calls", "-1"],
        ["frobnicate"],
    ],
)
def test_errors_are_one_line(args: list[str]) -> None:
    one_error_line(invoke(*args))


def test_unknown_experiment_names_the_known_ones() -> None:
    r = invoke("run", "nope")
    assert "dma-latency" in r.stderr and "dma-batch" in r.stderr


def test_machines_and_machine_show() -> None:
    r = invoke("machines")
    assert r.exit_code == 0
    for name in cellsim.machines():
        assert name in r.stdout
    r = invoke("machine", "show", "qs20")
    assert r.exit_code == 0
    assert r.stdout == cellsim.machine_toml("qs20")


def test_errors_catalogue() -> None:
    r = invoke("errors")
    assert r.exit_code == 0
    for kind, _rule in cellsim.error_catalogue():
        assert kind in r.stdout


def test_bench_group_exists() -> None:
    r = invoke("bench", "--help")
    assert r.exit_code == 0
    assert "Benchmarks of the simulator" in r.stdout


def test_bench_records_say_how_the_engine_was_built() -> None:
    r = invoke("bench", "speed", "--traffic", "uniform", "--cycles", "2000", "--json", "-")
    assert r.exit_code == 0, r.output
    record = json.loads(r.stdout)
    # "release" from pip install, "pgo" from make pgo, "debug" from a debug build
    assert record["engine_build"] == cellsim._engine.BUILD
    assert cellsim._engine.BUILD in {"release", "pgo", "debug"}
    assert record["bus_transfers"] > 0
    version = invoke("--version")
    assert f"engine build: {cellsim._engine.BUILD}" in version.stdout


def test_no_arguments_prints_help() -> None:
    r = invoke()
    assert r.exit_code == 0
    assert "reproduce" in r.stdout and "machines" in r.stdout


def test_reproduce_writes_every_file(tmp_path: Path) -> None:
    out = tmp_path / "results"
    # the seed 000 and 004 experiments at their defaults (the contention and seed 002
    # experiments take minutes: tests/experiments/test_contention_cli.py reproduces them reduced)
    fast = ("dma-latency", "dma-batch", "buffering")
    r = invoke("reproduce", "--out", str(out), *(a for n in fast for a in ("--only", n)))
    assert r.exit_code == 0, r.output
    for name in ("dma-latency", "dma-batch"):
        records = json.loads((out / f"{name}.json").read_text())
        assert records and all("bandwidth_gbs" in x for x in records)
        df = pd.read_parquet(out / f"{name}.parquet")
        assert len(df) == len(records)
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(fast) + 2  # and the agreement figure and scatter
    assert "000-t1-spe-put-latency" in html and "000-f5b-mem-put-nonblocking" in html
    assert "<img" in html and "src='http" not in html  # self-contained
    assert "report.html" in r.stdout and "published values reproduced" in r.stdout


def test_entry_point_errors_without_traceback() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "cellsim.tools.cli", "run", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "error: unknown experiment 'nope': known experiments are "
        + ", ".join(e.name for e in all_experiments())
    ]


def test_report_shows_held_out_results_as_simulated_only(tmp_path: Path) -> None:
    from cellsim.experiments import get
    from cellsim.experiments._common import compare_row
    from cellsim.published import Published
    from cellsim.tools.report import ExperimentResult, write_html

    hidden = Published(
        "000-f6b-x",
        "000",
        "Fig 6b",
        "a held-out result",
        "dma-latency",
        {},
        "bandwidth_gbs",
        None,
        "GB/s",
        "value",
        held_out=True,
    )
    row = compare_row(hidden, "all SPEs", 123.456)
    write_html(
        tmp_path / "r.html",
        [ExperimentResult(get("dma-latency"), [], [row], 0.0)],
        machine="qs20",
        seed=0,
        native=True,
    )
    html = (tmp_path / "r.html").read_text()
    assert "123.46 GB/s" in html and "withheld" in html


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--plot", "fig.bmp"], ["--plot", "fig.bmp", "png"]),
        (["--plot", "fig"], ["--plot", "no extension"]),
        (["--json", "no/such/dir/x.json"], ["--json", "does not exist"]),
        (["--csv", "no/such/dir/x.csv"], ["--csv", "does not exist"]),
        (["--trace", "no/such/dir/t.json"], ["--trace", "does not exist"]),
    ],
)
def test_outputs_are_checked_before_running(args: list[str], words: list[str], monkeypatch) -> None:
    """A bad output path or format is one error before the experiment runs, not a traceback after it."""
    from cellsim.experiments import _common

    def never(*a: object, **k: object) -> None:
        raise AssertionError("the experiment ran")

    monkeypatch.setattr(_common, "dma_point", never)
    r = invoke("run", "dma-latency", *args)
    one_error_line(r, *words)


def test_other_commands_check_their_outputs(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("raise SystemExit('ran')\n")
    one_error_line(invoke("trace", "-o", str(tmp_path / "no" / "t.json"), str(script)))
    (tmp_path / "file").write_text("")
    one_error_line(invoke("reproduce", "--out", str(tmp_path / "file"), "--only", "dma-latency"))
    one_error_line(invoke("mpirun", "-n", "1", "--trace", str(tmp_path / "no" / "t.json"), str(script)))


def test_figures_and_report_say_what_is_missing(monkeypatch) -> None:
    """matplotlib and Jinja2 are dependencies; in an environment that lost one, the
    core still runs, and --plot and reproduce say what to install."""
    import importlib.util

    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "matplotlib" else find(n, *a))
    for args in (["run", "dma-latency", "--plot", "x.png"], ["reproduce", "--only", "dma-latency"]):
        r = invoke(*args)
        one_error_line(r)
        assert "pip install matplotlib" in r.stderr
    assert invoke("run", "dma-latency", "--sizes", "128", "--op", "get", "--target", "ls").exit_code == 0
