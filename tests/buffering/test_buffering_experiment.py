"""The buffering experiment (seed 004, Figures 10-12), its comparison and its report."""

from __future__ import annotations

import dataclasses
import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from cellsim import UsageError
from cellsim.experiments import buffering, get
from cellsim.published import entries
from cellsim.tools.report import reproduce

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
REQUIRED = {"figure", "kernel", "scheme", "block", "space_bytes", "c_scale", "simulated_mbs", "predicted_mbs"}


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return buffering.run(kernels=["t1", "t3"], blocks=64)


def by(records: list[dict[str, Any]], **where: Any) -> list[dict[str, Any]]:
    return [r for r in records if all(r[k] == v for k, v in where.items())]


def test_registered_with_its_options() -> None:
    exp = get("buffering")
    assert exp.run is buffering.run and exp.paper == "004"
    assert {o.name for o in exp.options} == {"kernels", "figures", "blocks", "S", "D1"}
    assert {o.cli_flag for o in exp.options} >= {"--S", "--D1", "--kernel", "--figure"}


def test_records(records: list[dict[str, Any]]) -> None:
    n10, n11 = 3 * len(buffering.FIG10_BLOCKS), 3 * len(buffering.FIG11_SPACE_BLOCKS)
    n12 = 3 * len(buffering.FIG10_BLOCKS)
    assert len(records) == 2 * (n10 + n11 + n12)
    for r in records:
        assert set(r) >= REQUIRED and set(r) == set(buffering.FIELDS)
        assert r["figure"] in (10, 11, 12) and r["kernel"] in ("t1", "t3") and r["scheme"] in (1, 2, 3)
        assert r["simulated_mbs"] > 0 and r["predicted_mbs"] > 0
        assert r["n"] == 64 * r["block"] and r["machine"] == "qs20"
        assert r["space_bytes"] == (r["scheme"] * r["block"] * 24 if r["figure"] != 11 else r["space_bytes"])
    json.dumps(records)
    assert {r["c_scale"] for r in by(records, figure=12)} == {0.9, 1.0, 1.1}
    assert {r["c_scale"] for r in records if r["figure"] != 12} == {1.0}
    assert all(r["dma_only_mbs"] for r in by(records, figure=10)) and not any(
        r["dma_only_mbs"] for r in records if r["figure"] != 10
    )


def test_figure_11_gives_every_scheme_the_same_space(records: list[dict[str, Any]]) -> None:
    for big in buffering.FIG11_SPACE_BLOCKS:
        pts = by(records, figure=11, kernel="t1", space_bytes=24 * big)
        assert sorted((r["scheme"], r["block"]) for r in pts) == [(1, big), (2, big // 2), (3, big // 3)]


def test_figure_12_is_figure_10s_2b_simulation(records: list[dict[str, Any]]) -> None:
    ten = {(r["kernel"], r["block"]): r["simulated_mbs"] for r in by(records, figure=10, scheme=2)}
    for r in by(records, figure=12):
        assert r["simulated_mbs"] == ten[(r["kernel"], r["block"])]
    for r in by(records, figure=12, c_scale=1.1):
        base = by(records, figure=12, kernel=r["kernel"], block=r["block"], c_scale=1.0)[0]
        assert r["predicted_mbs"] <= base["predicted_mbs"]


def test_model_with_fitted_constants_is_within_10_percent_of_the_simulation(
    records: list[dict[str, Any]],
) -> None:
    for r in by(records, figure=12, c_scale=1.0):
        assert r["predicted_mbs"] == pytest.approx(r["simulated_mbs"], rel=0.10), r


def test_the_visible_statements(records: list[dict[str, Any]]) -> None:
    """S and D1 (fitted and checked on the blade), t1 DMA-bound, t3 computation-bound,
    2b/3b flat at large bf and alike, 1b lower,
    1b best with a small fixed space, relative performance predicted."""
    rows = buffering.compare(records)
    got = {(r["id"], r["point"]): r for r in rows}
    ids = {r["id"] for r in rows}
    assert {
        "004-s4-S",
        "004-s4-D1",
        "004-f10-dma-bound",
        "004-f10-computation-bound",
        "004-f10-flat",
        "004-f10-2b-3b-similar",
        "004-f10-1b-lower",
        "004-f11-1b-wins-small",
        "004-f11-large-conforms",
        "004-f12-relative",
        "004-f12-overestimate",
        "004-f12-c-variation-mean",
        "004-f12-c-variation-max",
    } == ids
    for r in rows:
        if r["held_out"]:
            assert r["published"] is None and r["within"] is None and r["error_pct"] is None
        else:
            assert r["within"], (r["id"], r["point"], r["simulated"])
    dma = [r for (i, p), r in got.items() if i == "004-f10-dma-bound"]
    assert [r["point"].split(",")[0] for r in dma] == ["t1"]  # the records run t1 and t3
    comp = [r for (i, p), r in got.items() if i == "004-f10-computation-bound"]
    assert [r["point"].split(",")[0] for r in comp] == ["t3"]


def test_t1_and_t2_are_compared_with_each_other() -> None:
    recs = buffering.run(kernels=["t1", "t2"], figures=["10"], blocks=16)
    (row,) = [r for r in buffering.compare(recs) if r["id"] == "004-f10-t1-t2-same-peak"]
    peaks = {r["kernel"]: r["simulated_mbs"] for r in by(recs, scheme=2, block=max(buffering.FIG10_BLOCKS))}
    assert row["simulated"] == pytest.approx(peaks["t2"] / peaks["t1"])
    # On the blade one SPE's path to memory makes D = 24 x 0.0883 = 2.12 ns per
    # iteration, above t2's C_inner of 1.73 ns: t2 is DMA-bound like t1 (on one
    # chip of seed 000's board it was computation-bound: D = 1.18 ns).
    assert row["within"] is True


def test_held_out_results_are_registered_without_values() -> None:
    held = entries(paper="004", held_out=True)
    assert {e.id for e in held} == {
        "004-f12-overestimate",
        "004-f12-c-variation-mean",
        "004-f12-c-variation-max",
    }
    assert all(e.value is None and "[held out for validation]" in e.quote for e in held)
    assert {e.value for e in entries(paper="004", held_out=False) if e.id.startswith("004-s4")} == {
        130.0,
        0.0877,
    }


@pytest.mark.skipif(not (SHARED / "seeds").is_dir(), reason="the seed papers are not next to the repository")
def test_quotes_are_in_seed_004() -> None:
    (paper,) = (SHARED / "seeds").glob("004_*.txt")
    text = " ".join(paper.read_text().split())
    for e in entries(paper="004"):
        assert " ".join(e.quote.split()) in text, e.id


def test_bad_options() -> None:
    with pytest.raises(UsageError, match="kernel 't9' is not one of t1, t2, t3, t4"):
        buffering.run(kernels=["t9"])
    with pytest.raises(UsageError, match="figure '13' is not one of 10, 11, 12"):
        buffering.run(figures=[13])
    with pytest.raises(UsageError, match="blocks must be a positive integer, not 0"):
        buffering.run(blocks=0)
    with pytest.raises(UsageError, match="D1 must be a positive number of ns per byte, not -1"):
        buffering.run(kernels=["t1"], figures=["12"], blocks=4, S=130.0, D1=-1.0)


def test_report_includes_the_figures(tmp_path: Path) -> None:
    small = dataclasses.replace(
        buffering.EXPERIMENT,
        run=partial(buffering.run, kernels=["t2", "t4"], figures=["10", "12"], blocks=16),
    )
    (result,) = reproduce(tmp_path, experiments=[small])
    assert result.records and result.comparison
    assert (tmp_path / "buffering.png").read_bytes()[:4] == b"\x89PNG"
    html = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," in html and "Figures 10, 11, 12" in html
    assert "004-f12-overestimate" in html and "withheld" in html
    assert re.search(r"004-f10-computation-bound", html)
    assert json.loads((tmp_path / "buffering.compare.json").read_text())
