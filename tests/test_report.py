"""report.html: one row per published claim, links to the explanations, the
figures of the whole run, provenance, regenerating commands, data links, and
one style for published values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cellsim.experiments import all_experiments, get
from cellsim.experiments._common import compare_row
from cellsim.explanations import SECTIONS, docs_dir, explanation, heading_anchor
from cellsim.published import get as published
from cellsim.report import ExperimentResult, claims, reproduce, write_html


def _rows() -> list[dict]:
    """The 91 ns claim at three sizes: two agree, one is 20% off."""
    entry = published("000-f4a-mem-put-91ns")
    return [compare_row(entry, f"put memory {s} B", v) for s, v in ((64, 90.0), (128, 93.0), (512, 109.2))]


def test_claims_group_points_with_their_error_range() -> None:
    (c,) = claims(_rows())
    assert c["id"] == "000-f4a-mem-put-91ns" and c["points"] == 3
    assert c["simulated"] == (90.0, 109.2) and c["within"] is False
    assert c["error_pct"] == pytest.approx((-1.0989, 20.0), abs=1e-3)


def _report(tmp_path: Path) -> str:
    res = ExperimentResult(get("dma-latency"), [{"machine": "qs20-1chip"}], _rows(), 1.5)
    for kind, name in (("json", "dma-latency.json"), ("parquet", "dma-latency.parquet")):
        res.files[kind] = tmp_path / name
        res.files[kind].write_text("[]")
    write_html(tmp_path / "report.html", [res], machine=None, seed=3, native=True)
    return (tmp_path / "report.html").read_text()


def test_one_row_per_claim_with_the_range_of_error(tmp_path: Path) -> None:
    html = _report(tmp_path)
    assert html.count('<small class="id">000-f4a-mem-put-91ns</small>') == 1
    assert "90.00 ns to 109.20 ns" in html and "-1.1% to +20.0%" in html
    assert "0 of 1 published claims reproduced (2 of 3 points)" in " ".join(html.split())


def test_a_disagreement_links_to_its_explanation(tmp_path: Path) -> None:
    html = _report(tmp_path)
    (href,) = set(re.findall(r'<a href="([^"]+)">why: ', html))
    if docs_dir() is None:
        pytest.skip("no docs/ beside this cellsim")
    doc, anchor = href.split("#")
    text = (tmp_path / doc).read_text()
    headings = [h.lstrip("#").strip() for h in text.splitlines() if h.startswith("#")]
    assert anchor in [heading_anchor(h) for h in headings], anchor


def test_provenance_command_and_data_links(tmp_path: Path) -> None:
    html = _report(tmp_path)
    for what in (
        "cellsim</dt>",
        "git commit</dt>",
        "machine file qs20-1chip</dt><dd>sha256 ",
        "host</dt>",
        "wall time</dt>",
        "command</dt>",
    ):
        assert what in html, what
    assert "cellsim run dma-latency --machine qs20-1chip --seed 3" in html
    assert '<a href="dma-latency.json">dma-latency.json</a>' in html
    assert '<a href="dma-latency.parquet">' in html
    assert html.count("data:image/png;base64,") == 2, "the agreement figure and the scatter"
    assert "Kistler, M. Perrone, F. Petrini" in html


@pytest.mark.parametrize("name", [e.name for e in all_experiments()])
def test_every_experiment_has_an_explanation_that_exists(name: str) -> None:
    assert name in SECTIONS
    if docs_dir() is None:
        pytest.skip("no docs/ beside this cellsim")
    e = explanation(name)
    assert e is not None and e.href is not None, f"{SECTIONS[name]} is not a heading of docs/"


def test_published_values_share_one_style() -> None:
    from matplotlib import rcParams
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    from cellsim.experiments._common import draw_published
    from cellsim.style import PUBLISHED_COLOR, figure_style

    with figure_style():
        cycle = [to_hex(c["color"]) for c in rcParams["axes.prop_cycle"]]
        ax = Figure().subplots()
        draw_published(ax, published("000-f4a-mem-put-91ns"))
    assert to_hex(PUBLISHED_COLOR) not in cycle, "simulated curves never take the published colour"
    (line,) = ax.get_lines()
    assert to_hex(line.get_color()) == to_hex(PUBLISHED_COLOR) and line.get_markerfacecolor() == "none"


def test_latency_histogram_gives_each_spe_its_own_row(tmp_path: Path, monkeypatch) -> None:
    from matplotlib.figure import Figure

    from cellsim.experiments import latency_hist

    drawn: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: drawn.append(self))
    recs = [
        {
            "machine": "qs20-1chip",
            "op": op,
            "spe": s,
            "latencies_ns": [1000.0 + s, 1100.0],
            "mode_ns": 1000.0,
            "max_ns": 1100.0,
            "min_ns": 1000.0,
        }
        for op in ("put", "get")
        for s in range(8)
    ]
    latency_hist.plot(recs, tmp_path / "h.png")
    (fig,) = drawn
    assert len(fig.axes) == 16


@pytest.mark.slow
def test_reproduce_names_the_command_line(tmp_path: Path) -> None:
    reproduce(tmp_path, experiments=[get("dma-latency")], command="cellsim reproduce --only dma-latency")
    html = (tmp_path / "report.html").read_text()
    assert "cellsim reproduce --only dma-latency" in html
