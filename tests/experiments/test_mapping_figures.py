"""The mapping experiment as the paper's figures: panels, the statements across them."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from cellsim.exceptions import UsageError
from cellsim.experiments import mapping
from cellsim.experiments._common import compare_row
from cellsim.experiments._mapping_statements import STATEMENTS, cross_quantities
from cellsim.messaging import Variation, ring_pattern, simulate
from cellsim.messaging.explorer import rank_of_all
from cellsim.published import Published, entries
from cellsim.sweep import Work


def test_figure_5_runs_its_two_panels_each_ranked_on_its_own() -> None:
    recs = mapping.run(machine="ps3", figures=[5], transmissions=4, runs=1, mappings=3, workers=1, out=None)
    groups = mapping.panels_of(recs)
    assert list(groups) == ["fig5-1024-uni", "fig5-512-uni"]
    for rs in groups.values():
        assert [r["rank"] for r in rs] == [1, 2, 3]
        assert all(r["figure"] == "Fig 5" and r["machine"] == "qs22" and r["unidirectional"] for r in rs)
    rows = mapping.compare(recs)
    ids = {r["id"] for r in rows}
    assert "001-f5-uni-1024" not in ids  # needs Fig 4's bidirectional panel too
    assert all("sample of 3 of the 5040" in r["note"] for r in rows)
    (table,) = mapping.tables(recs)
    assert table.columns[1:] == ("fig5-1024-uni", "fig5-512-uni")


def test_figures_and_a_setting_of_ones_own_do_not_mix() -> None:
    with pytest.raises(UsageError, match="without mode"):
        mapping.run(machine="ps3", figures=[3], mode="pinned", out=None)
    with pytest.raises(UsageError, match=r"figures \[7\]"):
        mapping.run(machine="ps3", figures=[7], out=None)


def test_a_run_without_settings_is_the_papers_figures() -> None:
    assert {p.figure for p in mapping.PAPER_PANELS} == {"Fig 2", "Fig 3", "Fig 4", "Fig 5"}
    labels = [p.label for p in mapping.PAPER_PANELS]
    assert len(set(labels)) == len(labels)
    for quantity, (panels, _) in STATEMENTS.items():
        assert set(panels) <= set(labels), quantity
        assert [e for e in entries(experiment="mapping") if e.quantity == quantity], quantity


def test_cross_statements_need_both_panels() -> None:
    s = {"worst_over_best_mean": 1.2, "p90_over_best": 1.1, "stray_pct": 2.0, "identity_rank": 30}
    t = {**s, "worst_over_best_mean": 1.1, "stray_pct": 4.0, "identity_rank": 10}
    out = cross_quantities({"fig3-1024": s, "fig2-1024": t})
    assert out["stray_pinned_over_default"] == (0.5, "fig3-1024 vs fig2-1024")
    assert out["identity_rank_pinned_over_default"][0] == 3.0
    assert "dependence_qs22_over_ps3" not in out


def test_a_rank_in_a_sample_estimates_the_rank_among_all() -> None:
    assert rank_of_all(1, 504, 5040) == 1
    assert rank_of_all(504, 504, 5040) == 5040
    assert rank_of_all(7, 120, 120) == 7
    assert rank_of_all(2, 12, 5040) == 459


def test_lower_bound_holds_only_above() -> None:
    e = Published(
        "t", "001", "Fig 4", "d", "mapping", {}, "intuitive1_rank_of_all", 10.0, "rank", "lower_bound"
    )
    assert e.text() == "> 10 rank"
    assert compare_row(e, "p", 11.0)["within"] is True
    assert compare_row(e, "p", 10.0)["within"] is False


def test_only_the_first_start_of_a_run_is_skewed() -> None:
    """A mapping that follows another in the same threads starts unskewed; the draws stay the same."""
    pat = ring_pattern(4, False, 1024)
    var = Variation(os_noise_ns=0.0, hypervisor_ns=0.0)
    kw = dict(count=6, mode="pinned", seed=5, variation=var, traffic=False)
    skewed = simulate("ps3", pat, (0, 1, 2, 3), **kw)  # type: ignore[arg-type]
    started = simulate("ps3", pat, (0, 1, 2, 3), start_skew=False, **kw)  # type: ignore[arg-type]
    assert started["runtime_ns"] < skewed["runtime_ns"]  # 10 us of skew in a 2 us run
    assert started["placement"] == skewed["placement"]


def _progress_calls(**settings: Any) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        assert isinstance(done, Work) and isinstance(total, Work)
        calls.append((done, total))

    mapping.run(progress=progress, workers=1, out=None, **settings)  # type: ignore[arg-type]
    return calls


def test_the_panels_progress_counts_work_and_ends_at_its_total() -> None:
    calls = _progress_calls(machine="ps3", figures=[3, 4], transmissions=4, runs=1, mappings=3)
    dones = [d for d, _ in calls]
    assert len({t for _, t in calls}) == 1, "one total for the whole run"
    assert dones == sorted(dones) and dones[0] == 0 and dones[-1] == calls[-1][1]


def test_a_panels_points_weigh_its_estimated_cost_in_the_panels_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The paper's panels, their sweeps faked: each point adds its panel's cost,
    panel after panel; a PS3 point (10,000 transmissions, 6 tasks) weighs about
    five QS22 points (1,000, 8 tasks) of its packet size, and a bigger packet more."""

    def sweep(**kw: Any) -> list[dict[str, Any]]:
        n = (120 if kw["machine"] == "ps3" else kw["mappings"]) * (kw["runs"] or 3)
        for done in range(n + 1):
            kw["progress"](done, n)
        return []

    monkeypatch.setattr(mapping, "run", sweep)
    calls: list[tuple[int, int]] = []
    mapping._run_panels(
        mapping.PAPER_PANELS, lambda d, t: calls.append((d, t)), {}, None, None, {"runs": None}
    )
    dones = [d for d, _ in calls]
    total = calls[0][1]
    assert isinstance(total, Work) and all(isinstance(d, Work) and t == total for d, t in calls)
    assert dones == sorted(dones) and dones[-1] == total
    steps = [b - a for a, b in itertools.pairwise(dones) if b > a]
    expected = []
    for panel in mapping.PAPER_PANELS:
        n = (120 if panel.machine == "ps3" else mapping.QS22_SAMPLE) * 3
        expected += [mapping._point_cost(panel, None)] * n
    assert steps == expected
    cost = {(p.machine, p.packet): mapping._point_cost(p, None) for p in mapping.PAPER_PANELS}
    assert [cost["ps3", b] / cost["qs22", b] for b in (512, 1024, 2048)] == pytest.approx([5.625] * 3)
    assert cost["qs22", 512] < cost["qs22", 1024] < cost["qs22", 2048]
