"""The contention experiments from the command line and in ``cellsim reproduce``
(reduced options), and seed 002's quotes in published.py."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cellsim.experiments import get
from cellsim.published import entries
from cellsim.tools.cli import cli
from cellsim.tools.report import reproduce

SHARED = Path(__file__).resolve().parents[2].parent / "shared"

SMALL: dict[str, dict[str, Any]] = {
    "hotspot": {"targets": ["ls"], "spes": [1, 2], "count": 16},
    "collective": {"patterns": ["pairwise", "uniform", "neighbor"], "count": 16},
    "latency-hist": {"spes": 2, "count": 16},
    "spe-mem": {"spes": [1, 2, 4, 8], "sizes": [16384], "mb_per_spe": 1},
    "spe-spe": {"sizes": [512, 1024, 16384], "waits": [1, 0], "mb": 1},
    "couples": {"pairs": [1, 4], "sizes": [1024], "placements": 2, "mb_per_spe": 1},
    "cycle": {"spes": [2, 8], "sizes": [1024], "placements": 2, "mb_per_spe": 1},
}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_hotspot_json_from_the_command_line() -> None:
    r = invoke(
        "run", "hotspot", "--target", "ls", "--op", "get", "--spes", "1,2", "--count", "16", "--json", "-"
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [(d["machine"], d["target"], d["op"], d["spes"]) for d in data] == [
        ("qs20-1chip", "ls", "get", 1),
        ("qs20-1chip", "ls", "get", 2),
    ]
    assert {"aggregate_gbs", "per_spe_gbs"} <= set(data[0])


def test_seed_002_runs_on_blade21_unless_told(tmp_path: Path) -> None:
    args = ["run", "spe-spe", "--sizes", "4096", "--wait-every", "0", "--mb", "1", "--json", "-"]
    assert json.loads(invoke(*args).stdout)[0]["machine"] == "blade21"
    assert json.loads(invoke(*args, "--machine", "qs20-1chip").stdout)[0]["machine"] == "qs20-1chip"


def test_couples_table_names_best_and_worst_placements(tmp_path: Path) -> None:
    png = tmp_path / "c.png"
    r = invoke(
        "run", "couples", "--pairs", "2", "--mode", "list", "--sizes", "2048", "--placements", "2",
        "--mb-per-spe", "1", "--plot", str(png),
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "best placement" in r.stdout and "worst placement" in r.stdout
    assert "002-f13-couples-2-list" in r.stdout
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_collective_placements_option() -> None:
    r = invoke(
        "run", "collective", "--pattern", "complement", "--op", "put", "--placements", "2", "--count", "8"
    )
    assert r.exit_code == 0, r.output
    assert "best and worst placements" in r.stdout and "withheld" in r.stdout


def test_bad_option_is_one_line() -> None:
    r = invoke("run", "cycle", "--spes", "9")
    assert r.exit_code == 2 and r.stderr.startswith("error: SPE 9 is not between 2 and 8")


def test_reproduce_writes_the_contention_results(tmp_path: Path) -> None:
    exps = [dataclasses.replace(get(n), run=functools.partial(get(n).run, **kw)) for n, kw in SMALL.items()]
    results = reproduce(tmp_path, experiments=exps)
    assert [r.experiment.name for r in results] == list(SMALL)
    for r in results:
        name = r.experiment.name
        assert json.loads((tmp_path / f"{name}.json").read_text()) == r.records
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert r.records[0]["machine"] == r.experiment.machine
    html = (tmp_path / "report.html").read_text()
    for held in ("000-f6b-uniform", "000-f7-worst", "002-f13-couples-4", "002-f16-cycle-4-8"):
        assert held in html
    assert "each experiment&#39;s own (blade21, qs20-1chip)" in html
    # the experiments' own tables: couples and cycle name their best and worst placements
    assert html.count("best and worst placements") >= 2 and "<caption>" in html


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@pytest.mark.skipif(not (SHARED / "seeds").is_dir(), reason="the seed papers are not next to the repository")
def test_seed_002_quotes_are_in_the_paper() -> None:
    """Seed 002's quotes, compared without spacing, punctuation and line-end hyphens."""
    (paper,) = (SHARED / "seeds").glob("002_*.txt")
    text = _words(paper.read_text())
    for e in entries(paper="002"):
        assert _words(e.quote) in text, e.id
