"""C measured as Chen et al. measured it: busy time per outer iteration of
single-buffered code at large block factors, a line against the block factor."""

from __future__ import annotations

import pytest

from cellsim.buffering import seed004_loop
from cellsim.buffering.profile import channel_costs, engine_block_cycles, profile_c, switch_cycles


def test_profiling_the_generated_loop_returns_the_constants_it_was_made_from() -> None:
    p = profile_c(seed004_loop("t3", 4096), block_factors=(1024, 2048), blocks=4)
    assert p.c_inner_ns == pytest.approx(2.83, rel=0.005)
    assert p.c_outer_ns == pytest.approx(300.0, rel=0.01)
    assert all(w > 0 for w in p.wait_ns_per_block)  # single buffering waits for every block


def test_the_engine_charges_the_channel_work_that_c_outer_contains() -> None:
    c = channel_costs("qs20")
    assert (c.issue_cycles, c.channel_cycles) == (10, 2)  # Kistler et al. 2006 Table 1; model
    assert engine_block_cycles(3, "qs20") == 3 * 10 + 2
    assert switch_cycles(1, 3) == 0 and switch_cycles(2, 3) == switch_cycles(3, 3) == 10
