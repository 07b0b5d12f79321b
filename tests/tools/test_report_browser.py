"""report.html in a real browser (headless Chromium): the page renders, the
explanations are inside it, and a link to a closed section opens it. Skips
when no Chromium is installed (`make test` installs one in CI: see the
Makefile's `browser` target)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cellsim.experiments import get
from cellsim.experiments._common import compare_row
from cellsim.published import entries
from cellsim.published import get as published
from cellsim.tools.report import ExperimentResult, write_html


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium (apt-get install chromium)")


def run_browser(*args: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--virtual-time-budget=3000", *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, timeout=120, check=False, stdin=subprocess.DEVNULL)


@pytest.fixture
def page(tmp_path: Path) -> Path:
    entry = published("000-f4a-mem-put-91ns")
    withheld = next(e for e in entries() if e.held_out)
    rows = [compare_row(entry, f"put memory {s} B", v) for s, v in ((64, 90.0), (512, 109.2))]
    rows.append(compare_row(withheld, "a point", 12.5))
    res = ExperimentResult(get("dma-latency"), [{"machine": "qs20-1chip"}], rows, 1.0)
    write_html(tmp_path / "report.html", [res], machine=None, seed=0, native=True)
    return tmp_path / "report.html"


def test_a_link_to_a_closed_section_opens_it(page: Path) -> None:
    p = run_browser("--dump-dom", f"{page.as_uri()}#dma-latency")
    dom = p.stdout.decode()
    assert '<details class="experiment" id="dma-latency" open="">' in dom, p.stderr.decode()[-2000:]
    assert "Calibration against Kistler" in dom.split('id="explanations"', 1)[1]


def test_the_report_renders_with_its_explanations(page: Path, tmp_path: Path) -> None:
    from PIL import Image

    shot = tmp_path / "report.png"
    p = run_browser("--window-size=1300,2600", f"--screenshot={shot}", f"{page.as_uri()}")
    assert shot.exists(), p.stderr.decode()[-2000:]
    img = Image.open(shot).convert("L")
    assert img.size == (1300, 2600)
    # ink from the top (the summary) to the explanations at the bottom, not a blank page
    bands = range(0, img.height, 20)
    rows_with_ink = [y for y in bands if img.crop((0, y, img.width, y + 20)).getextrema()[0] < 128]
    assert len(rows_with_ink) > 40, f"only {len(rows_with_ink)} of {img.height // 20} bands have text"
