"""What the MPI library's own SPU code costs, in SPU cycles, and the SPU's
arithmetic rates used by reductions and by the ``model`` compute rule.

The library runs as Python, which costs no simulated time by itself; the SPU
code it stands for is charged here. Nothing was fitted: the values are
instruction counts of the C code each step stands for, on an in-order SPU
that issues about one instruction per cycle (two when paired), with the
6-cycle local-store load latency and an 18-cycle branch miss
(``../shared/spec/architecture.md``). Both protocols pay the same price for
the same step, so the comparison is between the protocols' DMAs,
notifications and waits.

Arithmetic (architecture notes, Kumar et al.): single precision is a fully
pipelined 4-wide FMA (8 flops per cycle); double precision on the original
Cell issues one 2-wide multiply-add every 7 cycles (4 flops), fully
pipelined on the PowerXCell 8i (``qs22``). Scalar code (no SIMD intrinsics,
like Kumar et al.'s matrix-vector kernel) uses one lane of these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["COSTS", "Costs", "dp_issue_cycles", "flop_cycles", "reduce_cycles"]


@dataclass(frozen=True)
class Costs:
    """SPU cycles of the library's steps (model values; see the module docstring)."""

    call: int = 40
    """Entering and leaving an MPI call: argument checks, datatype size, prologue."""
    entry_empty: int = 4
    """Looking at one metadata entry or header that is empty (load, test, branch)."""
    entry_match: int = 12
    """Comparing a valid entry with a receive (tag, source, context) and branching."""
    scan_loop: int = 20
    """One pass of a search loop over the queues, besides the entries."""
    header: int = 16
    """Filling a metadata entry or header in the local store (a few stores)."""
    request: int = 20
    """Creating, completing or looking at a request."""
    copy_per_quadword: int = 2
    """An SPU copy inside the local store: one load and one store per 16 bytes."""
    piece: int = 12
    """One block of a non-contiguous datatype moved through the local store:
    its address and length, a rotate for each unaligned end, the loop."""
    list_element: int = 4
    """Writing one DMA-list element (size and address: two stores)."""


COSTS = Costs()


def dp_issue_cycles(machine: str) -> int:
    """Cycles between two double-precision SIMD instructions: 7 on the
    original Cell, 1 on the PowerXCell 8i (``qs22``)."""
    return 1 if machine == "qs22" else 7


def flop_cycles(flops: float, machine: str, precision: str = "double", simd: bool = False) -> int:
    """SPU cycles for ``flops`` floating-point operations done as multiply-adds.

    A 2-wide DP multiply-add (4 flops) issues every ``dp_issue_cycles``
    cycles, a 4-wide SP one (8 flops) every cycle; scalar code uses one lane
    (2 flops per instruction)."""
    if precision not in ("double", "single"):
        raise ValueError(f"precision must be 'double' or 'single', not {precision!r}")
    issue = dp_issue_cycles(machine) if precision == "double" else 1
    lanes = (2 if precision == "double" else 4) if simd else 1
    per_instruction = 2 * lanes
    return math.ceil(flops / per_instruction) * issue


def reduce_cycles(nbytes: int, dtype_kind: str, itemsize: int, machine: str) -> int:
    """Cycles to combine two vectors of ``nbytes`` element-wise (SIMD code):
    per 16-byte quadword, two loads and a store on the odd pipeline (3
    cycles) against the arithmetic: 7 cycles (1 on qs22) for doubles, 1 for
    anything else."""
    quads = math.ceil(nbytes / 16)
    component = itemsize // 2 if dtype_kind == "c" else itemsize
    arith = dp_issue_cycles(machine) if (dtype_kind in "fc" and component == 8) else 1
    return quads * max(3, arith)
