"""The choice of scheme and block factor: the paper's Figure 9 and its extension."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cellsim import UsageError
from cellsim.buffering.choice import (
    choose_double_buffer,
    compute_bound_blocks,
    max_block_factor,
    min_block_compute_bound,
    min_block_dma_bound,
    plan,
)
from cellsim.buffering.model import PAPER, Constants, Costs, predict, regime

S, D = 130.0, 2.112


def test_choose_double_buffer_is_figure_9() -> None:
    # D > C: double buffering iff S/(D - C) <= B/2
    assert choose_double_buffer(C=0.51, D=D, S=S, B=2 * math.ceil(S / (D - 0.51)))
    assert not choose_double_buffer(C=0.51, D=D, S=S, B=2 * math.floor(S / (D - 0.51)) - 2)
    # D < C: double buffering iff S/(C - D) <= B/2
    assert choose_double_buffer(C=3.93, D=D, S=S, B=2 * math.ceil(S / (3.93 - D)))
    assert not choose_double_buffer(C=3.93, D=D, S=S, B=100)
    # D == C: never bound with two buffers
    assert not choose_double_buffer(C=D, D=D, S=S, B=10**9)


@settings(max_examples=300, deadline=None)
@given(
    c=st.floats(0.05, 20.0),
    d=st.floats(0.05, 20.0),
    s=st.floats(1.0, 1000.0),
    b6=st.integers(1, 2000),
)
def test_the_extension_agrees_with_figure_9_without_c_outer(c: float, d: float, s: float, b6: int) -> None:
    """Between two buffers of B/2 and three of B/3, the model prefers two
    exactly when Figure 9 says so (C_outer = 0, ties to fewer buffers)."""
    B = 6 * b6
    assume(abs(d - c) > 1e-9 * max(c, d))
    assume(abs(s / abs(d - c) - B / 2) > 1e-6 * B)  # not on the knife edge
    costs = Costs(c, 0.0, 1.0)
    consts = Constants(s, d)
    two = predict(costs, 2, B // 2, consts).time_per_iter_ns
    three = predict(costs, 3, B // 3, consts).time_per_iter_ns
    assert choose_double_buffer(c, d, s, B) == (two <= three * (1 + 1e-12))


def test_smallest_bound_blocks_are_the_papers_without_c_outer() -> None:
    """Section 3: 2b need not exceed S/|D - C|; 3b S/(2D - C) (DMA-bound) or S/(2C - D)."""
    for C in (0.51, 1.73):
        assert min_block_dma_bound(2, S, D, C) == pytest.approx(S / (D - C))
        assert min_block_dma_bound(3, S, D, C) == pytest.approx(S / (2 * D - C))
    for C in (2.83, 3.93):
        assert min_block_compute_bound(2, S, D, C) == pytest.approx(S / (C - D))
        assert min_block_compute_bound(3, S, D, C) == pytest.approx(S / (2 * C - D))
        assert min_block_dma_bound(2, S, D, C) == math.inf


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize(("c_inner", "c_outer"), [(0.51, 300.0), (1.73, 300.0), (0.51, 0.0), (1.0, 50.0)])
def test_dma_bound_threshold_with_c_outer(k: int, c_inner: float, c_outer: float) -> None:
    """At the closed-form block factor the loop is DMA-bound, just below it is not."""
    v = min_block_dma_bound(k, S, D, c_inner, c_outer)
    assert math.isfinite(v)
    C = lambda bf: c_inner + c_outer / bf  # noqa: E731
    assert regime(k, v * (1 + 1e-9), S, D, C(v * (1 + 1e-9))) == "dma-bound"
    assert regime(k, v * (1 - 1e-6), S, D, C(v * (1 - 1e-6))) != "dma-bound"


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize(("c_inner", "c_outer"), [(2.83, 300.0), (3.93, 0.0), (0.51, 300.0), (1.73, 300.0)])
def test_computation_bound_interval_with_c_outer(k: int, c_inner: float, c_outer: float) -> None:
    """Inside the interval the loop is computation-bound, outside it is not;
    with C_inner < D only small blocks are (C_outer dominates C)."""
    r = compute_bound_blocks(k, S, D, c_inner, c_outer)
    C = lambda bf: c_inner + c_outer / bf  # noqa: E731
    assert r is not None
    lo, hi = r
    probes = [x for x in (lo * 1.001 + 1e-3, (lo + min(hi, 4 * lo + 100)) / 2, min(hi, 1e6) * 0.999) if x > 0]
    for bf in probes:
        assert regime(k, bf, S, D, C(bf)) in ("computation-bound", "dma-bound"), bf  # D == C counts as DMA
    if lo > 0:
        assert regime(k, lo * 0.99, S, D, C(lo * 0.99)) != "computation-bound"
    if math.isfinite(hi):
        assert regime(k, hi * 1.01, S, D, C(hi * 1.01)) != "computation-bound"
    if c_inner < D:
        assert math.isfinite(hi)


def test_max_block_factor() -> None:
    assert max_block_factor(64 * 1024, 1, 24) == 2730
    assert max_block_factor(64 * 1024, 2, 24, granularity=2) == 1364
    assert max_block_factor(64 * 1024, 3, 24, granularity=2) == 910
    assert max_block_factor(40, 1, 24, granularity=2) == 0


def test_plan_picks_fewest_buffers_then_smallest_block() -> None:
    costs = Costs(2.83, 300.0, 24)
    p = plan(costs, 64 * 1024, PAPER, granularity=2)
    assert (p.chosen.k, p.chosen.regime) == (2, "computation-bound")
    assert p.chosen.bf % 2 == 0 and p.chosen.space_bytes <= 64 * 1024
    target = p.best_throughput_mbs * (1 - p.tolerance)
    assert p.chosen.throughput_mbs >= target
    assert predict(costs, 2, p.chosen.bf - 2, PAPER).throughput_mbs < target
    assert p.best_throughput_mbs == max(a.at_max.throughput_mbs for a in p.alternatives if a.at_max)
    assert [a.k for a in p.alternatives] == [1, 2, 3, 4]
    d = p.as_dict()
    assert (d["k"], d["bf"], d["regime"]) == (2, p.chosen.bf, "computation-bound")
    assert len(d["alternatives"]) == 4


def test_plan_fixed_space_small_budget_prefers_one_buffer() -> None:
    """Figure 11's effect, predicted: with room for 12 elements, 1b beats 2b and 3b."""
    p = plan(Costs(0.51, 300.0, 24), 12 * 24, PAPER, granularity=2)
    assert p.chosen.k == 1
    assert p.chosen.bf == 12


def test_tolerance_zero_gives_the_best() -> None:
    costs = Costs(0.51, 300.0, 24)
    p = plan(costs, 64 * 1024, PAPER, granularity=2, tolerance=0.0)
    assert p.chosen.throughput_mbs == pytest.approx(p.best_throughput_mbs)
    assert p.chosen.regime == "dma-bound"


def test_margin_one_is_the_papers_rule_and_margin_two_is_bound_with_twice_s() -> None:
    costs = Costs(0.222, 49.7, 8)
    consts = Constants(105.8, 0.0467)
    base = plan(costs, 33311, consts, granularity=4)
    assert plan(costs, 33311, consts, granularity=4, margin=1.0).chosen == base.chosen
    robust = plan(costs, 33311, consts, granularity=4, margin=2.0)
    c = robust.chosen
    twice = regime(c.k, c.bf, 2 * consts.S_ns, c.D_ns, c.C_ns)
    assert twice in ("dma-bound", "computation-bound")
    assert c.bf >= base.chosen.bf
    assert any("margin 2" in n for n in robust.notes)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"budget_bytes": 20}, "a budget of 20 bytes is smaller than one buffer of one element"),
        ({"budget_bytes": 30, "granularity": 2}, "holds no legal block: the smallest block factor, 2"),
        ({"budget_bytes": 300_000, "max_bytes": 245_760}, "a budget of 300000 bytes does not fit"),
        ({"budget_bytes": -5}, "the budget must be a positive number of bytes, not -5"),
        ({"budget_bytes": 4096, "k_max": 0}, "k_max must be an integer >= 1, not 0"),
        ({"budget_bytes": 4096, "tolerance": 1.5}, "the tolerance must be in"),
        (
            {"budget_bytes": 4096, "margin": 0.5},
            "the margin on the set-up time must be a number >= 1, not 0.5",
        ),
        ({"budget_bytes": 4096, "granularity": 0}, "granularity must be an integer >= 1, not 0"),
    ],
)
def test_bad_plans_are_named(kwargs: dict[str, object], match: str) -> None:
    budget = kwargs.pop("budget_bytes")
    with pytest.raises(UsageError, match=match):
        plan(Costs(1.0, 300.0, 24), budget, PAPER, **kwargs)  # type: ignore[arg-type]
