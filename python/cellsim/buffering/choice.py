"""Choosing the buffering scheme and the block factor (Chen et al. 2006, Section 3).

The paper's :func:`choose_double_buffer` (its Figure 9) picks two or three
buffers for a budget of ``B`` single-buffer elements, ignoring ``C_outer``.
:func:`plan` extends it to any number of buffers ``k <= k_max`` and keeps
``C_outer``: for each ``k`` the largest block factor that fits the budget
gives that scheme's best latency (the model's latency never grows with the
block factor); the scheme chosen is the one with the fewest buffers whose
best throughput is within ``tolerance`` of the best of all, as the paper
prefers fewer buffers when the performance is the same; its block factor is
the smallest one that still reaches that throughput, which leaves the rest of
the budget to other uses.

The smallest such block factor sits right at a regime boundary, where a real
pipeline is not yet as good as the model's sharp corner says. ``margin``
(default 1: the paper's rule) asks that the bound also hold with the set-up
time ``S`` times ``margin``: on the simulated qs20, the set-up that a
two-buffer pipeline has to hide is about 2.4 times the blocking intercept of
the fit, so ``margin=2`` is the natural robust setting there.

>>> from cellsim.buffering.choice import plan
>>> from cellsim.buffering.model import PAPER, Costs
>>> p = plan(Costs(2.83, 300.0, 24), budget_bytes=64 * 1024, constants=PAPER)
>>> p.chosen.k, p.chosen.bf, p.chosen.regime
(2, 1198, 'computation-bound')
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from ..exceptions import UsageError
from .model import Constants, Costs, Prediction, predict, regime, terms

__all__ = [
    "DEFAULT_K_MAX",
    "DEFAULT_MARGIN",
    "DEFAULT_TOLERANCE",
    "Alternative",
    "Plan",
    "choose_double_buffer",
    "compute_bound_blocks",
    "max_block_factor",
    "min_block_compute_bound",
    "min_block_dma_bound",
    "plan",
]

DEFAULT_K_MAX = 4
"""Schemes considered by default: 1 to 4 buffers."""

DEFAULT_TOLERANCE = 0.01
"""A throughput within 1% of the best counts as reaching it."""

DEFAULT_MARGIN = 1.0
"""The paper's rule: a scheme is bound when the model says so (no margin)."""


def choose_double_buffer(C: float, D: float, S: float, B: float) -> bool:
    """The paper's Figure 9, verbatim: ``True`` for double buffering, ``False``
    for triple buffering, for a budget of ``B`` single-buffer elements
    (``C`` per iteration, ``C_outer`` ignored)."""
    if D > C:
        if S / (D - C) <= B / 2:
            return True
    elif D < C and S / (C - D) <= B / 2:
        return True
    return False


def min_block_dma_bound(k: int, S: float, D: float, c_inner: float, c_outer: float = 0.0) -> float:
    """The smallest block factor (real) at which ``k >= 2`` buffers are DMA-bound,
    ``inf`` if none is.

    DMA-bound needs ``D >= C = C_inner + C_outer/bf`` and ``(k-1) D >= C + S/bf``:
    ``bf >= C_outer/(D - C_inner)`` and ``bf >= (S + C_outer)/((k-1) D - C_inner)``.
    With ``C_outer = 0`` this is the paper's ``S/(D - C)`` (k = 2) and
    ``S/(2D - C)`` (k = 3).
    """
    if k < 2:
        raise UsageError(f"a single buffer is never DMA-bound; k must be >= 2, not {k}")
    if D < c_inner or (D == c_inner and c_outer > 0) or (k - 1) * D <= c_inner:  # noqa: SIM300 (the paper's notation)
        return math.inf
    need = (S + c_outer) / ((k - 1) * D - c_inner)
    if c_outer > 0:
        need = max(need, c_outer / (D - c_inner))
    return need


def compute_bound_blocks(
    k: int, S: float, D: float, c_inner: float, c_outer: float = 0.0
) -> tuple[float, float] | None:
    """The block factors (a real interval ``(low, high)``, ``high`` may be
    ``inf``) at which ``k >= 2`` buffers are computation-bound; ``None`` if none.

    Computation-bound needs ``D <= C = C_inner + C_outer/bf`` (always true if
    ``D <= C_inner``, else ``bf <= C_outer/(D - C_inner)``) and
    ``(k-1) C - S/bf >= D``, i.e. ``bf ((k-1) C_inner - D) >= S - (k-1) C_outer``.
    With ``C_outer = 0`` the interval starts at the paper's ``S/(C - D)``
    (k = 2) and ``S/(2C - D)`` (k = 3). With ``C_outer > 0`` and
    ``C_inner < D``, only small block factors are computation-bound: the
    issuing overhead ``C_outer/bf`` is then what the SPU waits for.
    """
    if k < 2:
        raise UsageError(f"a single buffer is never computation-bound; k must be >= 2, not {k}")
    low, high = 0.0, math.inf
    if D > c_inner:  # noqa: SIM300 (the paper's notation)
        if c_outer <= 0:
            return None
        high = c_outer / (D - c_inner)
    a = (k - 1) * c_inner - D  # the second condition is a + b/bf >= 0
    b = (k - 1) * c_outer - S
    if a > 0:
        low = max(low, -b / a)
    elif a == 0:
        if b < 0:
            return None
    elif b > 0:
        high = min(high, b / -a)
    else:
        return None
    return (low, high) if low <= high else None


def min_block_compute_bound(k: int, S: float, D: float, c_inner: float, c_outer: float = 0.0) -> float:
    """The smallest block factor (real) at which ``k >= 2`` buffers are
    computation-bound (``inf`` if none): the start of :func:`compute_bound_blocks`."""
    r = compute_bound_blocks(k, S, D, c_inner, c_outer)
    return math.inf if r is None else r[0]


def max_block_factor(budget_bytes: float, k: int, bytes_per_iter: float, granularity: int = 1) -> int:
    """The largest multiple of ``granularity`` with ``k * bf * bytes_per_iter <= budget``
    (0 if none)."""
    bf = int(budget_bytes // (k * bytes_per_iter))
    return bf - bf % granularity


@dataclass(frozen=True)
class Alternative:
    """What ``k`` buffers can do within the budget."""

    k: int
    bf_max: int
    """The largest block factor that fits (0: not even the smallest fits)."""
    at_max: Prediction | None
    """This scheme's best: the model at ``bf_max`` or at the largest block factor below it whose
    blocks are whole lines (:meth:`~cellsim.buffering.model.ChipTerms.block_unit`)."""
    smallest: Prediction | None
    """The smallest block factor within the tolerance of ``at_max``."""


@dataclass(frozen=True)
class Plan:
    """The planner's recommendation and the alternatives it weighed."""

    chosen: Prediction
    best_throughput_mbs: float
    """The best throughput of any (k, bf) within the budget."""
    alternatives: list[Alternative]
    costs: Costs
    constants: Constants
    budget_bytes: int
    granularity: int
    tolerance: float
    margin: float = DEFAULT_MARGIN
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """A JSON-serialisable summary."""

        def pred(p: Prediction | None) -> dict[str, object] | None:
            if p is None:
                return None
            return {
                "k": p.k,
                "bf": p.bf,
                "regime": p.regime,
                "time_per_iter_ns": p.time_per_iter_ns,
                "throughput_mbs": p.throughput_mbs,
                "space_bytes": p.space_bytes,
            }

        return {
            "k": self.chosen.k,
            "bf": self.chosen.bf,
            "regime": self.chosen.regime,
            "predicted_mbs": self.chosen.throughput_mbs,
            "space_bytes": self.chosen.space_bytes,
            "best_mbs": self.best_throughput_mbs,
            "c_inner_ns": self.costs.c_inner_ns,
            "c_outer_ns": self.costs.c_outer_ns,
            "bytes_per_iter": self.costs.bytes_per_iter,
            "budget_bytes": self.budget_bytes,
            "granularity": self.granularity,
            "tolerance": self.tolerance,
            "margin": self.margin,
            "S_ns": self.constants.S_ns,
            "D1_ns_per_byte": self.constants.D1_ns_per_byte,
            "constants": self.constants.source,
            "chip": dataclasses.asdict(self.constants.chip),
            "alternatives": [
                {"k": a.k, "bf_max": a.bf_max, "at_max": pred(a.at_max), "smallest": pred(a.smallest)}
                for a in self.alternatives
            ],
            "notes": list(self.notes),
        }


def _best(costs: Costs, k: int, bf_max: int, g: int, constants: Constants) -> Prediction:
    """The model's best block factor for ``k`` buffers up to ``bf_max``: ``bf_max`` or the
    largest whose blocks are whole lines (the throughput grows with the block factor over those,
    and a block that ends within a line pays for the whole line)."""
    unit = constants.chip.block_unit(g)
    candidates = {bf_max, bf_max - bf_max % unit} - {0}
    return max((predict(costs, k, bf, constants) for bf in candidates), key=lambda p: p.throughput_mbs)


def _smallest(costs: Costs, k: int, bf_max: int, g: int, target: float, constants: Constants) -> Prediction:
    """The smallest multiple of ``g`` up to ``bf_max`` whose throughput is at least ``target``
    (reached by :func:`_best`).

    Over block factors of whole lines (multiples of the unit) the model's throughput never
    falls as the block factor grows, and a block factor between two of them does no better
    than the larger: a binary search over the unit's multiples, then the ones between."""
    unit = constants.chip.block_unit(g)

    def reaches(bf: int) -> bool:
        return predict(costs, k, bf, constants).throughput_mbs >= target

    lo, hi = 1, bf_max // unit  # in units; hi qualifies if any does
    if hi == 0 or not reaches(hi * unit):
        hi_bf = bf_max  # only the largest block factor (not whole lines) reaches the target
    else:
        while lo < hi:
            mid = (lo + hi) // 2
            if reaches(mid * unit):
                hi = mid
            else:
                lo = mid + 1
        hi_bf = hi * unit
    below = range(max(g, hi_bf - unit + g), hi_bf, g)
    return predict(costs, k, next((bf for bf in below if reaches(bf)), hi_bf), constants)


def _bound(costs: Costs, constants: Constants, k: int, bf: int, margin: float) -> bool:
    """Whether ``k`` buffers of ``bf`` are DMA- or computation-bound with the set-up time times ``margin``."""
    if k < 2:
        return False
    S, D, C, F = terms(costs, k, bf, constants)
    return regime(k, bf, S * margin, D, C, F) in ("dma-bound", "computation-bound", "command-bound")


def plan(
    costs: Costs,
    budget_bytes: float,
    constants: Constants,
    *,
    k_max: int = DEFAULT_K_MAX,
    granularity: int = 1,
    tolerance: float = DEFAULT_TOLERANCE,
    max_bytes: int | None = None,
    margin: float = DEFAULT_MARGIN,
) -> Plan:
    """Chooses the number of buffers and the block factor for a loop.

    Args:
        costs: the loop's ``C_inner``, ``C_outer`` and bytes per iteration.
        budget_bytes: local store available for all the buffers.
        constants: the machine's ``S`` and ``D1`` (fitted, or the paper's).
        k_max: schemes considered, 1 to ``k_max`` buffers.
        granularity: block factors are multiples of it (DMA sizes must be
            multiples of 16 bytes: 2 for 8-byte elements).
        tolerance: a throughput within this fraction of the best counts as the best.
        max_bytes: local store free for buffers on the machine; a larger
            budget is an error.
        margin: robustness against the set-up time: with ``margin > 1``, a
            scheme counts as DMA- or computation-bound only if it would be with
            ``S * margin``; the fewest buffers bound that way at their largest
            block factor are preferred, and the block factor is raised until
            the bound holds with the margin. ``1`` is the paper's rule.
    """
    if not (isinstance(k_max, int) and k_max >= 1):
        raise UsageError(f"k_max must be an integer >= 1, not {k_max!r}")
    if not (isinstance(granularity, int) and granularity >= 1):
        raise UsageError(f"the block-factor granularity must be an integer >= 1, not {granularity!r}")
    if not (0 <= tolerance < 1):
        raise UsageError(f"the tolerance must be in [0, 1), not {tolerance!r}")
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin >= 1):
        raise UsageError(f"the margin on the set-up time must be a number >= 1, not {margin!r}")
    if not (isinstance(budget_bytes, (int, float)) and math.isfinite(budget_bytes) and budget_bytes > 0):
        raise UsageError(f"the budget must be a positive number of bytes, not {budget_bytes!r}")
    if budget_bytes < costs.bytes_per_iter:
        raise UsageError(
            f"a budget of {budget_bytes:g} bytes is smaller than one buffer of one element "
            f"({costs.bytes_per_iter:g} bytes per iteration)"
        )
    if max_bytes is not None and budget_bytes > max_bytes:
        raise UsageError(
            f"a budget of {budget_bytes:g} bytes does not fit in the local store with the program "
            f"({max_bytes} bytes are free for buffers)"
        )
    if max_block_factor(budget_bytes, 1, costs.bytes_per_iter, granularity) < granularity:
        raise UsageError(
            f"a budget of {budget_bytes:g} bytes holds no legal block: the smallest block factor, "
            f"{granularity}, needs {granularity * costs.bytes_per_iter:g} bytes"
        )
    alts: list[Alternative] = []
    for k in range(1, k_max + 1):
        bf_max = max_block_factor(budget_bytes, k, costs.bytes_per_iter, granularity)
        at_max = _best(costs, k, bf_max, granularity, constants) if bf_max >= granularity else None
        alts.append(Alternative(k, bf_max, at_max, None))
    fitting = [a for a in alts if a.at_max is not None]
    best = max(a.at_max.throughput_mbs for a in fitting)  # type: ignore[union-attr]
    target = best * (1 - tolerance)
    alts = [
        Alternative(
            a.k,
            a.bf_max,
            a.at_max,
            None
            if a.at_max is None
            else _smallest(
                costs, a.k, a.bf_max, granularity, a.at_max.throughput_mbs * (1 - tolerance), constants
            ),
        )
        for a in alts
    ]
    tied = [a for a in alts if a.at_max is not None and a.at_max.throughput_mbs >= target]
    winner = tied[0]
    robust = margin > 1 and [a for a in tied if _bound(costs, constants, a.k, a.at_max.bf, margin)]  # type: ignore[union-attr]
    if robust:
        winner = robust[0]
    chosen = _smallest(costs, winner.k, winner.bf_max, granularity, target, constants)
    if robust:
        bf = chosen.bf
        while not _bound(costs, constants, winner.k, bf, margin):
            bf += granularity
        chosen = predict(costs, winner.k, bf, constants)
    notes = []
    if margin > 1:
        notes.append(
            f"margin {margin:g}: {winner.k} buffer{'s' if winner.k > 1 else ''} "
            + ("bound with S x margin" if robust else "(no scheme is bound with S x margin: no effect)")
        )
    if winner.k > 1 and len(fitting) > 1:
        S, D = constants.S_ns, constants.D1_ns_per_byte * costs.bytes_per_iter
        dma = min_block_dma_bound(winner.k, S, D, costs.c_inner_ns, costs.c_outer_ns)
        comp = compute_bound_blocks(winner.k, S, D, costs.c_inner_ns, costs.c_outer_ns)
        if math.isfinite(dma):
            notes.append(f"{winner.k} buffers are DMA-bound from bf = {dma:.1f}")
        if comp is not None:
            lo, hi = comp
            if math.isinf(hi):
                span = "at every block factor" if lo <= 0 else f"from bf = {lo:.1f}"
            else:
                span = f"for bf up to {hi:.1f}" if lo <= 0 else f"for bf = {lo:.1f} to {hi:.1f}"
            notes.append(f"{winner.k} buffers are computation-bound {span}")
    return Plan(
        chosen=chosen,
        best_throughput_mbs=best,
        alternatives=alts,
        costs=costs,
        constants=constants,
        budget_bytes=int(budget_bytes),
        granularity=granularity,
        tolerance=tolerance,
        margin=margin,
        notes=notes,
    )
