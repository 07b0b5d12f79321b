"""The documentation site and its API reference (from the docstrings) build
without a warning: `make docs`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_api_reference_builds(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    p = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in ("Machine", "mfc_getl", "spe_ps_area_get", "SIG_NOTIFY_1", "write_chrome_trace"):
        assert name in api, name


def test_the_experiment_options_reference_is_current() -> None:
    """docs/experiments.md is generated from the experiments' declared options."""
    from cellsim.experiments import options_reference

    doc = ROOT / "docs" / "experiments.md"
    assert doc.read_text() == options_reference(), "run: python -m cellsim.experiments > docs/experiments.md"


def test_run_keywords_are_the_declared_options() -> None:
    """Every experiment registers only if run()'s keywords are its declared
    options; a keyword the declaration lacks is refused."""
    import dataclasses

    from cellsim import experiments

    for exp in experiments.all_experiments():
        exp.check_declaration()
    spe_spe = experiments.get("spe-spe")
    short = dataclasses.replace(spe_spe, options=spe_spe.options[:-1])
    with pytest.raises(TypeError, match="are not its declared options"):
        short.check_declaration()
