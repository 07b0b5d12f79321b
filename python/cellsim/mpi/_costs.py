"""What the MPI library's own SPU code costs, in SPU cycles, and the SPU's
arithmetic rates used by reductions and by the ``model`` compute rule.

The library runs as Python, which costs no simulated time by itself; the SPU
code it stands for is charged here, step by step. Nothing was fitted. Each
step is the instruction sequence of the C code it stands for, timed by the
SPU's issue rules (:class:`Step`, :data:`FACTS`):

* the SPU is in order and issues two instructions a cycle, one on each
  pipeline: loads, stores, shuffles, rotates, branches and channel
  instructions on the odd one, arithmetic and compares on the even one
  (architecture notes), so a straight sequence takes ``max(odd, even)``
  cycles;
* a load whose value the next instruction needs exposes the local store's
  6-cycle latency (architecture notes; Kumar et al. quote the same figure);
* the SPU has no branch predictor: a branch the compiler did not hint the
  right way costs about 18 cycles (the branch-miss penalty of IBM's Cell BE
  Programming Handbook, which Kumar et al. cite);
* channel reads and writes and the MFC's commands are not here: the engine
  charges them where the library makes them (``spu.channel_cycles`` per
  channel instruction, ``mfc.issue_cycles`` = 10 for a DMA's six channel
  writes, Kistler et al. 2006 Table 1), and a blocking channel read waits as
  long as the hardware would.

Both protocols pay the same price for the same step, so the comparison is
between the protocols' DMAs, notifications and waits. docs/mpi.md lists each
step's instructions.

Arithmetic (architecture notes, Kumar et al.): single precision is a fully
pipelined 4-wide FMA (8 flops per cycle); double precision on the original
Cell issues one 2-wide multiply-add every 7 cycles (4 flops), fully
pipelined on the PowerXCell 8i (``qs22``): the machine files' ``spu.dp_issue_cycles``
and ``spu.dp_latency_cycles``. Scalar code (no SIMD intrinsics,
like Kumar et al.'s matrix-vector kernel) uses one lane of these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..spec import MachineLike, MachineSpec

__all__ = [
    "COSTS",
    "FACTS",
    "STEPS",
    "Costs",
    "SpuFacts",
    "Step",
    "costs_from",
    "dp_issue_cycles",
    "dp_latency_cycles",
    "flop_cycles",
    "reduce_cycles",
]


@dataclass(frozen=True)
class SpuFacts:
    """The SPU's timing facts the library's steps are timed with."""

    load_latency: int = 6
    """Cycles from a local-store load to the use of its value (architecture notes)."""
    branch_miss: int = 18
    """A branch not hinted the way it goes (IBM's Cell BE Programming Handbook)."""
    narrow_store_slots: int = 4
    """Odd-pipeline slots of a store narrower than 16 bytes (load, shuffle
    control, shuffle, store: the machine files' ``spu.ls_narrow_store_slots``)."""


FACTS = SpuFacts()


@dataclass(frozen=True)
class Step:
    """One step of the library's SPU code as instruction counts.

    ``odd``/``even``: instructions on each pipeline (dual issue: the longer
    one sets the time); ``loads``: loads whose latency is exposed;
    ``misses``: branches that go against their hint; ``narrow_stores``:
    stores narrower than a quadword (each several odd slots)."""

    what: str
    odd: int
    even: int = 0
    loads: int = 0
    misses: int = 0
    narrow_stores: int = 0

    def cycles(self, facts: SpuFacts = FACTS) -> int:
        """SPU cycles of the step."""
        odd = self.odd + self.narrow_stores * facts.narrow_store_slots
        return max(odd, self.even) + self.loads * facts.load_latency + self.misses * facts.branch_miss


STEPS: dict[str, Step] = {
    "call": Step(
        "entering and leaving an MPI call: the call and its hinted return (2 odd), a stack frame "
        "saving and restoring the link register and four registers (10 odd, 2 even), the checks of "
        "communicator, rank, tag and count (7 compares and ors, 1 branch), the datatype's size and "
        "the communicator's context loaded from their tables (4 odd, one latency exposed), and the "
        "branch to the path for this size and mode (blocking or not, buffered or synchronous), "
        "which no static hint gets right for every call (1 miss)",
        odd=17,
        even=9,
        loads=1,
        misses=1,
    ),
    "entry_empty": Step(
        "looking at one metadata entry or header that is empty: its quadword loaded, the flag "
        "masked and tested, the hinted fall-through branch (3 odd, 2 even; the loop is unrolled, so "
        "the load latency overlaps the previous entry)",
        odd=3,
        even=2,
    ),
    "entry_match": Step(
        "comparing a valid entry with a receive: tag and context rotated into place (2 odd), "
        "compared, ANY_TAG or-ed in, and-ed (4 even), the branch (1 odd)",
        odd=3,
        even=4,
    ),
    "scan_loop": Step(
        "one pass of a search over a queue besides its entries: the queue's front and base loaded "
        "(4 odd, one latency exposed), the loop set up (2 even), and the loop's exit, which goes "
        "against the hint once per pass (1 miss)",
        odd=4,
        even=2,
        loads=1,
        misses=1,
    ),
    "header": Step(
        "filling a 16-byte entry or header: the next index loaded (2 odd, latency exposed), the "
        "fields shuffled into one quadword (3 odd) and stored (1 odd); address and next index "
        "computed (4 even)",
        odd=6,
        even=4,
        loads=1,
    ),
    "request": Step(
        "creating, completing or looking at a request (a 32-byte structure): two quadwords "
        "loaded (one latency exposed), fields inserted or extracted (4 odd), two stored, the "
        "state tested (2 even)",
        odd=8,
        even=2,
        loads=1,
    ),
    "copy_per_quadword": Step(
        "an SPU copy inside the local store: a quadword load and a quadword store per 16 bytes "
        "(both odd; unrolled, so the latency overlaps)",
        odd=2,
    ),
    "piece": Step(
        "one block of a non-contiguous datatype moved through the local store: its offset and "
        "length loaded (4 odd, one latency exposed), a shuffle for each unaligned end (2 odd), the "
        "hinted loop branch (1 odd), the addresses (3 even)",
        odd=7,
        even=3,
        loads=1,
    ),
    "list_element": Step(
        "writing one 8-byte DMA-list element: a store narrower than a quadword",
        odd=0,
        narrow_stores=1,
    ),
}
"""The library's steps, each as the instructions of the C code it stands for."""


@dataclass(frozen=True)
class Costs:
    """SPU cycles of the library's steps (see :data:`STEPS` for each one's instructions)."""

    call: int
    """Entering and leaving an MPI call: prologue, checks, datatype size, dispatch."""
    entry_empty: int
    """Looking at one metadata entry or header that is empty (load, test, branch)."""
    entry_match: int
    """Comparing a valid entry with a receive (tag, source, context) and branching."""
    scan_loop: int
    """One pass of a search loop over the queues, besides the entries."""
    header: int
    """Filling a metadata entry or header in the local store (a few stores)."""
    request: int
    """Creating, completing or looking at a request."""
    copy_per_quadword: int
    """An SPU copy inside the local store: one load and one store per 16 bytes."""
    piece: int
    """One block of a non-contiguous datatype moved through the local store:
    its address and length, a rotate for each unaligned end, the loop."""
    list_element: int
    """Writing one DMA-list element (size and address: a narrow store)."""


def costs_from(facts: SpuFacts = FACTS, steps: dict[str, Step] | None = None) -> Costs:
    """The step costs timed with ``facts`` (the defaults: :data:`COSTS`)."""
    steps = STEPS if steps is None else steps
    return Costs(**{name: step.cycles(facts) for name, step in steps.items()})


COSTS = costs_from()


def dp_issue_cycles(machine: MachineLike) -> int:
    """Cycles between two double-precision SIMD instructions: the machine's
    ``spu.dp_issue_cycles`` (the machine files give the values and their
    sources)."""
    return MachineSpec.of(machine).facts.dp_issue_cycles


def dp_latency_cycles(machine: MachineLike) -> int:
    """Cycles from a double-precision multiply-add's issue to the use of its
    result: the machine's ``spu.dp_latency_cycles`` (the machine files give
    the values and their sources). A loop that adds every product into one
    sum waits this long per element."""
    return MachineSpec.of(machine).facts.dp_latency_cycles


def flop_cycles(flops: float, machine: MachineLike, precision: str = "double", simd: bool = False) -> int:
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


def reduce_cycles(nbytes: int, dtype_kind: str, itemsize: int, machine: MachineLike) -> int:
    """Cycles to combine two vectors of ``nbytes`` element-wise (SIMD code):
    per 16-byte quadword, two loads and a store on the odd pipeline (3
    cycles) against the arithmetic: ``dp_issue_cycles`` for doubles, 1 for
    anything else."""
    quads = math.ceil(nbytes / 16)
    component = itemsize // 2 if dtype_kind == "c" else itemsize
    arith = dp_issue_cycles(machine) if (dtype_kind in "fc" and component == 8) else 1
    return quads * max(3, arith)
