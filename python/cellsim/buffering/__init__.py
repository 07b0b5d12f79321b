"""DMA buffering planner: Chen et al. 2006's model, the choice of scheme and block
factor, a loop generator that runs on the simulated chip, and the fit of the
machine's DMA constants.

========================  ==============================================================
module                    what
========================  ==============================================================
:mod:`.model`             latency of a loop blocked by ``bf`` with ``k`` buffers (Section 2)
:mod:`.choice`            the scheme and the smallest block factor within a budget (Section 3)
:mod:`.loop`              the k-buffered SPE program (Figure 2), run and checked on the chip
:mod:`.fitting`           ``S`` and ``D1`` by linear regression over DMA-only runs (Section 4)
:mod:`.profile`           ``C`` profiled in single-buffered code (Section 4); per-block SPU costs
:mod:`.terms`             what the chip adds to the model, from its machine file (the planner's)
:mod:`.refine`            the model's plan refined by simulating a short list on the chip
========================  ==============================================================

``cellsim plan-buffers`` is the command-line planner, ``cellsim run buffering``
reproduces Figures 10-12 and ``cellsim bench planner`` measures the model's
accuracy and the planner's quality.

>>> from cellsim.buffering import Loop, plan_loop
>>> p = plan_loop(Loop(n=1 << 20, c_inner=2.83, c_outer=300.0), budget_bytes=48 * 1024)
>>> p.chosen.k, p.chosen.regime
(2, 'computation-bound')
"""

from __future__ import annotations

from ..machine import Machine
from ..spec import MachineLike
from .choice import (
    Alternative,
    Plan,
    choose_double_buffer,
    compute_bound_blocks,
    max_block_factor,
    min_block_compute_bound,
    min_block_dma_bound,
    plan,
)
from .fitting import Fit, fit, fitted_constants, linear_fit, steady_block_ns
from .loop import BufferedLoop, Loop, LoopRun, free_local_store, generate, k_buffered_loop, run_loop
from .model import (
    PAPER,
    ChipTerms,
    Constants,
    Costs,
    Prediction,
    latency_ns,
    predict,
    regime,
    time_per_iteration_ns,
)
from .refine import Refinement, Trial, refine, shortlist
from .terms import chip_terms, planner_constants

__all__ = [
    "BLOCKS_PER_POINT",
    "C_OUTER_NS",
    "KERNELS",
    "PAPER",
    "SEED004_BLOCK_FACTORS",
    "SEED004_INPUTS",
    "SEED004_OUTPUTS",
    "Alternative",
    "BufferedLoop",
    "ChipTerms",
    "Constants",
    "Costs",
    "Fit",
    "Loop",
    "LoopRun",
    "Plan",
    "Prediction",
    "Refinement",
    "Trial",
    "chip_terms",
    "choose_double_buffer",
    "compute_bound_blocks",
    "constants_for",
    "fit",
    "fitted_constants",
    "generate",
    "k_buffered_loop",
    "latency_ns",
    "linear_fit",
    "max_block_factor",
    "min_block_compute_bound",
    "min_block_dma_bound",
    "plan",
    "plan_loop",
    "planner_constants",
    "predict",
    "refine",
    "regime",
    "run_loop",
    "seed004_loop",
    "shortlist",
    "steady_block_ns",
    "time_per_iteration_ns",
]

KERNELS: dict[str, float] = {"t1": 0.51, "t2": 1.73, "t3": 2.83, "t4": 3.93}
"""Chen et al. 2006's test kernels: ``C_inner`` in ns (calibration.md)."""
C_OUTER_NS = 300.0
"""Chen et al. 2006's ``C_outer`` (all kernels), ns."""
SEED004_INPUTS: tuple[int, ...] = (8, 8)
SEED004_OUTPUTS: tuple[int, ...] = (8,)
"""Two 8-byte reads and one 8-byte write per iteration: 24 bytes."""
SEED004_BLOCK_FACTORS: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3072)
"""Block factors of Chen et al. 2006's Figures 10 and 12 (3072: 3 buffers of 3 streams fill 216 KB)."""
BLOCKS_PER_POINT = 256
"""Blocks per simulated point of those figures: the prologue and epilogue weigh well under 1%.
``cellsim run buffering`` and ``cellsim bench planner`` simulate the same points."""


def seed004_loop(kernel: str, n: int) -> Loop:
    """Test kernel ``t1``..``t4`` of Chen et al. 2006 with ``n`` iterations."""
    if kernel not in KERNELS:
        from ..exceptions import UsageError

        raise UsageError(f"unknown kernel {kernel!r}: Chen et al.'s kernels are {', '.join(KERNELS)}")
    return Loop(n, KERNELS[kernel], C_OUTER_NS, SEED004_INPUTS, SEED004_OUTPUTS)


def constants_for(
    machine: MachineLike = "qs20",
    S: float | None = None,
    D1: float | None = None,
    inputs: tuple[int, ...] = SEED004_INPUTS,
    outputs: tuple[int, ...] = SEED004_OUTPUTS,
) -> Constants:
    """The paper's constants for ``machine``: the fit on it, with ``S`` and/or ``D1`` replaced
    where given (no chip terms: Figures 10-12 show the paper's model; the planner uses
    :func:`~cellsim.buffering.terms.planner_constants`)."""
    if S is not None and D1 is not None:
        return Constants(S, D1, source="given")
    f = fitted_constants(machine, inputs, outputs)
    if S is None and D1 is None:
        return f.constants
    return Constants(
        f.S_ns if S is None else S,
        f.D1_ns_per_byte if D1 is None else D1,
        source=f"fit {f.machine}, {'S' if S is not None else 'D1'} given",
    )


def plan_loop(
    loop: Loop,
    budget_bytes: int,
    *,
    machine: MachineLike = "qs20",
    S: float | None = None,
    D1: float | None = None,
    k_max: int = 4,
    tolerance: float = 0.01,
    margin: float = 1.0,
) -> Plan:
    """:func:`plan` for a :class:`Loop` on ``machine``: the fit on the loop's
    streams (or the given ``S``/``D1``) and the chip's terms (:mod:`.terms`), the
    loop's block-factor granularity, and the local store left by the program as the
    largest budget (``margin``: see :func:`~cellsim.buffering.choice.plan`)."""
    m = Machine(machine)
    constants = planner_constants(machine, loop.inputs, loop.outputs, S=S, D1=D1)
    return plan(
        loop.costs(m.core_hz),
        budget_bytes,
        constants,
        k_max=k_max,
        granularity=loop.granularity,
        tolerance=tolerance,
        max_bytes=free_local_store(m),
        margin=margin,
    )
