"""Seed 004's model: the closed forms, their regimes and their boundaries."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cellsim import UsageError
from cellsim.buffering.model import (
    PAPER,
    Constants,
    Costs,
    double_buffer_latency_ns,
    k_buffer_latency_ns,
    latency_ns,
    predict,
    regime,
    single_buffer_latency_ns,
    throughput_mbs,
    time_per_iteration_ns,
)

S, D = 130.0, 2.112  # the paper's S and D per iteration (24 B x 0.088 ns/B)
N = 15_000_000

pos = st.floats(0.01, 50.0)
blocks = st.integers(1, 10_000)


def test_single_buffer_is_the_sum() -> None:
    # (S/bf + D + C) * N, Section 2.3
    assert single_buffer_latency_ns(N, 64, S, D, 3.0) == pytest.approx((S / 64 + D + 3.0) * N)
    assert latency_ns(N, 1, 64, S, D, 3.0) == single_buffer_latency_ns(N, 64, S, D, 3.0)
    assert regime(1, 64, S, D, 3.0) == "serial"


def test_double_buffer_dma_bound_boundary() -> None:
    """D >= C + S/bf is DMA-bound (latency D*N); just below it is incomplete
    overlap, whose latency (S/bf + D + C) N/2 meets D*N at the boundary."""
    bf = 100
    C = D - S / bf  # exactly on the boundary
    assert regime(2, bf, S, D, C) == "dma-bound"
    assert double_buffer_latency_ns(N, bf, S, D, C) == pytest.approx(D * N)
    C_in = C + 1e-6
    assert regime(2, bf, S, D, C_in) == "incomplete overlap"
    assert double_buffer_latency_ns(N, bf, S, D, C_in) == pytest.approx((S / bf + D + C_in) * N / 2)
    assert double_buffer_latency_ns(N, bf, S, D, C_in) == pytest.approx(D * N, rel=1e-6)


def test_double_buffer_computation_bound_boundary() -> None:
    """D <= C - S/bf is computation-bound (latency C*N); the incomplete-overlap
    formula meets C*N there."""
    bf = 100
    C = D + S / bf
    assert regime(2, bf, S, D, C) == "computation-bound"
    assert double_buffer_latency_ns(N, bf, S, D, C) == pytest.approx(C * N)
    C_in = C - 1e-6
    assert regime(2, bf, S, D, C_in) == "incomplete overlap"
    assert double_buffer_latency_ns(N, bf, S, D, C_in) == pytest.approx(C * N, rel=1e-6)


@pytest.mark.parametrize("k", [3, 4, 7])
def test_k_buffer_boundaries(k: int) -> None:
    """DMA-bound from D = (C + S/bf)/(k-1), computation-bound up to
    D = (k-1) C - S/bf (Section 2.5), continuous across both."""
    bf = 10
    C = 4.0  # S/bf = 13 > (k-2) C for k = 3, 4: there is an incomplete-overlap region
    d_dma = max(C, (C + S / bf) / (k - 1))
    assert regime(k, bf, S, d_dma, C) == "dma-bound"
    assert k_buffer_latency_ns(N, k, bf, S, d_dma, C) == pytest.approx(d_dma * N)
    below = d_dma * (1 - 1e-9)
    if d_dma > C:
        assert regime(k, bf, S, below, C) == "incomplete overlap"
        assert k_buffer_latency_ns(N, k, bf, S, below, C) == pytest.approx(d_dma * N, rel=1e-6)
    d_comp = min(C, (k - 1) * C - S / bf)
    if d_comp > 0:
        assert regime(k, bf, S, d_comp, C) in ("computation-bound", "dma-bound")  # D == C: both hold
        assert k_buffer_latency_ns(N, k, bf, S, d_comp, C) == pytest.approx(C * N)


def test_k_buffer_with_2_is_double_buffer() -> None:
    for C in (0.5, 2.0, 2.112, 3.0, 9.0):
        for bf in (1, 16, 61, 62, 63, 1000):
            assert k_buffer_latency_ns(N, 2, bf, S, D, C) == pytest.approx(
                double_buffer_latency_ns(N, bf, S, D, C)
            )


def test_no_incomplete_region_when_set_up_is_small() -> None:
    """With S/bf <= (k-2) C the loop goes straight from computation- to DMA-bound at D = C."""
    k, bf, C = 3, 1000, 4.0
    assert regime(k, bf, S, C - 0.01, C) == "computation-bound"
    assert regime(k, bf, S, C + 0.01, C) == "dma-bound"


@settings(max_examples=300, deadline=None)
@given(k=st.integers(1, 8), bf=blocks, s=pos, d=pos, c=pos)
def test_the_three_cases_are_one_max(k: int, bf: int, s: float, d: float, c: float) -> None:
    """latency / N == max(D, C, (S/bf + C + D)/k) in every regime."""
    assert latency_ns(1.0, k, bf, s, d, c) == pytest.approx(time_per_iteration_ns(k, bf, s, d, c))


@settings(max_examples=200, deadline=None)
@given(k=st.integers(1, 6), bf=st.integers(1, 5000), s=pos, d=pos, ci=pos, co=st.floats(0, 500))
def test_more_buffers_and_larger_blocks_never_hurt(
    k: int, bf: int, s: float, d: float, ci: float, co: float
) -> None:
    costs = Costs(ci, co, 24)
    c = Constants(s, d / 24)
    t = predict(costs, k, bf, c).time_per_iter_ns
    assert predict(costs, k + 1, bf, c).time_per_iter_ns <= t * (1 + 1e-12)
    assert predict(costs, k, bf + 1, c).time_per_iter_ns <= t * (1 + 1e-12)
    assert t >= max(d, ci) * (1 - 1e-12)  # never better than the DMA or the computation alone


def test_predict_keeps_c_outer() -> None:
    costs = Costs(c_inner_ns=2.83, c_outer_ns=300.0, bytes_per_iter=24)
    p = predict(costs, 2, 100, PAPER)
    assert p.C_ns == pytest.approx(2.83 + 3.0)
    assert p.D_ns == pytest.approx(0.0877 * 24)
    assert p.regime == "computation-bound"
    assert p.time_per_iter_ns == pytest.approx(5.83)
    assert p.throughput_mbs == pytest.approx(throughput_mbs(24, 5.83)) == pytest.approx(24_000 / 5.83)
    assert p.space_bytes == 2 * 100 * 24
    assert predict(Costs(2.83, 0.0, 24), 2, 100, PAPER).C_ns == pytest.approx(2.83)


def test_c_outer_explains_figure_11() -> None:
    """With the same space, 1b beats 2b when 2b is computation-bound on
    C_outer: 1b's S/B + D + C_inner + C_outer/B < 2b's C_inner + 2 C_outer/B,
    i.e. S + D B < C_outer. Without C_outer, 2b always wins (Section 3)."""
    costs = Costs(0.51, 300.0, 24)
    d = PAPER.D1_ns_per_byte * 24
    crossover = (300.0 - PAPER.S_ns) / d  # about 80
    for space_block in (12, 24, 48, 72):
        assert space_block < crossover
        one = predict(costs, 1, space_block, PAPER).throughput_mbs
        two = predict(costs, 2, space_block // 2, PAPER).throughput_mbs
        assert one > two, space_block
    for space_block in (240, 960, 3072):
        one = predict(costs, 1, space_block, PAPER).throughput_mbs
        two = predict(costs, 2, space_block // 2, PAPER).throughput_mbs
        assert two > one
    no_outer = Costs(0.51, 0.0, 24)
    for space_block in (2, 12, 48, 3072):
        one = predict(no_outer, 1, space_block, PAPER).throughput_mbs
        two = predict(no_outer, 2, space_block // 2, PAPER).throughput_mbs
        assert two > one


def test_seed_004_regimes_with_the_paper_constants() -> None:
    """t1, t2 are DMA-bound and t3, t4 computation-bound at large block factors."""
    regimes = {
        name: predict(Costs(ci, 300.0, 24), 2, 3072, PAPER).regime
        for name, ci in (("t1", 0.51), ("t2", 1.73), ("t3", 2.83), ("t4", 3.93))
    }
    assert regimes == {
        "t1": "dma-bound",
        "t2": "dma-bound",
        "t3": "computation-bound",
        "t4": "computation-bound",
    }


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Costs(-1.0, 300.0, 24), "C_inner must be a positive number of ns, not -1.0"),
        (lambda: Costs(0.0, 300.0, 24), "C_inner must be a positive number of ns, not 0.0"),
        (lambda: Costs(1.0, -3.0, 24), "C_outer must be a non-negative number of ns, not -3.0"),
        (lambda: Costs(1.0, 3.0, 0), "bytes per iteration must be a positive number of B, not 0"),
        (lambda: Costs(math.nan, 3.0, 24), "C_inner must be a positive number of ns, not nan"),
        (lambda: Constants(0.0, 0.1), "S must be a positive number of ns, not 0.0"),
        (lambda: Constants(130.0, -0.1), "D1 must be a positive number of ns per byte, not -0.1"),
        (lambda: regime(0, 10, S, D, 1.0), "k must be an integer >= 1, not 0"),
        (lambda: regime(2, 0, S, D, 1.0), "block factor must be positive, not 0"),
        (lambda: k_buffer_latency_ns(N, 1, 10, S, D, 1.0), "k >= 2"),
    ],
)
def test_bad_values_are_named(build: object, match: str) -> None:
    with pytest.raises(UsageError, match=match.replace("(", r"\(").replace(")", r"\)")):
        build()  # type: ignore[operator]
