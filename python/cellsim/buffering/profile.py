"""``C`` measured as Chen et al. 2006 measured it, and the SPU's real per-block costs.

Chen et al. "used a profiling tool called Paraver to instrument code and
measure the amount of computation time for each iteration of the outer
blocked loop. This was done for each test case using a single-buffer scheme
and a large block factor to amortize the overhead." Computation time is
everything the SPU does in an outer iteration except wait for its DMAs: the
inner loop (``C_inner`` per element) and the block's overhead (``C_outer``:
"the function call and runtime checking overhead in compiler-generated code
for DMA transfer requests"), which includes the channel writes that issue
the block's DMAs and the tag-mask write of its wait.

:func:`profile_c` does the same on the simulated chip: it runs the generated
single-buffered loop instrumented around each DMA wait and fits a line
through the busy time per block against the block factor (slope
``C_inner``, intercept ``C_outer``).

The generated loop therefore charges, per block, ``C_outer`` *less* what the
engine already charges for the SPU's channel work (:func:`engine_block_cycles`:
``mfc.issue_cycles`` per DMA command, Kistler et al. 2006 Table 1, and
``spu.channel_cycles`` for the tag-mask write), so that profiling it returns
the paper's constants; and with two or more buffers it adds the buffer
switching that the single-buffered code profiled by the paper does not have
(:data:`SWITCH_INSTRUCTIONS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any

from ..exceptions import CellsimError, UsageError
from ..machine import Machine
from ..spec import MachineLike
from ..spu import mfc_get, mfc_read_tag_status_all, mfc_write_tag_mask

__all__ = [
    "PROFILE_BLOCK_FACTORS",
    "SWITCH_INSTRUCTIONS",
    "Profile",
    "SpuChannelCosts",
    "channel_costs",
    "engine_block_cycles",
    "profile_c",
    "switch_cycles",
]

PROFILE_BLOCK_FACTORS: tuple[int, ...] = (1024, 1536, 2048)
"""Large block factors of the single-buffered runs that :func:`profile_c` fits."""

SWITCH_INSTRUCTIONS = {"per_block": 4, "per_stream": 2}
"""Even-pipeline instructions of Figure 2(d)'s buffer switching that single
buffering has not: ``t = (t + 1) % k`` (an add and an and, or a compare and a
select for k not a power of two) and the second ``min`` (a compare and a
select): 4 per block; each stream's buffer address from ``t`` (a shift and an
add): 2 per stream. The SPU issues one even instruction a cycle."""


@dataclass(frozen=True)
class SpuChannelCosts:
    """What the engine charges the SPU for issuing a DMA and for one channel instruction."""

    issue_cycles: int
    channel_cycles: int


def _probe(out: list[int], clock: Any, ea: int) -> int:
    t0 = clock()
    mfc_write_tag_mask(1)
    t1 = clock()
    mfc_get(0x8000, ea, 16, 0)
    t2 = clock()
    mfc_read_tag_status_all()
    out.extend((t1 - t0, t2 - t1))
    return 0


@lru_cache(maxsize=16)
def channel_costs(machine: MachineLike = "qs20") -> SpuChannelCosts:
    """Measures, on ``machine``, the SPU cycles of a channel write and of a DMA's issue
    (a machine that cannot be built by its name alone, e.g. a TOML file's, gets the shipped
    machines' 10 and 2 cycles)."""
    try:
        m = Machine(machine)
    except CellsimError:
        return SpuChannelCosts(issue_cycles=10, channel_cycles=2)
    out: list[int] = []
    ea = int(m.alloc(128))
    m.start_spe(0, lambda speid, argp, envp: _probe(out, lambda: m.cycles, ea))
    m.run()
    return SpuChannelCosts(issue_cycles=out[1], channel_cycles=out[0])


def engine_block_cycles(dma_commands: int, machine: MachineLike = "qs20") -> int:
    """SPU cycles the engine charges a block for its channel work: ``dma_commands``
    issues and the tag-mask write of its wait (the status read is part of the wait)."""
    c = channel_costs(machine)
    return dma_commands * c.issue_cycles + c.channel_cycles


def switch_cycles(k: int, streams: int) -> int:
    """SPU cycles of the buffer switching of a block with ``k`` buffers (0 for one)."""
    if k < 2:
        return 0
    return SWITCH_INSTRUCTIONS["per_block"] + SWITCH_INSTRUCTIONS["per_stream"] * streams


@dataclass(frozen=True)
class Profile:
    """``C`` as profiled in single-buffered code (:func:`profile_c`)."""

    c_inner_ns: float
    c_outer_ns: float
    block_factors: tuple[int, ...]
    busy_ns_per_block: tuple[float, ...]
    wait_ns_per_block: tuple[float, ...]


def profile_c(
    loop: Any,
    *,
    machine: MachineLike = "qs20",
    block_factors: tuple[int, ...] = PROFILE_BLOCK_FACTORS,
    blocks: int = 8,
    seed: int = 0,
) -> Profile:
    """Profiles ``loop`` (a :class:`~cellsim.buffering.loop.Loop`) as Chen et al. 2006
    did: single-buffered, large block factors, the busy time of each outer
    iteration (everything but the DMA wait), and a line through it."""
    if len(set(block_factors)) < 2:
        raise UsageError("profiling C needs at least two different block factors")
    from .fitting import linear_fit
    from .loop import generate, k_buffered_loop

    busy, wait = [], []
    for bf in block_factors:
        lp = loop.with_n(blocks * bf)
        m = Machine(machine, seed=seed)
        prog = generate(lp, 1, bf, m)
        ins = [m.alloc(lp.n * e) for e in lp.inputs]
        outs = [m.alloc(lp.n * e) for e in lp.outputs]
        waits: list[tuple[int, int]] = []
        params = prog.params(ins, outs)
        m.start_spe(
            0,
            lambda speid, argp, envp, p=params, w=waits, mm=m: k_buffered_loop(
                speid, argp, envp, **p, profile=(lambda: mm.cycles, w)
            ),
        )
        m.run()
        # an outer iteration's computation: from the end of one wait to the start of the next
        # (its inner loop, the put of its block, the get of the next, the tag-mask write)
        spans = [nxt[0] - cur[1] for cur, nxt in pairwise(waits)]
        busy.append(m.cycles_to_ns(sum(spans) / len(spans)))
        wait.append(m.cycles_to_ns(sum(b - a for a, b in waits[1:]) / (len(waits) - 1)))
    c_outer, c_inner, _ = linear_fit(list(block_factors), busy)
    return Profile(c_inner, c_outer, tuple(block_factors), tuple(busy), tuple(wait))
