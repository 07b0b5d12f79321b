"""cellsim validate: settings, selection, the scoreboard end to end (a variant grid of two values,
a failing statement reported), locally and on Dask, resumable."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cellsim import experiments
from cellsim import published as pub
from cellsim import validate as vd
from cellsim.exceptions import UsageError
from cellsim.experiments._catalog import ValidateProfile
from cellsim.spec import MachineSpec
from cellsim.tools.cli import cli
from cellsim.validate import DEFAULT, Setting, grid_settings, ranking, select, validate, withheld

STATEMENT = "000-f6a-get-outperforms-put"
IDEAL = "eib.recv_switch_bus_cycles=0 eib.put_flow=none"
"""The ports without the receiving turn and the puts without credits: gets and puts alike."""


@pytest.fixture
def small_hotspot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hot spot at a test's size (its statement still holds or fails as at the profile's)."""
    reg = experiments._load()
    small = ValidateProfile({"count": 24, "spes": [1, 2, 4]}, "a test's size")
    monkeypatch.setitem(reg, "hotspot", dataclasses.replace(reg["hotspot"], validate=small))


def test_a_grid_is_every_combination_after_the_default_without_repeats() -> None:
    grid = {
        "axes": {"eib.recv_switch_bus_cycles": [0, 1], "mfc.command_cycles": [96]},
        "setting": [
            {"overrides": ["eib.recv_switch_bus_cycles=0", "mfc.command_cycles=96"]},
            {"overrides": []},
        ],
    }
    assert [s.label for s in grid_settings(grid)] == [
        "default",
        "eib.recv_switch_bus_cycles=0 mfc.command_cycles=96",
        "eib.recv_switch_bus_cycles=1 mfc.command_cycles=96",
    ]
    for bad, words in (
        ({"axis": {}}, "unknown keys"),
        ({"axes": {"eib.x": []}}, "non-empty list"),
        ({"setting": [{"label": "x"}]}, "needs overrides"),
    ):
        with pytest.raises(UsageError, match=words):
            grid_settings(bad)


def test_only_takes_papers_experiments_and_statement_ids() -> None:
    exps, _ = select(["Kistler"])
    assert {e.paper for e in exps} == {"000"}
    exps, keep = select([STATEMENT])
    assert [e.name for e in exps] == ["hotspot"] and not keep(pub.get("000-f6a-mem-get-saturates"))
    exps, _ = select(["002-f9"])
    assert [e.name for e in exps] == ["spe-mem"]
    # experiments whose every value is withheld have nothing to validate
    assert "mpi-pingpong" not in {e.name for e in select(())[0]}
    with pytest.raises(UsageError, match="no paper, experiment or visible statement id"):
        select(["000-f6b-complement-xyz"])


def test_a_variant_grid_is_scored_end_to_end_and_a_failing_statement_is_reported(small_hotspot) -> None:
    """With the receiving port's turn and the receivers' credits off, gets no longer outperform
    puts: the statement fails under that setting and holds under the default, and the ranking
    puts the default first."""
    settings = grid_settings({"axes": {"eib.recv_switch_bus_cycles": [0], "eib.put_flow": ["none"]}})
    boards = validate(settings, only=[STATEMENT], workers=1)
    held = {b.setting.label: b.held("statement") for b in boards}
    # one row per hot spot: memory and one local store
    assert held == {"default": (2, 2), IDEAL: (0, 2)}
    for row in boards[1].rows:
        assert row.id == STATEMENT and not row.holds and row.simulated >= 1.0
        assert "recv_switch=1" in row.mechanisms and row.role == "statement" and row.half == "fit"
    assert [r["setting"] for r in ranking(boards)] == ["default", IDEAL]


def test_the_command_prints_the_failing_value_and_writes_json_and_a_plot(small_hotspot, tmp_path) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text('[axes]\n"eib.recv_switch_bus_cycles" = [0]\n"eib.put_flow" = ["none"]\n')
    out = tmp_path / "board.json"
    r = CliRunner().invoke(
        cli,
        [
            *("validate", "--only", STATEMENT, "--grid", str(grid), "--workers", "1", "--json", str(out)),
            *("--plot", str(tmp_path / "rank.png"), "--failing", "--markdown", str(tmp_path / "board.md")),
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    assert STATEMENT in r.output and "0/2 (worst 1." in r.output
    assert "default: 2 of 2 visible values hold" in r.output
    assert "fitted on the fit half: the default (2/2)" in r.output
    doc = json.loads(out.read_text())
    assert doc["fit"]["setting"] == "default" and not doc["fit"]["confirmed"]
    assert [x["setting"] for x in doc["ranking"]] == ["default", IDEAL]
    assert {x["holds"] for x in doc["rows"]} == {True, False}
    assert (tmp_path / "rank.png").stat().st_size > 0
    page = (tmp_path / "board.md").read_text()
    assert f"Written by `cellsim validate --only {STATEMENT} --grid {grid}` (cellsim" in page
    assert "## Kistler et al. 2006" in page and f"(`{STATEMENT}`)" in page
    assert "| default | " + IDEAL + " |" in page and "- default: 2 of 2 visible values hold" in page
    assert "- fitted on the fit half: the default (2/2)" in page
    assert "## Failing under some setting\n\n- Kistler et al. 2006: " in page and "default 2 of 2, " in page


def test_a_paper_whose_values_are_all_withheld_is_covered_and_says_so() -> None:
    """Kumar et al.'s four values are withheld: validate selects the paper, scores nothing and
    counts what it kept back, on the terminal and in the JSON."""
    assert withheld(["003"]) == {"003": 4}
    assert withheld([STATEMENT]) == {}
    r = CliRunner().invoke(cli, ["validate", "--only", "Kumar"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "0 of 0 visible values hold" in r.output
    assert "withheld, kept to judge the model and never scored: Kumar et al. (003) 4" in r.output
    r = CliRunner().invoke(cli, ["validate", "--only", "003", "--json", "-"], catch_exceptions=False)
    assert json.loads(r.stdout)["withheld"] == {"003": 4}


def test_a_bad_setting_is_one_error_before_anything_runs() -> None:
    r = CliRunner().invoke(cli, ["validate", "--only", STATEMENT, "--set", "eib.no_such=1"])
    assert r.exit_code == 2 and "eib.no_such" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["validate", "--only", STATEMENT, "--set", "eib.recv_switch_bus_cycles=7"])
    assert r.exit_code == 2 and "choices 0, 1" in r.output


def test_resumed_and_on_dask_the_scoreboard_is_the_same(small_hotspot, tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "points"
    local = validate([DEFAULT], only=[STATEMENT], workers=1, out=out)
    again = validate([DEFAULT], only=[STATEMENT], workers=1, out=out, resume=True)
    assert again[0].rows == local[0].rows and again[0].seconds == local[0].seconds  # nothing rerun
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = validate([DEFAULT], only=[STATEMENT], cluster=client)
    assert on_dask[0].rows == local[0].rows


def test_every_validated_experiment_says_what_its_points_cost() -> None:
    """The measured seconds that order the sweep (longest first) and weigh its progress: one
    number or one per shard, at validation sizes and at --full's, for every point planned."""
    import tomllib

    raw = tomllib.loads((Path(experiments.__file__).parent.parent / "data" / "experiments.toml").read_text())
    exps = [e for e in experiments.all_experiments() if e.validate is not None]
    for e in exps:
        assert "seconds" in raw[e.name]["validate"], f"{e.name}: no measured seconds"
        assert "full_seconds" in raw[e.name]["validate"], f"{e.name}: no measured full_seconds"
    for full in (False, True):
        points = vd.plan([DEFAULT], exps, full=full)
        assert all(vd.point_cost(p) > 0 for p in points)
    mapping = [p for p in vd.plan([DEFAULT], exps) if p["experiment"] == "mapping"]
    assert len({vd.point_cost(p) for p in mapping}) == len(mapping), "the mapping's shards cost unequally"
    with pytest.raises(ValueError, match="one number or one per shard"):
        experiments._catalog._seconds("x", "seconds", [1.0, 2.0], 3)


def test_settings_label_their_overrides() -> None:
    assert Setting.of({"eib.recv_switch_bus_cycles": 0}).label == "eib.recv_switch_bus_cycles=0"
    assert Setting.of([]) == DEFAULT


def test_every_shipped_grid_names_its_hypothesis_and_resolves_on_every_machine() -> None:
    """The grids behind docs/contention.md's and docs/messaging.md's tables stay runnable: each
    says what it scores, selects values, and every setting is valid on every shipped machine
    (a setting named for one machine changes only it)."""
    grids = vd.shipped_grids()
    assert {"memory", "bus-per-pair", "library", "blade-banks"} <= set(grids)
    machines = ("qs20-1chip", "qs20", "ps3", "qs22", "blade21")
    for name, grid in grids.items():
        assert grid.about and grid.settings[0] == DEFAULT and len(grid.settings) > 1, name
        exps, _ = select(grid.only)
        assert exps, name
        for s in grid.settings[1:]:
            for m in machines:
                assert MachineSpec.of(m, s.overrides).toml, (name, s.label, m)


def test_a_grid_by_name_is_the_shipped_file_and_an_unknown_name_lists_them() -> None:
    assert vd.load_grid("blade-banks") == vd.load_grid(vd.GRIDS_DIR / "blade-banks.toml")
    with pytest.raises(UsageError, match=r"not a shipped grid .*blade-banks"):
        vd.load_grid("no-such-grid")
    r = CliRunner().invoke(cli, ["validate", "--list-grids"], catch_exceptions=False)
    assert r.exit_code == 0 and all(name in r.output for name in vd.shipped_grids())


def test_a_grid_scores_the_values_it_names_unless_only_is_given(tmp_path) -> None:
    grid = tmp_path / "g.toml"
    grid.write_text('about = "a test"\nonly = ["003"]\n[axes]\n"eib.recv_switch_bus_cycles" = [0]\n')
    r = CliRunner().invoke(cli, ["validate", "--grid", str(grid)], catch_exceptions=False)
    assert r.exit_code == 0 and "grid g: only 003" in r.output and "Kumar et al. (003) 4" in r.output


def test_the_docs_name_only_shipped_grids() -> None:
    root = Path(__file__).parents[1]
    pages = [*(root / "docs").glob("*.md"), root / "README.md"]
    named = {m for p in pages for m in re.findall(r"--grid ([a-z][a-z0-9-]+)(?![.\w])", p.read_text())}
    assert named and named <= set(vd.shipped_grids()), named - set(vd.shipped_grids())


def _board(label: str, fit: list[bool], check: list[bool]) -> vd.Scoreboard:
    """A scoreboard of statements only: ``fit`` and ``check`` say which of each half hold."""
    rows = [
        vd.Row(label, "x", f"s{i}-{half}", "000", "", "", "", 1.0, "1 x", holds, None, "statement", half, ())
        for half, values in (("fit", fit), ("check", check))
        for i, holds in enumerate(values)
    ]
    return vd.Scoreboard(Setting(label, () if label == "default" else (label,)), rows)


def test_a_setting_is_fitted_on_the_fit_half_and_judged_on_the_check_half_it_never_saw() -> None:
    default = _board("default", [True, False, False], [True, True])
    better = _board("a=1", [True, True, False], [True, False])  # wins the fit half, loses a check value
    best_check = _board("a=2", [True, False, False], [True, True])  # as the default on the fit half
    fit = vd.fit_on_half([default, better, best_check])
    assert fit.chosen is better and fit.check() == (1, 2) and not fit.confirmed
    assert fit.summary()["default_check_held"] == 2
    assert vd.fit_on_half([default, best_check]).chosen is default, "a tie keeps the default"
    confirmed = vd.fit_on_half([default, _board("a=3", [True, True, True], [True, True])])
    assert confirmed.chosen.setting.label == "a=3" and not confirmed.confirmed, "2 of 2 is no gain on 2 of 2"
    assert vd.fit_on_half([_board("default", [False], [False]), _board("a=4", [True], [True])]).confirmed
    with pytest.raises(UsageError, match="default"):
        vd.fit_on_half([better])
