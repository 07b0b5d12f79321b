"""The loop generator: a streaming loop blocked for k-buffered DMA, run on
the simulated chip with its data really moved and checked.

A :class:`Loop` is ``B_o[i] = f(A_1[i], ..., A_m[i])`` for ``i < n``: input
streams ``A_s`` and output streams ``B_o`` with their element sizes, and the
computation time per inner iteration (``C_inner``) and per block
(``C_outer``, the cost of issuing a block's DMAs in compiler-generated code),
in ns or in SPU cycles. :func:`generate` blocks it by ``bf`` with ``k``
buffers per stream, as in Chen et al. 2006's Figure 2 (tagged non-blocking gets and
puts, one tag per buffer, a wait on the tag of the buffer about to be used);
:func:`run_loop` runs it on one SPE and checks every output byte.

``f`` is applied to the bytes: every element is read as a big-endian unsigned
integer, the inputs are added (modulo 2^64) and output ``o`` gets the sum
plus ``o``, truncated to its element size; for the paper's loop (two 8-byte
inputs, one 8-byte output) that is ``B[i] = A1[i] + A2[i]``. The time the SPU
spends on a block of ``m`` elements is ``compute(round(C_inner * m + C_outer))``
cycles. The program exists twice with the same SPU calls in the same order:
:func:`k_buffered_loop` (Python) and the native kernel ``k_buffered_loop``
(``crates/cellsim-programs/src/kernels.rs``), hence the same simulated cycles.

>>> from cellsim.buffering.loop import Loop, run_loop
>>> loop = Loop(n=4096, c_inner=0.51, c_outer=300.0)
>>> r = run_loop(loop, k=2, bf=256)
>>> r.checked, r.blocks
(True, 16)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import numpy as np

from ..exceptions import CellsimError, UsageError
from ..kernels import Kernel
from ..machine import Machine
from ..spec import MachineLike
from ..spu import (
    compute,
    ls_alloc,
    mfc_get,
    mfc_put,
    mfc_read_tag_status_all,
    mfc_write_tag_mask,
    spu_read_decrementer,
    spu_write_decrementer,
)
from .model import Costs
from .profile import engine_block_cycles, switch_cycles

__all__ = [
    "ELEMENT_SIZES",
    "KERNEL",
    "LINE_BYTES",
    "MAX_DMA",
    "MAX_STREAMS",
    "MAX_TAGS",
    "BufferedLoop",
    "Loop",
    "LoopRun",
    "expected_outputs",
    "free_local_store",
    "generate",
    "k_buffered_loop",
    "ls_uses_per_iteration",
    "max_fitting_block",
    "run_loop",
]

ELEMENT_SIZES: tuple[int, ...] = (1, 2, 4, 8)
"""Element sizes of a stream, in bytes."""
MAX_STREAMS = 8
"""At most this many input and this many output streams."""
MAX_DMA = 16384
"""Largest DMA: a block of a stream larger than this takes several."""
MAX_TAGS = 32
"""Tag groups of the MFC: one per buffer, so at most 32 buffers per stream."""
LINE_BYTES = 128
"""A DMA moves memory a 128-byte line, or a part of one, per bus request."""
KERNEL = "k_buffered_loop"
"""Name of the native twin of :func:`k_buffered_loop`."""

Unit = Literal["ns", "cycles"]


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise UsageError(f"{name} must be a positive integer, not {value!r}")
    return int(value)


@dataclass(frozen=True)
class Loop:
    """A streaming loop to block for DMA buffering.

    Args:
        n: iterations of the original loop.
        c_inner: computation per inner iteration (> 0), in ``unit``.
        c_outer: overhead per block (issuing its DMAs), in ``unit``; 0 for
            hand-written code where it is negligible, never negative.
        inputs: element size in bytes of each input stream (1, 2, 4 or 8).
        outputs: element size of each output stream.
        unit: ``ns`` or ``cycles`` (SPU cycles of the target machine).
    """

    n: int
    c_inner: float
    c_outer: float
    inputs: tuple[int, ...] = (8, 8)
    outputs: tuple[int, ...] = (8,)
    unit: Unit = "ns"

    def __post_init__(self) -> None:
        _positive_int("the iteration count n", self.n)
        if self.unit not in ("ns", "cycles"):
            raise UsageError(f"the time unit must be 'ns' or 'cycles', not {self.unit!r}")
        for name, v in (("C_inner", self.c_inner), ("C_outer", self.c_outer)):
            if not (isinstance(v, (int, float)) and math.isfinite(v)):
                raise UsageError(f"{name} must be a number of {self.unit}, not {v!r}")
        if self.c_inner <= 0:
            raise UsageError(f"C_inner must be a positive time, not {self.c_inner!r} {self.unit}")
        if self.c_outer < 0:
            raise UsageError(f"C_outer must not be negative, not {self.c_outer!r} {self.unit}")
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        for kind, sizes in (("input", self.inputs), ("output", self.outputs)):
            if len(sizes) > MAX_STREAMS:
                raise UsageError(f"at most {MAX_STREAMS} {kind} streams, not {len(sizes)}")
            for e in sizes:
                if e not in ELEMENT_SIZES:
                    raise UsageError(
                        f"{kind} element size {e!r} is not one of {', '.join(map(str, ELEMENT_SIZES))} bytes"
                    )
        if not self.inputs and not self.outputs:
            raise UsageError("a loop needs at least one input or output stream")
        for e in (*self.inputs, *self.outputs):
            if (self.n * e) % 16:
                raise UsageError(
                    f"n = {self.n} elements of {e} bytes is {self.n * e} bytes, not a multiple of 16 "
                    "(DMA sizes must be): use a multiple of "
                    f"{16 // math.gcd(16, e)} iterations"
                )

    @property
    def bytes_per_iter(self) -> int:
        """Bytes that all streams move per inner iteration."""
        return sum(self.inputs) + sum(self.outputs)

    @property
    def granularity(self) -> int:
        """Block factors must be multiples of this, so that every DMA moves a
        multiple of 16 bytes."""
        return max(16 // math.gcd(16, e) for e in (*self.inputs, *self.outputs))

    @property
    def line_unit(self) -> int:
        """Block factors whose blocks are whole lines in every stream are the multiples of this
        (when the streams start on a line, as :meth:`Machine.alloc` places them)."""
        return math.lcm(
            self.granularity, *(LINE_BYTES // math.gcd(LINE_BYTES, e) for e in (*self.inputs, *self.outputs))
        )

    def ns(self, core_hz: float) -> tuple[float, float]:
        """``(C_inner, C_outer)`` in ns on a machine clocked at ``core_hz``."""
        f = 1.0 if self.unit == "ns" else 1e9 / core_hz
        return self.c_inner * f, self.c_outer * f

    def cycles(self, core_hz: float) -> tuple[float, float]:
        """``(C_inner, C_outer)`` in SPU cycles (not rounded: a block of ``m``
        elements computes ``round(C_inner * m + C_outer)`` cycles)."""
        f = 1.0 if self.unit == "cycles" else core_hz / 1e9
        return self.c_inner * f, self.c_outer * f

    def costs(self, core_hz: float) -> Costs:
        """What the model needs: ``C_inner``, ``C_outer`` in ns and the bytes per iteration."""
        ci, co = self.ns(core_hz)
        return Costs(c_inner_ns=ci, c_outer_ns=co, bytes_per_iter=self.bytes_per_iter)

    def with_n(self, n: int) -> Loop:
        """The same loop with ``n`` iterations."""
        return Loop(n, self.c_inner, self.c_outer, self.inputs, self.outputs, self.unit)


def _round_cycles(x: float) -> int:
    """Round half up, exactly as the native kernel does (``(x + 0.5).floor()``)."""
    return math.floor(x + 0.5)


def _dtype(size: int) -> str:
    return f">u{size}"


# -- the generated SPE program ----------------------------------------------------------


def ls_uses_per_iteration(inputs: Sequence[int], outputs: Sequence[int]) -> int:
    """Local-store port uses of one inner iteration: a quadword load per input element, and a
    load and a store per output element narrower than a quadword (a read-modify-write)."""
    return len(inputs) + sum(2 if e < 16 else 1 for e in outputs)


def k_buffered_loop(
    speid: int,
    argp: int,
    envp: int,
    *,
    n: int,
    bf: int,
    k: int,
    c_inner: float,
    c_outer: float,
    ins: Sequence[tuple[int, int]],
    outs: Sequence[tuple[int, int]],
    profile: tuple[Callable[[], int], list[tuple[int, int]]] | None = None,
) -> int:
    """The loop blocked by ``bf`` with ``k`` buffers per stream (Chen et al. 2006, Fig 2).

    ``ins`` and ``outs`` are ``(ea, element size)`` per stream; ``c_inner``
    and ``c_outer`` are SPU cycles. Buffer ``t`` of every stream uses tag
    ``t``: the gets into it and the put out of it. Block ``j`` lives in buffer
    ``j % k``; the gets of block ``j + k - 1`` are issued before waiting for
    block ``j``, so ``k - 1`` blocks are in flight while one is computed
    (``k = 1``: get, wait, compute, put; ``k = 2``: Figure 2(d)). Returns the
    elapsed decrementer ticks.

    ``profile = (clock, waits)`` instruments the loop as a profiler would
    (Paraver, in Chen et al. 2006): ``clock()`` is the simulated cycle, and each
    block's DMA wait appends its ``(start, end)`` cycles to ``waits`` (Python
    program only).
    """
    blocks = -(-n // bf)
    tA = [[ls_alloc(bf * size, align=128) for _ in range(k)] for _, size in ins]
    tB = [[ls_alloc(bf * size, align=128) for _ in range(k)] for _, size in outs]

    def dma(op: Callable[..., None], ls: int, ea: int, size: int, tag: int) -> None:
        for off in range(0, size, MAX_DMA):  # at most 16 KB per DMA
            op(ls + off, ea + off, min(MAX_DMA, size - off), tag)

    def dma_get(j: int, t: int) -> None:  # DMA get A[j*bf : j*bf + m] to tA[t], tag = t
        m = min(bf, n - j * bf)
        for s, (ea, size) in enumerate(ins):
            dma(mfc_get, tA[s][t], ea + j * bf * size, m * size, t)

    def dma_put(j: int, t: int) -> None:  # DMA put tB[t] to B[j*bf : j*bf + m], tag = t
        m = min(bf, n - j * bf)
        for o, (ea, size) in enumerate(outs):
            dma(mfc_put, tB[o][t], ea + j * bf * size, m * size, t)

    spu_write_decrementer(0xFFFFFFFF)
    start = spu_read_decrementer()
    for j in range(min(k - 1, blocks)):  # prologue: the first k - 1 blocks
        dma_get(j, j % k)
    for j in range(blocks):
        if j + k - 1 < blocks:
            dma_get(j + k - 1, (j + k - 1) % k)
        t = j % k
        mfc_write_tag_mask(1 << t)  # DMA wait, tag = t
        if profile is None:
            mfc_read_tag_status_all()
        else:
            before = profile[0]()
            mfc_read_tag_status_all()
            profile[1].append((before, profile[0]()))
        m = min(bf, n - j * bf)
        cycles = _round_cycles(c_inner * m + c_outer)
        if cycles > 0:
            # for (i = 0; i < m; i++) tB[t][i] = f(tA[t][i], ...): a quadword load per input
            # element, a load and a store per (narrower) output element, on the local store's port
            compute(cycles, ls_accesses=m * ls_uses_per_iteration([e for _, e in ins], [e for _, e in outs]))
        acc = np.zeros(m, dtype=np.uint64)
        for s, (_, size) in enumerate(ins):
            acc += tA[s][t].array(_dtype(size))[:m].astype(np.uint64)
        for o, (_, size) in enumerate(outs):
            tB[o][t].array(_dtype(size))[:m] = (acc + np.uint64(o)).astype(_dtype(size))
        dma_put(j, t)
    mfc_write_tag_mask((1 << k) - 1)  # DMA wait, every tag
    mfc_read_tag_status_all()
    end = spu_read_decrementer()
    return (start - end) & 0xFFFFFFFF


# -- the generator ----------------------------------------------------------------------


def free_local_store(machine: Machine) -> int:
    """Local-store bytes left for buffers once the program is loaded."""
    return machine.facts.ls_bytes - machine.facts.ls_reserved_bytes


def _buffer_bytes(loop: Loop, k: int, bf: int) -> int:
    """Local store the buffers take, each rounded up to its 128-byte alignment."""
    return sum(k * (-(-bf * e // 128) * 128) for e in (*loop.inputs, *loop.outputs))


@dataclass(frozen=True)
class BufferedLoop:
    """A loop blocked by ``bf`` with ``k`` buffers, ready to load on an SPE
    (made by :func:`generate`)."""

    loop: Loop
    k: int
    bf: int
    c_inner_cycles: float
    c_outer_cycles: float
    buffer_bytes: int
    """Local store taken by the buffers (128-byte aligned)."""

    @property
    def blocks(self) -> int:
        """Blocks of the outer loop (the last one may be partial)."""
        return -(-self.loop.n // self.bf)

    def block_cycles(self, m: int) -> int:
        """SPU cycles computed for a block of ``m`` elements."""
        return _round_cycles(self.c_inner_cycles * m + self.c_outer_cycles)

    def params(self, ins: Sequence[int], outs: Sequence[int]) -> dict[str, Any]:
        """Keyword arguments of :func:`k_buffered_loop` for streams at ``ins``/``outs``."""
        return {
            "n": self.loop.n,
            "bf": self.bf,
            "k": self.k,
            "c_inner": self.c_inner_cycles,
            "c_outer": self.c_outer_cycles,
            "ins": tuple((int(ea), e) for ea, e in zip(ins, self.loop.inputs, strict=True)),
            "outs": tuple((int(ea), e) for ea, e in zip(outs, self.loop.outputs, strict=True)),
        }

    def program(self, ins: Sequence[int], outs: Sequence[int]) -> Callable[[int, int, int], int]:
        """The Python SPE program (``program(speid, argp, envp)``)."""
        return partial(k_buffered_loop, **self.params(ins, outs))

    def kernel(self, ins: Sequence[int], outs: Sequence[int]) -> Kernel:
        """The native twin, with the same parameters."""
        return Kernel(KERNEL, **self.params(ins, outs))

    def load(
        self, m: Machine, spe: int, ins: Sequence[int], outs: Sequence[int], *, native: bool = True
    ) -> int:
        """Starts the program (native or Python) on logical SPE ``spe``; returns its thread id."""
        prog: Any = self.kernel(ins, outs) if native else self.program(ins, outs)
        return m.start_spe(spe, prog)


def generate(loop: Loop, k: int, bf: int, machine: Machine | str = "qs20") -> BufferedLoop:
    """Blocks ``loop`` by ``bf`` with ``k`` buffers per stream for ``machine``.

    Raises ``UsageError`` if ``k`` or ``bf`` is not a positive integer, if
    ``k`` exceeds the 32 tag groups, if a block is not a multiple of 16 bytes
    of every stream, or if the buffers do not fit in the local store with the
    program.
    """
    k = _positive_int("the number of buffers k", k)
    bf = _positive_int("the block factor bf", bf)
    if k > MAX_TAGS:
        raise UsageError(f"k = {k} buffers need {k} tag groups; the MFC has {MAX_TAGS}")
    if bf % loop.granularity:
        raise UsageError(
            f"block factor {bf} makes DMAs that are not multiples of 16 bytes for these element sizes: "
            f"use a multiple of {loop.granularity}"
        )
    m = machine if isinstance(machine, Machine) else Machine(machine)
    need = _buffer_bytes(loop, k, bf)
    free = free_local_store(m)
    if need > free:
        raise UsageError(
            f"block factor {bf} does not fit in the local store with the program: {k} buffers of each "
            f"of {len(loop.inputs) + len(loop.outputs)} streams take {need} bytes, {free} are free "
            f"(the largest block factor for k = {k} is about "
            f"{max_fitting_block(loop, k, free)})"
        )
    ci, co = loop.cycles(m.core_hz)
    # C_outer is what profiling single-buffered code measures (Chen et al. 2006): it includes the
    # channel work of issuing the block's DMAs, which the engine charges itself; buffer
    # switching comes on top with two or more buffers (see cellsim.buffering.profile)
    streams = (*loop.inputs, *loop.outputs)
    commands = sum(-(-bf * e // MAX_DMA) for e in streams)
    own = max(0.0, co - engine_block_cycles(commands, m.name)) if co > 0 else 0.0
    return BufferedLoop(loop, k, bf, ci, own + switch_cycles(k, len(streams)), need)


def max_fitting_block(loop: Loop, k: int, free_bytes: int) -> int:
    """The largest legal block factor whose ``k`` buffers fit in ``free_bytes``."""
    g = loop.granularity
    bf = (free_bytes // (k * loop.bytes_per_iter)) // g * g
    while bf > 0 and _buffer_bytes(loop, k, bf) > free_bytes:
        bf -= g
    return bf


# -- running it -------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopRun:
    """One run of a generated loop on the simulated chip."""

    k: int
    bf: int
    n: int
    blocks: int
    cycles: int
    """SPU cycles from the program's start to its end (prologue and epilogue included)."""
    ns: float
    ticks: int
    """Decrementer ticks the program measured itself."""
    throughput_mbs: float
    """Bytes of all streams over the time: MB/s (10^6 bytes per second)."""
    checked: bool
    native: bool
    machine: str
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


def expected_outputs(loop: Loop, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """What the loop must write: ``B_o[i] = (sum_s A_s[i] + o) mod 2^(8 e_o)``, big-endian."""
    acc = np.zeros(loop.n, dtype=np.uint64)
    for a in inputs:
        acc += a.astype(np.uint64)
    return [(acc + np.uint64(o)).astype(_dtype(e)) for o, e in enumerate(loop.outputs)]


def run_loop(
    loop: Loop,
    k: int,
    bf: int,
    *,
    machine: MachineLike = "qs20",
    seed: int = 0,
    native: bool = True,
    check: bool = True,
    overrides: dict[str, Any] | None = None,
    c_cycles: tuple[float, float] | None = None,
) -> LoopRun:
    """Generates the ``k``-buffered loop, runs it on logical SPE 0 of a fresh
    ``machine`` with random input data, and checks every output byte against
    numpy (``CellsimError`` if one differs).

    ``c_cycles`` replaces the loop's ``(C_inner, C_outer)`` in cycles; ``(0, 0)``
    runs the DMAs alone (the DMA-bound ceiling).
    """
    m = Machine(machine, seed=seed, overrides=overrides or {})
    prog = generate(loop, k, bf, m)
    if c_cycles is not None:
        prog = dataclasses.replace(prog, c_inner_cycles=float(c_cycles[0]), c_outer_cycles=float(c_cycles[1]))
    rng = np.random.default_rng(seed)
    ins = [m.alloc(loop.n * e) for e in loop.inputs]
    outs = [m.alloc(loop.n * e) for e in loop.outputs]
    for buf in ins:
        buf.array()[:] = rng.integers(0, 256, size=buf.size, dtype=np.uint8)
    tid = prog.load(m, 0, ins, outs, native=native)
    result = m.run()
    pr = next(p for p in result.programs if p.thread == tid)
    if pr.exit_code is None or pr.end_cycle is None:
        raise CellsimError(f"the generated loop (k = {k}, bf = {bf}) did not finish")
    if check:
        want = expected_outputs(loop, [b.array(_dtype(e)) for b, e in zip(ins, loop.inputs, strict=True)])
        for o, (buf, e) in enumerate(zip(outs, loop.outputs, strict=True)):
            got = buf.array(_dtype(e))
            if not np.array_equal(got, want[o]):
                bad = int(np.flatnonzero(got != want[o])[0])
                raise CellsimError(
                    f"the generated loop (k = {k}, bf = {bf}, {'native' if native else 'Python'}) wrote "
                    f"output {o} element {bad} = {int(got[bad])}, expected {int(want[o][bad])}"
                )
    ns = m.cycles_to_ns(pr.end_cycle)
    return LoopRun(
        k=k,
        bf=bf,
        n=loop.n,
        blocks=prog.blocks,
        cycles=int(pr.end_cycle),
        ns=ns,
        ticks=int(pr.exit_code),
        throughput_mbs=1000.0 * loop.n * loop.bytes_per_iter / ns,
        checked=check,
        native=native,
        machine=m.name,
    )
