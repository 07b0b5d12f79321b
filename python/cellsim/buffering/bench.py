"""How accurate the model is and how good the planner's choices are (``cellsim bench planner``).

Two measures, on the simulated machine with native kernels:

**Model accuracy.** The relative error ``|predicted - simulated| / simulated``
of the throughput, over every point of Figure 12 (2b, t1-t4, ``C`` as
given; :func:`figure12_errors`) and over every (k, bf) simulated
for the random loops below: mean and maximum.

**Planner quality.** For a seeded set of random loops (input and output
streams of 4- or 8-byte elements, ``C_inner`` log-uniform in 0.2-8 ns,
``C_outer`` uniform in 0-400 ns, a budget log-uniform in 2-128 KB), the
planner's (k, bf) is simulated, and so is every k <= 4 with block factors on
a geometric grid (``per_octave`` per octave, plus the largest that fits)
within the budget; the loop counts as optimal when the planner's throughput
is within 2% of the best found. Each simulated point is the steady-state
time per block (:func:`~cellsim.buffering.fitting.steady_block_ns`): the
difference of two runs, so the prologue and epilogue cancel.

The model uses ``S`` and ``D1`` fitted on the machine for each loop's streams
and the chip's terms read from its machine file (:mod:`.terms`);
the planner is the paper's rule unless ``margin`` is given (see
:func:`cellsim.buffering.choice.plan`). The same measure is given for the
model-guided search of :mod:`cellsim.buffering.refine` (``refined_*``: the
model's plan refined by simulating its short list, as ``cellsim plan-buffers
--simulate`` does); the reference best is over every point simulated for the
loop, the grid and the short list.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from statistics import mean
from typing import Any

import numpy as np

from ..exceptions import UsageError
from ..machine import Machine
from ..spec import MachineLike
from . import BLOCKS_PER_POINT, KERNELS, SEED004_BLOCK_FACTORS, constants_for, seed004_loop
from .choice import DEFAULT_MARGIN, DEFAULT_TOLERANCE, max_block_factor, plan
from .loop import Loop, free_local_store, run_loop
from .model import predict
from .refine import refine, simulated_mbs
from .terms import planner_constants

__all__ = ["OPTIMAL_WITHIN", "LoopCase", "evaluate", "figure12_errors", "planner_bench", "random_loops"]

OPTIMAL_WITHIN = 0.02
"""The planner's choice counts as optimal within 2% of the best simulated throughput."""


@dataclass(frozen=True)
class LoopCase:
    """One random loop of the benchmark and its budget."""

    loop: Loop
    budget_bytes: int


def random_loops(count: int, seed: int = 0) -> list[LoopCase]:
    """``count`` random loops with budgets (seeded, so the set is reproducible)."""
    if not (isinstance(count, int) and count >= 1):
        raise UsageError(f"the number of loops must be a positive integer, not {count!r}")
    rng = np.random.default_rng(seed)
    out: list[LoopCase] = []
    while len(out) < count:
        e = int(rng.choice([4, 8]))
        n_in, n_out = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        c_inner = round(float(math.exp(rng.uniform(math.log(0.2), math.log(8.0)))), 3)
        c_outer = round(float(rng.uniform(0.0, 400.0)), 1)
        budget = int(math.exp(rng.uniform(math.log(2048), math.log(128 * 1024))))
        loop = Loop(4096, c_inner, c_outer, (e,) * n_in, (e,) * n_out)
        if budget >= loop.granularity * loop.bytes_per_iter:
            out.append(LoopCase(loop, budget))
    return out


def _grid(g: int, bf_max: int, per_octave: int) -> list[int]:
    """Multiples of ``g`` from ``g`` to ``bf_max``, ``per_octave`` per octave, and ``bf_max``."""
    top = bf_max // g
    units = {top}
    i = 0
    while True:
        u = round(2 ** (i / per_octave))
        if u > top:
            break
        units.add(u)
        i += 1
    return sorted(u * g for u in units)


def evaluate(
    case: LoopCase,
    *,
    machine: MachineLike = "qs20",
    per_octave: int = 3,
    tolerance: float = DEFAULT_TOLERANCE,
    margin: float = DEFAULT_MARGIN,
) -> dict[str, Any]:
    """The planner's choice for one loop against every (k <= 4, bf) on the grid, simulated."""
    loop, budget = case.loop, case.budget_bytes
    m = Machine(machine)
    costs = loop.costs(m.core_hz)
    consts = planner_constants(machine, loop.inputs, loop.outputs)
    g, B = loop.granularity, loop.bytes_per_iter
    p = plan(
        costs,
        budget,
        consts,
        k_max=4,
        granularity=g,
        tolerance=tolerance,
        max_bytes=free_local_store(m),
        margin=margin,
    )
    cands = {(p.chosen.k, p.chosen.bf)}
    for k in range(1, 5):
        bf_max = max_block_factor(budget, k, B, g)
        if bf_max >= g:
            cands |= {(k, bf) for bf in _grid(g, bf_max, per_octave)}
    simulated: dict[tuple[int, int], float] = {}

    def simulate(k: int, bf: int) -> float:
        if (k, bf) not in simulated:
            simulated[k, bf] = simulated_mbs(loop, k, bf, machine=machine)
        return simulated[k, bf]

    points = [
        {
            "k": k,
            "bf": bf,
            "simulated_mbs": simulate(k, bf),
            "predicted_mbs": predict(costs, k, bf, consts).throughput_mbs,
        }
        for k, bf in sorted(cands)
    ]
    # The model-guided search simulates its own short list; points off the grid
    # are simulated too, and the best of everything simulated is the reference.
    r = refine(loop, p, machine=machine, tolerance=tolerance, simulate=simulate)
    best_k, best_bf = max(simulated, key=lambda kb: simulated[kb])
    best_mbs = simulated[best_k, best_bf]
    mine = next(q for q in points if (q["k"], q["bf"]) == (p.chosen.k, p.chosen.bf))
    errors = [abs(q["predicted_mbs"] - q["simulated_mbs"]) / q["simulated_mbs"] for q in points]
    return {
        "inputs": list(loop.inputs),
        "outputs": list(loop.outputs),
        "bytes_per_iter": B,
        "c_inner_ns": loop.c_inner,
        "c_outer_ns": loop.c_outer,
        "budget_bytes": budget,
        "S_ns": consts.S_ns,
        "D1_ns_per_byte": consts.D1_ns_per_byte,
        "planner_k": p.chosen.k,
        "planner_bf": p.chosen.bf,
        "planner_regime": p.chosen.regime,
        "planner_predicted_mbs": p.chosen.throughput_mbs,
        "planner_simulated_mbs": mine["simulated_mbs"],
        "best_k": best_k,
        "best_bf": best_bf,
        "best_simulated_mbs": best_mbs,
        "fraction_of_best": mine["simulated_mbs"] / best_mbs,
        "optimal": mine["simulated_mbs"] >= (1 - OPTIMAL_WITHIN) * best_mbs,
        "refined_k": r.chosen.k,
        "refined_bf": r.chosen.bf,
        "refined_simulated_mbs": r.chosen.simulated_mbs,
        "refined_fraction_of_best": r.chosen.simulated_mbs / best_mbs,
        "refined_optimal": r.chosen.simulated_mbs >= (1 - OPTIMAL_WITHIN) * best_mbs,
        "refined_trials": len(r.trials),
        "points": len(points),
        "errors": errors,
        "model_mean_error": mean(errors),
        "model_max_error": max(errors),
    }


def figure12_errors(
    *, machine: MachineLike = "qs20", seed: int = 0, blocks: int = BLOCKS_PER_POINT
) -> list[float]:
    """The model's relative throughput error at each point of Chen et al. 2006's Figure 12 with ``C``
    as given: 2b, every kernel and block factor, ``blocks`` blocks a point, simulated with
    native kernels and predicted with the fit on ``machine``, the points ``cellsim run
    buffering --figure 12`` plots."""
    core_hz = Machine(machine).core_hz
    constants = constants_for(machine)
    errors = []
    for kernel in KERNELS:
        for bf in SEED004_BLOCK_FACTORS:
            loop = seed004_loop(kernel, blocks * bf)
            simulated = run_loop(loop, 2, bf, machine=machine, seed=seed).throughput_mbs
            predicted = predict(loop.costs(core_hz), 2, bf, constants).throughput_mbs
            errors.append(abs(predicted - simulated) / simulated)
    return errors


def planner_bench(
    loops: int = 200,
    *,
    seed: int = 0,
    machine: MachineLike = "qs20",
    per_octave: int = 3,
    figure12: bool = True,
    margin: float = DEFAULT_MARGIN,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Both measures; see the module docstring. Errors are fractions (0.02 is 2%)."""
    t0 = time.perf_counter()
    Machine(machine)  # an unknown machine fails before any work
    if not (isinstance(per_octave, int) and per_octave >= 1):
        raise UsageError(f"per_octave must be a positive integer, not {per_octave!r}")
    cases = random_loops(loops, seed)
    fig12_errors: list[float] = []
    if figure12:
        fig12_errors = figure12_errors(machine=machine, seed=seed)
    per_loop = []
    for i, case in enumerate(cases):
        per_loop.append(evaluate(case, machine=machine, per_octave=per_octave, margin=margin))
        if progress is not None:
            progress(i + 1, len(cases))
    random_errors = [e for r in per_loop for e in r.pop("errors")]
    every = fig12_errors + random_errors
    optimal = sum(1 for r in per_loop if r["optimal"])
    return {
        "machine": machine,
        "seed": seed,
        "loops": len(per_loop),
        "model_mean_error": mean(every),
        "model_max_error": max(every),
        "optimal_fraction": optimal / len(per_loop),
        "optimal_within": OPTIMAL_WITHIN,
        "margin": margin,
        "figure12_points": len(fig12_errors),
        "figure12_mean_error": mean(fig12_errors) if fig12_errors else None,
        "figure12_max_error": max(fig12_errors) if fig12_errors else None,
        "random_points": len(random_errors),
        "random_mean_error": mean(random_errors),
        "random_max_error": max(random_errors),
        "planner_mean_fraction_of_best": mean(r["fraction_of_best"] for r in per_loop),
        "planner_worst_fraction_of_best": min(r["fraction_of_best"] for r in per_loop),
        "refined_optimal_fraction": sum(1 for r in per_loop if r["refined_optimal"]) / len(per_loop),
        "refined_mean_fraction_of_best": mean(r["refined_fraction_of_best"] for r in per_loop),
        "refined_worst_fraction_of_best": min(r["refined_fraction_of_best"] for r in per_loop),
        "refined_mean_trials": mean(r["refined_trials"] for r in per_loop),
        "exhaustive_mean_points": mean(r["points"] for r in per_loop),
        "wall_s": time.perf_counter() - t0,
        "per_loop": per_loop,
    }
