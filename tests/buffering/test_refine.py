"""The model-guided search on the simulated chip (:mod:`cellsim.buffering.refine`)."""

from __future__ import annotations

import pytest

from cellsim.buffering import Loop, plan
from cellsim.buffering.model import PAPER, Costs
from cellsim.buffering.refine import refine, shortlist
from cellsim.exceptions import UsageError

LOOP = Loop(n=4096, c_inner=0.51, c_outer=300.0)


def t1_plan(budget: int = 32 * 1024):
    return plan(Costs(0.51, 300.0, 24), budget, PAPER, granularity=2)


def test_the_short_list_holds_the_models_choice_and_each_close_schemes_ladder() -> None:
    p = t1_plan()
    short = shortlist(p)
    assert (p.chosen.k, p.chosen.bf) in short
    for a in p.alternatives:
        close = a.at_max is not None and a.at_max.throughput_mbs >= 0.9 * p.best_throughput_mbs
        assert ((a.k, a.bf_max) in short) == close
    for k, bf in short:
        assert bf % 2 == 0 and 0 < bf <= next(a.bf_max for a in p.alternatives if a.k == k)
    assert len(short) <= 1 + 4 * 4


def test_refine_prefers_fewer_buffers_then_the_smaller_block_within_the_tolerance() -> None:
    p = t1_plan()

    # A chip where throughput grows with k and saturates at bf 400.
    def fake(k: int, bf: int) -> float:
        return 1000.0 * k + min(bf, 400)

    r = refine(LOOP, p, simulate=fake, tolerance=0.0)
    best = max(t.simulated_mbs for t in r.trials)
    assert r.chosen.simulated_mbs == best
    assert r.model.k == p.chosen.k and r.model.bf == p.chosen.bf
    loose = refine(LOOP, p, simulate=fake, tolerance=0.5)
    assert loose.chosen.k == min(t.k for t in loose.trials)


def test_refine_on_the_simulated_chip_is_no_worse_than_the_model() -> None:
    r = refine(LOOP, t1_plan(16 * 1024))
    assert r.chosen.simulated_mbs >= 0.99 * r.model.simulated_mbs
    assert all(t.simulated_mbs > 0 for t in r.trials)


def test_refine_rejects_a_plan_for_another_loop_and_a_bad_tolerance() -> None:
    p = plan(Costs(0.51, 300.0, 16), 32 * 1024, PAPER)
    with pytest.raises(UsageError, match="the plan is for 16 bytes per iteration, the loop moves 24"):
        refine(LOOP, p, simulate=lambda k, bf: 1.0)
    with pytest.raises(UsageError, match="tolerance"):
        refine(LOOP, t1_plan(), tolerance=1.5, simulate=lambda k, bf: 1.0)
