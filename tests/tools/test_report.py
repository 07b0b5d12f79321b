"""report.html: one row per published claim, links to the explanations, the
figures of the whole run, provenance, regenerating commands, data links, and
one style for published values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cellsim.experiments import all_experiments, get
from cellsim.experiments._common import compare_row
from cellsim.published import get as published
from cellsim.tools.explanations import SECTIONS, docs_dir, explanation
from cellsim.tools.report import ExperimentResult, claims, reproduce, write_html


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
    assert (
        html.count('Kistler 2006 · f4a · mem-put-91ns <span class="key">(000-f4a-mem-put-91ns)</span>') == 1
    )
    assert "90.00 ns to 109.20 ns" in html and "-1.1% to +20.0%" in html
    assert "0 of 1 published claims reproduced (2 of 3 points)" in " ".join(html.split())


def test_a_disagreement_links_to_its_explanation(tmp_path: Path) -> None:
    html = _report(tmp_path)
    (href,) = set(re.findall(r'<a class="why" href="([^"]+)">why: ', html))
    assert href.startswith("#why-"), "the explanation is in the page"
    assert html.count(f'id="{href[1:]}"') == 1
    assert "Calibration against Kistler" in html


def test_an_installed_cellsim_explains_inside_the_page(tmp_path: Path, monkeypatch) -> None:
    """An installed package has no docs/: the explanations come with it (the
    links were href="None" in an installed cellsim)."""
    import cellsim.tools.explanations as ex

    monkeypatch.setattr(ex, "docs_dir", lambda: None)
    html = _report(tmp_path)
    assert 'href="None"' not in html
    (href,) = set(re.findall(r'<a class="why" href="([^"]+)">why: ', html))
    section = html.split(f'id="{href[1:]}"', 1)[1].split("</section>", 1)[0]
    assert "<p>" in section and len(section) > 500, "the section's text, as HTML"


def test_the_bundled_explanations_are_current() -> None:
    """data/explanations.json is docs/'s sections: python -m cellsim.tools.explanations > it."""
    import json

    from cellsim.tools.explanations import bundle

    if docs_dir() is None:
        pytest.skip("no docs/ beside this cellsim")
    shipped = Path(__file__).resolve().parents[2] / "python" / "cellsim" / "data" / "explanations.json"
    assert json.loads(shipped.read_text()) == bundle(), (
        "run: python -m cellsim.tools.explanations > python/cellsim/data/explanations.json"
    )


def test_markdown_of_the_explanations() -> None:
    from cellsim.tools.explanations import markdown_html

    html = markdown_html(
        "Para **bold** `a<b`\nmore.\n\n1. one\n   two\n2. three\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    assert html == (
        "<p>Para <strong>bold</strong> <code>a&lt;b</code> more.</p>\n"
        "<ol><li>one two</li><li>three</li></ol>\n"
        "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
    )


def test_withheld_values_are_explained_once_and_grouped(tmp_path: Path) -> None:
    from cellsim.published import entries

    withheld = next(e for e in entries() if e.held_out)
    rows = [*_rows(), compare_row(withheld, "a point", 12.5)]
    res = ExperimentResult(get("dma-latency"), [{"machine": "qs20-1chip"}], rows, 1.0)
    write_html(tmp_path / "report.html", [res], machine=None, seed=0, native=True)
    html = (tmp_path / "report.html").read_text()
    assert html.count('id="withheld"') == 1 and "not in the" in html
    group = html.split('<details class="withheld">', 1)[1].split("</details>", 1)[0]
    assert "1 claim whose reference value is withheld" in group and withheld.id in group


def test_a_bound_that_holds_has_no_signed_error(tmp_path: Path) -> None:
    """An upper bound 17-21% above the simulated values holds: the error column
    said "-21.2% to -17.3%"."""
    from cellsim.tools.report import format_error

    entry = published("000-f4a-mem-get-under-100ns")
    rows = [compare_row(entry, f"get memory {s} B", v) for s, v in ((64, 78.8), (128, 82.7))]
    res = ExperimentResult(get("dma-latency"), [{"machine": "qs20-1chip"}], rows, 1.0)
    write_html(tmp_path / "report.html", [res], machine=None, seed=0, native=True)
    html = (tmp_path / "report.html").read_text()
    assert "17.3% to 21.2% under" in html and "-21.2%" not in html
    assert format_error(rows[0]) == "21.2% under"
    assert format_error(compare_row(entry, "p", 105.0)) == "5.0% over"


def test_the_report_names_the_commit_it_was_built_from(tmp_path: Path, monkeypatch) -> None:
    """An installed cellsim is no git checkout: the commit its engine was built from."""
    from cellsim import _engine
    from cellsim.tools import report

    monkeypatch.setattr(report, "_checkout_commit", lambda: None)
    html = _report(tmp_path)
    assert "not a git checkout" not in html
    if _engine.COMMIT:
        assert f"<dd>{_engine.COMMIT}</dd>" in html


def test_experiments_are_sections_that_open_and_close(tmp_path: Path) -> None:
    html = _report(tmp_path)
    assert '<details class="experiment" id="dma-latency">' in html
    assert "setAll(true)" in html, "open or close every section"


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
    assert e is not None and e.href is not None and e.markdown, f"{SECTIONS[name]} is not a heading of docs/"


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


def test_a_long_legend_is_not_clipped(tmp_path: Path) -> None:
    """The hot-spot figure's legend ran off both sides of the image."""
    from matplotlib.figure import Figure

    from cellsim.experiments import hotspot

    drawn: list[Figure] = []
    real = Figure.savefig

    def keep(self: Figure, *a, **k) -> None:
        drawn.append(self)
        real(self, *a, **k)

    import unittest.mock

    recs = [
        {"machine": "qs20-1chip", "target": t, "op": op, "spes": n, "aggregate_gbs": 20.0}
        for t in ("memory", "ls")
        for op in ("get", "put")
        for n in range(1, 9)
    ]
    with unittest.mock.patch.object(Figure, "savefig", keep):
        hotspot.plot(recs, tmp_path / "h.png")
    (fig,) = drawn
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (
        "the legend fits the figure's width (long labels wrapped)"
    )


def test_the_report_names_the_model_variants_that_ran(tmp_path: Path) -> None:
    """The report's model section: every variant of the machines that ran, its choice, sourced
    or inferred, and a choice set with --set marked as not the default."""
    from cellsim.tools.report import reproduce

    exp = get("dma-latency")
    reproduce(tmp_path, experiments=[exp], overrides=["eib.put_flow=none"])
    html = (tmp_path / "report.html").read_text()
    model = html.split('id="model"', 1)[1].split("<h2", 1)[0]
    assert "eib.put_flow = none</code> (not the default)" in model
    assert "mic.dram = flat" in model and "inferred" not in model.split("mic.dram = flat")[1][:40]
    assert "eib.recv_switch_bus_cycles = 1" in model and "000-f6a-get-outperforms-put" in model
