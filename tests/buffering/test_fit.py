"""The fit of S and D1: linear regression over DMA-only runs."""

from __future__ import annotations

import numpy as np
import pytest

from cellsim import UsageError
from cellsim.buffering import constants_for
from cellsim.buffering.fitting import fit, fitted_constants, linear_fit, steady_block_ns
from cellsim.buffering.loop import Loop


def test_linear_fit_recovers_the_papers_constants_from_synthetic_data() -> None:
    b = np.array([24 * bf for bf in (16, 32, 64, 128, 256, 512, 1024, 2048)], dtype=float)
    t = 130.0 + 0.0877 * b
    S, D1, r2 = linear_fit(b, t)
    assert (S, D1, r2) == pytest.approx((130.0, 0.0877, 1.0))
    noisy = t + np.random.default_rng(1).normal(0, 5.0, size=t.size)
    S, D1, r2 = linear_fit(b, noisy)
    assert abs(S - 130.0) < 10 and abs(D1 / 0.0877 - 1) < 0.02 and r2 > 0.999


def test_linear_fit_needs_two_sizes() -> None:
    with pytest.raises(UsageError, match="at least two points"):
        linear_fit([100.0, 100.0], [1.0, 2.0])


def test_fit_on_the_simulated_qs20_is_sane() -> None:
    f = fitted_constants("qs20")
    assert f.machine == "qs20" and (f.inputs, f.outputs) == ((8, 8), (8,))
    assert 80 < f.S_ns < 200  # the paper measured 130 ns on hardware
    assert 0.03 < f.D1_ns_per_byte < 0.09  # and 0.0877 ns/B
    assert f.r2 > 0.99
    assert f.bytes_per_block == [24 * bf for bf in (16, 32, 64, 128, 256, 512, 1024, 2048)]
    assert all(b > a for a, b in zip(f.ns_per_block, f.ns_per_block[1:], strict=False))
    assert fitted_constants("qs20") is f  # remembered
    c = f.constants
    assert (c.S_ns, c.D1_ns_per_byte, c.source) == (f.S_ns, f.D1_ns_per_byte, "fit qs20")
    d = f.as_dict()
    assert d["paper_S_ns"] == 130.0 and d["paper_D1_ns_per_byte"] == 0.0877 and len(d["points"]) == 8


def test_fit_with_other_streams_and_block_factors() -> None:
    f = fit("qs20", inputs=(4,), outputs=(4,), block_factors=(30, 500, 5000))
    # rounded up to blocks of whole 128-byte lines: multiples of 32 four-byte elements
    assert f.bytes_per_block == [32 * 8, 512 * 8, 5024 * 8]
    assert f.S_ns > 0 and f.D1_ns_per_byte > 0
    with pytest.raises(UsageError, match="at least two block factors that fit"):
        fit("qs20", block_factors=(16, 100_000))


def test_steady_state_does_not_depend_on_the_block_counts() -> None:
    loop = Loop(4096, 0.8, 50.0, (8, 8, 4), (8,))
    for k, bf in ((1, 64), (3, 512)):
        # Within the DRAM refreshes that a run of either length happens to meet.
        assert steady_block_ns(loop, k, bf, blocks=(12, 36)) == pytest.approx(
            steady_block_ns(loop, k, bf, blocks=(40, 100)), rel=0.02
        )
    with pytest.raises(UsageError, match="two increasing positive counts"):
        steady_block_ns(loop, 1, 64, blocks=(10, 10))


def test_given_constants_replace_the_fitted_ones() -> None:
    assert constants_for("qs20", 130.0, 0.0877).source == "given"
    half = constants_for("qs20", S=130.0)
    assert half.S_ns == 130.0 and half.D1_ns_per_byte == fitted_constants("qs20").D1_ns_per_byte
    assert "S given" in half.source
    with pytest.raises(UsageError, match="S must be a positive number of ns, not -1"):
        constants_for("qs20", -1.0, 0.0877)


def test_which_board_parameter_sets_s_and_which_sets_d1() -> None:
    """S moves with the BIF's latency (a coherent command waits for the other
    chip's snoop), D1 with the MIC's per-requester window; not the other way."""
    base = fit("qs20")
    near = fit("qs20", overrides={"bif.link_latency_ns": 0})
    wide = fit("qs20", overrides={"mic.reads_per_requester": 5})
    assert near.S_ns < base.S_ns - 15 and near.D1_ns_per_byte == pytest.approx(base.D1_ns_per_byte, rel=0.01)
    assert wide.D1_ns_per_byte < 0.7 * base.D1_ns_per_byte
