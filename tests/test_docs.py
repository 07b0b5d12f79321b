"""The documentation site and its API reference (from the docstrings) build
without a warning: `make docs`."""

from __future__ import annotations

import re
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


def test_the_variants_table_of_the_model_is_current() -> None:
    """docs/model.md's table of variants is generated from the machine files."""
    from cellsim.spec import variants_markdown

    text = (ROOT / "docs" / "model.md").read_text()
    table = text.split("<!-- variants:begin -->\n", 1)[1].split("<!-- variants:end -->", 1)[0]
    assert table == variants_markdown(), "run: cellsim machine variants --markdown (into docs/model.md)"


def test_the_scoreboard_page_lists_every_visible_value_it_can_score() -> None:
    """docs/scoreboard.md is written by `cellsim validate --full --markdown` (13 minutes: no test
    reruns it); a published value added or removed since makes it stale, and this says so."""
    from cellsim import published as pub
    from cellsim.validate import select

    page = (ROOT / "docs" / "scoreboard.md").read_text()
    experiments, keep = select(())
    names = {e.name for e in experiments}
    scored = {e.id for e in pub.entries(held_out=False) if e.experiment in names and keep(e)}
    listed = set(re.findall(r"\(`([0-9]{3}-[a-z0-9-]+)`\)", page))
    assert listed <= scored, f"no longer published: {sorted(listed - scored)}"
    missing = {i for i in scored - listed if i not in page}
    assert not missing, f"run: cellsim validate --full --markdown docs/scoreboard.md ({sorted(missing)})"


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


def test_run_settings_take_the_experiments_defaults() -> None:
    """``run(**settings)``: a setting not given is the experiment's default
    (its machine from data/experiments.toml); an unknown keyword is refused."""
    from cellsim import experiments
    from cellsim.spec import MachineSpec, RunOptions

    ppe_mem = experiments.get("ppe-mem")
    assert ppe_mem.settings({}) == experiments.Setup(MachineSpec("blade21"), 0, True, None)
    assert ppe_mem.settings({"machine": "qs20", "seed": 3}).spec == MachineSpec("qs20")
    with_set = ppe_mem.settings({"overrides": ["mic.dram=banks"]}).spec
    assert with_set == MachineSpec("blade21", ("mic.dram=banks",))
    # the run's options travel with the spec, to every machine built from it
    run = ppe_mem.settings({"time_limit_ns": 5e6, "exact_reference": True}).spec.run
    assert run == RunOptions(time_limit_ns=5e6, exact_reference=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sead'"):
        ppe_mem.settings({"sead": 3})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(TypeError, match="unexpected keyword argument 'bank'"):
        ppe_mem.run(bank=["local"])  # type: ignore[call-arg]


def test_run_docstrings_list_the_declared_options() -> None:
    """run()'s docstring is written from the declaration: the settings, then
    each option with its unit and default."""
    from cellsim.experiments import spe_mem

    doc = spe_mem.run.__doc__ or ""
    assert "machine: machine name, TOML path or MachineSpec (default ``blade21``)." in doc
    assert "overrides: machine settings to change" in doc
    assert "mb_per_spe: data per SPE and direction (MB; default: 32; as the paper)." in doc


def test_the_experiment_catalog_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """data/experiments.toml: every experiment has an entry; a bad entry is one
    error naming the experiment and the rule."""
    from cellsim import experiments
    from cellsim.experiments import _catalog

    assert list(_catalog.catalog()) == experiments.names()
    bad = tmp_path / "experiments.toml"
    bad.write_text('[x]\ntitle = "t"\npaper = "005"\nfigure = "f"\nmachine = "qs20"\ndescription = "d"\n')
    monkeypatch.setattr(_catalog, "DATA", bad)
    _catalog.catalog.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"\[x\]: paper '005' is not one of 000"):
            _catalog.catalog()
        bad.write_text('[x]\ntitle = "t"\n')
        _catalog.catalog.cache_clear()
        with pytest.raises(ValueError, match=r"\[x\]: unknown keys \[\], missing keys \['description'"):
            _catalog.catalog()
    finally:
        _catalog.catalog.cache_clear()
