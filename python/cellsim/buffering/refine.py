"""Refining the model's plan on the simulated chip.

The model (:mod:`.model`, with the chip's terms of :mod:`.terms`) is right
about the shape of a loop's throughput but its corners are sharp where the
chip's are round: near a knee the simulation is a few percent off (see
``docs/buffering.md``). A user who has the simulator at hand need not live
with that: :func:`refine` takes the model's plan, simulates a short list of
(k, bf) around what the model found — for every scheme the model finds within
``keep_within`` of its best, the smallest block factor that reaches it, two
and four times that, the largest that fits and the scheme's best — and picks
from what the chip actually did, with the paper's preferences (fewest buffers,
then the smallest block factor, within ``tolerance`` of the best simulated).

It is a model-guided search, not a replacement for the model: it simulates a
dozen points where an exhaustive search over a grid simulates about eighty,
and every point is a real run of the generated program (steady-state time per
block, :func:`~cellsim.buffering.fitting.steady_block_ns`).

>>> from cellsim.buffering import Loop, plan_loop
>>> from cellsim.buffering.refine import refine
>>> loop = Loop(n=4096, c_inner=2.83, c_outer=300.0)
>>> r = refine(loop, plan_loop(loop, budget_bytes=16 * 1024))
>>> r.chosen.k >= 1 and len(r.trials) <= 16
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..exceptions import UsageError
from ..spec import MachineLike
from .choice import DEFAULT_TOLERANCE, Plan
from .fitting import steady_block_ns
from .loop import Loop
from .model import predict

__all__ = [
    "KEEP_WITHIN",
    "LADDER",
    "STEADY_BLOCKS",
    "Refinement",
    "Trial",
    "refine",
    "shortlist",
    "simulated_mbs",
]

STEADY_BLOCKS = (12, 36)
"""Runs of 12 and 36 blocks: a 24-block window, a multiple of every k <= 4."""

LADDER = (1, 2, 4)
"""Multiples of the model's smallest block factor tried for each scheme (and its largest)."""

KEEP_WITHIN = 0.10
"""Schemes the model puts more than 10% below its best are not simulated."""


@dataclass(frozen=True)
class Trial:
    """One (k, bf) simulated."""

    k: int
    bf: int
    simulated_mbs: float
    predicted_mbs: float


@dataclass(frozen=True)
class Refinement:
    """The choice made from the simulated short list, and the list."""

    chosen: Trial
    model: Trial
    """The model's own choice, as simulated."""
    trials: list[Trial]

    @property
    def best_mbs(self) -> float:
        """The best simulated throughput of the short list."""
        return max(t.simulated_mbs for t in self.trials)

    def as_dict(self) -> dict[str, object]:
        """A JSON-serialisable summary."""

        def trial(t: Trial) -> dict[str, object]:
            return {"k": t.k, "bf": t.bf, "simulated_mbs": t.simulated_mbs, "predicted_mbs": t.predicted_mbs}

        return {
            "k": self.chosen.k,
            "bf": self.chosen.bf,
            "simulated_mbs": self.chosen.simulated_mbs,
            "model": trial(self.model),
            "trials": [trial(t) for t in self.trials],
        }


def simulated_mbs(loop: Loop, k: int, bf: int, *, machine: MachineLike = "qs20") -> float:
    """Steady-state throughput (MB/s) of ``loop`` with ``k`` buffers of block factor ``bf``."""
    ns = steady_block_ns(loop, k, bf, machine=machine, blocks=STEADY_BLOCKS)
    return 1000.0 * loop.bytes_per_iter * bf / ns


def shortlist(
    plan: Plan, *, ladder: tuple[int, ...] = LADDER, keep_within: float = KEEP_WITHIN
) -> list[tuple[int, int]]:
    """The (k, bf) worth simulating: the model's choice, and for every scheme
    within ``keep_within`` of the model's best, ``ladder`` multiples of its
    smallest block factor and its largest, all within the budget."""
    g = plan.granularity
    out = {(plan.chosen.k, plan.chosen.bf)}
    floor = plan.best_throughput_mbs * (1 - keep_within)
    for a in plan.alternatives:
        if a.at_max is None or a.smallest is None or a.at_max.throughput_mbs < floor:
            continue
        out.add((a.k, a.bf_max))
        out.add((a.k, a.at_max.bf))
        for f in ladder:
            bf = min(a.bf_max, a.smallest.bf * f)
            out.add((a.k, bf - bf % g))
    return sorted(out)


def refine(
    loop: Loop,
    plan: Plan,
    *,
    machine: MachineLike = "qs20",
    tolerance: float = DEFAULT_TOLERANCE,
    ladder: tuple[int, ...] = LADDER,
    keep_within: float = KEEP_WITHIN,
    simulate: Callable[[int, int], float] | None = None,
) -> Refinement:
    """Simulates :func:`shortlist` of ``plan`` for ``loop`` on ``machine`` and
    chooses from the simulated throughputs.

    ``simulate(k, bf)`` may replace the simulation (MB/s); by default each
    point is the steady-state time per block of the generated program.
    """
    if not (0 <= tolerance < 1):
        raise UsageError(f"the tolerance must be in [0, 1), not {tolerance!r}")
    if plan.costs.bytes_per_iter != loop.bytes_per_iter:
        raise UsageError(
            f"the plan is for {plan.costs.bytes_per_iter:g} bytes per iteration, "
            f"the loop moves {loop.bytes_per_iter}"
        )
    sim = simulate or (lambda k, bf: simulated_mbs(loop, k, bf, machine=machine))
    trials = [
        Trial(k, bf, sim(k, bf), predict(plan.costs, k, bf, plan.constants).throughput_mbs)
        for k, bf in shortlist(plan, ladder=ladder, keep_within=keep_within)
    ]
    best = max(t.simulated_mbs for t in trials)
    good = [t for t in trials if t.simulated_mbs >= (1 - tolerance) * best]
    chosen = min(good, key=lambda t: (t.k, t.bf))
    model = next(t for t in trials if (t.k, t.bf) == (plan.chosen.k, plan.chosen.bf))
    return Refinement(chosen, model, trials)
