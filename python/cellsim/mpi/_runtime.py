"""The machinery under the MPI API: one :class:`World` per ``mpirun``, one
:class:`Rank` per SPE program, the start-up structure, buffers and DMA.

Every rank is a Python SPE program (a greenlet) on its own logical SPE; the
MPI calls it makes run inside that program and block it in simulated time
(DMA waits, signal reads, polls), so the engine interleaves the ranks as the
chip would. The library's own Python code costs nothing by itself; the SPU
code it stands for is charged with :mod:`cellsim.mpi._costs`, in batches
flushed as ``compute(cycles)`` before the rank's next SPU call.

Start-up (Kumar et al., section 3.1): ``mpirun`` (a PPE program) allocates the
shared space, writes one start-up structure per rank in main memory and sends
its address through the rank's inbound mailbox; ``MPI_Init`` reads the
mailbox and gets the structure by DMA. Layout (big-endian, as all metadata
shared with the SPEs):

====== ===== ====================================================
offset bytes field
====== ===== ====================================================
0      4     magic ``0x43_4D_50_49`` ("CMPI")
4      4     version (1)
8      4     rank in ``COMM_WORLD``
12     4     size of ``COMM_WORLD``
16     4     protocol (1 kumar, 2 direct)
20     4     argc
24     4     bytes of the argument strings
28     4     flags (unused)
32     8     EA of the argument strings (NUL-separated)
40     8     EA of this rank's heap (shadows of host buffers, pickles)
48     8     bytes of the heap
56     8     reserved
64     32*N  per rank: local-store EA, problem-state EA, EA and bytes of its
             message buffer ``P_i`` (kumar; 0 for direct)
====== ===== ====================================================
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from greenlet import GreenletExit, getcurrent

from .. import spu
from ..exceptions import MfcError
from ..machine import Machine, Program
from . import _types as T
from ._costs import COSTS, Costs

if TYPE_CHECKING:
    from ._protocol import Protocol

__all__ = [
    "LS_STARTUP",
    "MAX_DMA",
    "PEER",
    "STARTUP",
    "BufRef",
    "ComputeRule",
    "Heap",
    "Placement",
    "Rank",
    "World",
    "current_rank",
    "dma_pieces",
]

MAX_DMA = 16384
STARTUP_MAGIC = 0x434D5049
STARTUP = np.dtype(
    [
        ("magic", ">u4"),
        ("version", ">u4"),
        ("rank", ">u4"),
        ("size", ">u4"),
        ("protocol", ">u4"),
        ("argc", ">u4"),
        ("argv_bytes", ">u4"),
        ("flags", ">u4"),
        ("argv_ea", ">u8"),
        ("heap_ea", ">u8"),
        ("heap_bytes", ">u8"),
        ("reserved", ">u8"),
    ]
)
PEER = np.dtype([("ls_ea", ">u8"), ("ps_ea", ">u8"), ("buf_ea", ">u8"), ("buf_bytes", ">u8")])
PROTOCOL_CODES = {"kumar": 1, "direct": 2}

LS_SIZE = 0x40000
LS_STARTUP = 0x3F000
"""Local-store address where ``MPI_Init`` receives the start-up structure;
the protocols' regions lie below it."""
SIG_NOTIFY_1 = 0x1400C
SIG_NOTIFY_2 = 0x1C00C

# Tag groups the library uses (programs using cellsim.mpi keep to 0-19).
TAG_EAGER = 20  # 20-23: the direct protocol's send staging slots
TAG_PULL = 24  # 24-27: pipelined copies
TAG_CTL = 28  # credits, acknowledgements, signals
TAG_SYNC = 29  # blocking DMAs


RECENT_COLLS = 64
"""How many of a rank's last collectives per communicator a mismatch can still name."""


@dataclass(frozen=True)
class ComputeRule:
    """How the time a program spends between MPI calls becomes simulated time.

    ``zero``: it takes none; ``host-scaled:F``: F times the host time the
    rank's Python code took between its MPI calls; ``model``: what the
    program states with :func:`cellsim.mpi.compute` / :func:`cellsim.mpi.flops`
    (converted with the SPU's documented rates).
    """

    kind: str = "model"
    factor: float = 0.0

    @classmethod
    def parse(cls, text: str) -> ComputeRule:
        """``zero``, ``model`` or ``host-scaled:F`` (F > 0)."""
        t = text.strip()
        if t in ("zero", "model"):
            return cls(t)
        if t.startswith("host-scaled:"):
            try:
                f = float(t.split(":", 1)[1])
            except ValueError:
                f = -1.0
            if f > 0 and np.isfinite(f):
                return cls("host-scaled", f)
            raise T.Exception(T.ERR_ARG, f"--compute {text!r}: F must be a positive number")
        raise T.Exception(T.ERR_ARG, f"--compute {text!r} is not zero, model or host-scaled:F")

    def __str__(self) -> str:
        return f"host-scaled:{self.factor:g}" if self.kind == "host-scaled" else self.kind


class Heap:
    """First-fit allocator over a rank's heap in main memory (128-byte blocks)."""

    def __init__(self, base: int, size: int) -> None:
        self.base = base
        self.size = size
        self.free_list: list[tuple[int, int]] = [(base, size)]
        self.used: dict[int, int] = {}

    def alloc(self, nbytes: int) -> int:
        """An EA of at least ``nbytes`` bytes, 128-byte aligned."""
        need = max(128, -(-int(nbytes) // 128) * 128)
        for i, (start, size) in enumerate(self.free_list):
            if size >= need:
                if size == need:
                    del self.free_list[i]
                else:
                    self.free_list[i] = (start + need, size - need)
                self.used[start] = need
                return start
        raise T.Exception(
            T.ERR_BUFFER,
            f"the rank's heap in main memory ({self.size} bytes, allocated by mpirun) cannot hold "
            f"{nbytes} more bytes of buffers",
        )

    def free(self, ea: int) -> None:
        """Returns a block to the heap (coalescing neighbours)."""
        size = self.used.pop(ea)
        self.free_list.append((ea, size))
        self.free_list.sort()
        merged: list[tuple[int, int]] = []
        for s, n in self.free_list:
            if merged and merged[-1][0] + merged[-1][1] == s:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((s, n))
        self.free_list = merged


def dma_pieces(lsa: int, ea: int, size: int) -> list[tuple[int, int, int]]:
    """Splits a transfer with ``lsa`` and ``ea`` equal modulo 16 into legal
    DMAs: naturally aligned 1/2/4/8-byte head and tail pieces around a body
    of 16-byte multiples, at most 16 KB each."""
    if (lsa ^ ea) & 15:
        raise ValueError(f"LS 0x{lsa:x} and EA 0x{ea:x} differ in their low 4 bits")
    out: list[tuple[int, int, int]] = []
    while size > 0 and ea & 15:
        p = next(p for p in (8, 4, 2, 1) if ea % p == 0 and p <= size)
        out.append((lsa, ea, p))
        lsa, ea, size = lsa + p, ea + p, size - p
    body = size & ~15
    while body > 0:
        p = min(body, MAX_DMA)
        out.append((lsa, ea, p))
        lsa, ea, size, body = lsa + p, ea + p, size - p, body - p
    while size > 0:
        p = next(p for p in (8, 4, 2, 1) if ea % p == 0 and p <= size)
        out.append((lsa, ea, p))
        lsa, ea, size = lsa + p, ea + p, size - p
    return out


@dataclass
class BufRef:
    """A message buffer as the simulated chip sees it: ``nbytes`` at ``ea``.

    A buffer already in simulated memory (main memory or a local store) is
    used in place. Any other host buffer (an ordinary numpy array of an
    mpi4py script) is *placed in main memory*: a block of the rank's heap
    stands for it, filled from the host bytes before a send and copied back
    after a receive (``sync_in`` / ``sync_out``), at no simulated cost, as if
    the program had allocated the array there.
    """

    ea: int
    nbytes: int
    datatype: T.Datatype
    count: int
    host: np.ndarray | None = None
    shadow: np.ndarray | None = None
    heap: Heap | None = None
    readonly: bool = False
    released: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    placement: Placement | None = None

    def sync_in(self) -> None:
        """Host bytes -> the simulated copy (before the data is sent)."""
        if self.host is not None and self.shadow is not None:
            self.shadow[: self.nbytes] = self.host[: self.nbytes]

    def sync_out(self, nbytes: int) -> None:
        """Simulated copy -> host bytes (after ``nbytes`` were received)."""
        if self.host is not None and self.shadow is not None and nbytes:
            if self.readonly:
                raise T.Exception(T.ERR_BUFFER, "the receive buffer is read-only")
            self.host[:nbytes] = self.shadow[:nbytes]

    def keep(self) -> None:
        """Before a receive into only parts of the buffer: the bytes around them
        stay as the host has them (a copy at no simulated cost)."""
        self.sync_in()

    def release(self) -> None:
        """Frees the heap block standing for a host buffer (the last user of it frees it)."""
        if not self.released:
            if self.placement is not None:
                self.placement.drop()
            elif self.heap is not None:
                self.heap.free(self.ea)
        self.released = True


class Placement:
    """Where a host buffer is placed in the rank's heap, shared by the
    requests that use it at once (as the program's one buffer would be):
    two ``Isend`` of the same array read the same simulated bytes."""

    def __init__(self, rank: Rank, key: tuple[int, int], ea: int, shadow: np.ndarray) -> None:
        self.rank, self.key, self.ea, self.shadow, self.users = rank, key, ea, shadow, 1

    def drop(self) -> None:
        self.users -= 1
        if self.users == 0:
            del self.rank.placed[self.key]
            assert self.rank.heap is not None
            self.rank.heap.free(self.ea)


class World:
    """One ``mpirun``: the machine, the ranks and what they wait on."""

    def __init__(
        self,
        machine: Machine,
        n: int,
        protocol: str,
        compute: ComputeRule,
        costs: Costs = COSTS,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.machine = machine
        self.n = n
        self.protocol = protocol
        self.compute = compute
        self.costs = costs
        self.options = dict(options or {})
        self.ranks: list[Rank | None] = [None] * n
        self.finished: set[int] = set()
        self.waits: dict[int, str] = {}
        self.epoch = 0
        self.idle: dict[int, list[int]] = {}
        self.argv: list[str] = []
        self.failures: list[tuple[int, BaseException | None, str]] = []
        self.mem_bytes = machine.facts.memory_bytes
        self.mem_ptr = machine.memory_address()
        self.ls_ptr = [int(machine.local_store(s).ctypes.data) for s in range(machine.spe_count)]
        self.ls_ea0 = Machine.ls_ea(0)
        self.ls_stride = Machine.ls_ea(1) - self.ls_ea0
        self.stats: dict[str, int] = {}
        self.trace_stats: Any = None
        """The trace file's ``TraceStats`` once a traced run has written it."""
        self.spans: list[tuple[int, str, int, int, dict[str, int]]] | None = None
        """Each MPI call of each rank as ``(rank, call, start cycle, end cycle, args)``
        when the run is traced (the trace's MPI layer); ``None`` otherwise."""

    # -- progress and deadlock detection (for polling protocols) --------------------

    def progress(self) -> None:
        """Something another rank may be polling for has happened."""
        self.epoch += 1

    def busy(self, rank: int) -> None:
        """``rank`` stopped waiting."""
        self.idle.pop(rank, None)
        self.waits.pop(rank, None)

    def idle_poll(self, rank: int, what: str) -> int:
        """``rank`` polled for ``what`` and found nothing. Returns how many
        polls it has made since the last progress anywhere; raises
        :class:`MPIDeadlockError` when every live rank has polled in vain at
        least three times since then (nothing in flight can change that: a
        polling rank has no DMA outstanding that another rank waits for)."""
        self.waits[rank] = what
        st = self.idle.get(rank)
        if st is None or st[0] != self.epoch:
            st = self.idle[rank] = [self.epoch, 0]
        st[1] += 1
        if st[1] < 3:
            return st[1]
        for r in range(self.n):
            other = self.idle.get(r)
            if r not in self.finished and (other is None or other[0] != self.epoch or other[1] < 3):
                return st[1]
        raise self.deadlock()

    def deadlock(self) -> T.MPIDeadlockError:
        """The deadlock error naming what each rank waits on."""
        lines = []
        waits = {}
        for r in range(self.n):
            if r in self.finished:
                lines.append(f"rank {r}: finished")
            elif r in self.waits:
                waits[r] = self.waits[r]
                lines.append(f"rank {r}: waits in {self.waits[r]}")
            else:
                waits[r] = "(not in an MPI call: blocked in its own SPU call)"
                lines.append(f"rank {r}: not in an MPI call (blocked in its own SPU call)")
        msg = "deadlock: every rank is blocked and none can proceed; " + "; ".join(lines)
        return T.MPIDeadlockError(msg, waits=waits, cycle=self.machine.cycles)

    def ea_of_ls(self, spe: int, lsa: int) -> int:
        """The EA of local-store address ``lsa`` of logical SPE ``spe``."""
        return self.ls_ea0 + spe * self.ls_stride + lsa


class Rank:
    """One MPI process: the SPE program's state inside the MPI library."""

    def __init__(self, world: World, rank: int, program: Program) -> None:
        self.world = world
        self.rank = rank
        self.size = world.n
        self.program = program
        self.spe = int(program.spe)  # type: ignore[arg-type]
        self.ls = program.ls
        self.ls_u32 = np.frombuffer(self.ls, dtype=">u4")
        # The SPU's channels and MFC commands. The library makes millions of these calls:
        # through cellsim.spu's fast path for libraries (the same engine calls and checks,
        # the program found once), bound here so that a call is one Python call.
        self.channels = spu.LibraryChannels(program)
        self.mfc = self.channels.mfc
        """Issues one MFC command (``spu.MFC_*_CMD``): ``mfc(opcode, lsa, ea, size, tag)``."""
        self.tag_status = self.channels.wait_tags
        """Writes the tag mask and reads the tag status (``spu.MFC_TAG_UPDATE_*``), as
        ``spu.library_wait_tags``: ``tag_status(mask, update)``."""
        self.signal1_count = self.channels.spu_stat_signal1
        """``spu_stat_signal1``."""
        self.read_signal1 = self.channels.spu_read_signal1
        """``spu_read_signal1``: waits for a signal and clears the register."""
        self.machine = world.machine
        self.costs = world.costs
        self.pending_cycles = 0
        self.initialized = False
        self.finalized = False
        self.peers: np.ndarray | None = None
        self.heap: Heap | None = None
        self.proto: Protocol | None = None
        self.next_ctx = 2  # 0: COMM_WORLD, 1: COMM_SELF
        self.coll_seq: dict[int, int] = {}
        # (context, sequence number mod RECENT_COLLS) -> (number, the call): what this rank
        # called as its recent collectives, to name both calls of a mismatch seen later
        self.recent_colls: dict[tuple[int, int], tuple[int, str]] = {}
        self.last_exit = time.perf_counter()
        self.in_call = 0
        self.argv: list[str] = []
        self.exit_code: int | None = None
        self.output: Any = None
        self.attached: Any = None
        """The buffer of ``MPI.Attach_buffer``."""
        self.placed: dict[tuple[int, int], Placement] = {}
        """The host buffers placed in the heap now, by (address, bytes)."""
        self.world_comm: Any = None
        self.self_comm: Any = None

    # -- simulated time -----------------------------------------------------------------

    def charge(self, cycles: int) -> None:
        """Adds ``cycles`` of library SPU code, spent at the next SPU call."""
        self.pending_cycles += int(cycles)

    def flush(self) -> None:
        """Spends the charged cycles now."""
        if self.pending_cycles > 0:
            c, self.pending_cycles = self.pending_cycles, 0
            self.channels.compute(c)

    # -- DMA --------------------------------------------------------------------------

    def dma(self, put: bool, lsa: int, ea: int, size: int, tag: int, fence: bool = False) -> None:
        """Issues a get (``put=False``) or put of ``size`` bytes as legal DMAs;
        with ``fence`` every piece waits for the earlier commands of ``tag``."""
        self.flush()
        if put:
            op = spu.MFC_PUTF_CMD if fence else spu.MFC_PUT_CMD
        else:
            op = spu.MFC_GETF_CMD if fence else spu.MFC_GET_CMD
        if 0 < size <= MAX_DMA and not (lsa | ea | size) & 15:
            self.mfc(op, lsa, ea, size, tag)  # one legal DMA as it is
            return
        for ls, e, n in dma_pieces(lsa, ea, size):
            self.mfc(op, ls, e, n, tag)

    def wait_tags(self, mask: int) -> None:
        """Waits until every tag group of ``mask`` is complete."""
        self.flush()
        self.tag_status(mask, spu.MFC_TAG_UPDATE_ALL)

    def tags_done(self, mask: int) -> bool:
        """Whether every tag group of ``mask`` is complete (does not wait)."""
        self.flush()
        return self.tag_status(mask, spu.MFC_TAG_UPDATE_IMMEDIATE) == mask

    def get_blocking(self, lsa: int, ea: int, size: int) -> None:
        """A blocking get (Kumar et al.'s copies)."""
        self.dma(False, lsa, ea, size, TAG_SYNC)
        self.wait_tags(1 << TAG_SYNC)

    def put_blocking(self, lsa: int, ea: int, size: int) -> None:
        """A blocking put."""
        self.dma(True, lsa, ea, size, TAG_SYNC)
        self.wait_tags(1 << TAG_SYNC)

    def ls_words(self, lsa: int, n: int, dtype: str = ">u4") -> np.ndarray:
        """A view of ``n`` values of ``dtype`` in this rank's local store."""
        return np.frombuffer(self.ls, dtype=dtype, count=n, offset=lsa)

    def word(self, lsa: int) -> int:
        """The big-endian 32-bit word at ``lsa`` (a multiple of 4) of this rank's local store."""
        return int(self.ls_u32[lsa >> 2])

    def set_word(self, lsa: int, value: int) -> None:
        """Stores a big-endian 32-bit word at ``lsa`` (a multiple of 4)."""
        self.ls_u32[lsa >> 2] = value

    def ls_copy(self, dst: int, src: int, n: int) -> None:
        """An SPU copy inside the local store (charged per quadword)."""
        if n:
            self.ls[dst : dst + n] = self.ls[src : src + n].copy()
            self.charge(self.costs.copy_per_quadword * -(-n // 16))

    # -- where a buffer is -----------------------------------------------------------------

    def my_ls_ea(self, lsa: int = 0) -> int:
        """The EA of this rank's local-store address ``lsa``."""
        return self.world.ea_of_ls(self.spe, lsa)

    def in_my_ls(self, ea: int) -> int | None:
        """The local-store address of ``ea`` if it is in this rank's local store."""
        base = self.my_ls_ea()
        return ea - base if base <= ea < base + LS_SIZE else None

    def locate(self, arr: np.ndarray) -> int | None:
        """The EA of a host array that lies in simulated memory, else None."""
        ptr = int(arr.ctypes.data) if arr.size else 0
        w = self.world
        if w.mem_ptr <= ptr < w.mem_ptr + w.mem_bytes:
            return ptr - w.mem_ptr
        for spe, base in enumerate(w.ls_ptr):
            if base <= ptr < base + LS_SIZE:
                return w.ea_of_ls(spe, ptr - base)
        return None

    def bufref(self, arr: np.ndarray, datatype: T.Datatype, count: int, writable: bool) -> BufRef:
        """The simulated placement of ``count`` elements of ``datatype`` at the
        start of ``arr`` (a contiguous array of bytes)."""
        nbytes = count * datatype.size
        raw = arr.reshape(-1).view(np.uint8) if arr.size else np.zeros(0, np.uint8)
        if nbytes > raw.size:
            raise T.Exception(
                T.ERR_BUFFER,
                f"the buffer holds {raw.size} bytes but {count} x {datatype.name} need {nbytes}",
            )
        ea = self.locate(raw) if raw.size else None
        if ea is not None:
            return BufRef(ea, nbytes, datatype, count)
        key = (int(raw.ctypes.data) if raw.size else 0, nbytes)
        place = self.placed.get(key)
        if place is None:
            assert self.heap is not None
            shadow_ea = self.heap.alloc(max(nbytes, 16))
            place = self.placed[key] = Placement(
                self, key, shadow_ea, self.machine.memory(shadow_ea, max(nbytes, 16))
            )
        else:
            place.users += 1
        readonly = writable and not raw.flags.writeable
        return BufRef(
            place.ea,
            nbytes,
            datatype,
            count,
            host=raw,
            shadow=place.shadow,
            readonly=readonly,
            placement=place,
        )

    def temp(self, nbytes: int) -> BufRef:
        """A heap block of ``nbytes`` (for pickles and unexpected messages)."""
        assert self.heap is not None
        ea = self.heap.alloc(max(nbytes, 16))
        shadow = self.machine.memory(ea, max(nbytes, 16))
        return BufRef(ea, nbytes, T.BYTE, nbytes, shadow=shadow, heap=self.heap)

    # -- copies between effective addresses ------------------------------------------------

    def copy(
        self,
        src: int,
        dst: int,
        n: int,
        staging: Sequence[int],
        chunk: int,
        pipelined: bool,
    ) -> None:
        """Copies ``n`` bytes from EA ``src`` to EA ``dst`` through this
        SPE: straight into or out of the local store when one end is in it,
        else through the ``staging`` buffers (``chunk`` bytes each, plus 32):
        blocking get then blocking put per chunk (Kumar et al.), or with
        ``pipelined`` a get and a fenced put per buffer in flight, one tag
        group per buffer (pieces of ``n / len(staging)``, at least 512 bytes,
        for short copies)."""
        if n <= 0:
            return
        d_ls, s_ls = self.in_my_ls(dst), self.in_my_ls(src)
        if d_ls is not None and s_ls is not None:
            self.ls_copy(d_ls, s_ls, n)
            return
        if (d_ls is not None or s_ls is not None) and not (src ^ dst) & 15:
            if d_ls is not None:
                self.dma(False, d_ls, src, n, TAG_SYNC)
            else:
                assert s_ls is not None
                self.dma(True, s_ls, dst, n, TAG_SYNC)
            self.wait_tags(1 << TAG_SYNC)
            return
        if (src ^ dst) & 15 or not pipelined:
            self._copy_blocking(src, dst, n, staging[0], chunk)
            return
        nb = len(staging)
        # short copies in smaller pieces, so that gets and puts overlap
        chunk = min(chunk, max(512, -(-n // (nb * 128)) * 128))
        done = 0
        i = 0
        while done < n:
            b = i % nb
            tag = TAG_PULL + b
            a = src & 15
            take = min(chunk - a if a else chunk, n - done)
            if i >= nb:
                self.wait_tags(1 << tag)
            lsa = staging[b] + a
            self.dma(False, lsa, src, take, tag)
            self.dma(True, lsa, dst, take, tag, fence=True)
            src, dst, done, i = src + take, dst + take, done + take, i + 1
        self.wait_tags(sum(1 << (TAG_PULL + b) for b in range(min(nb, i))))

    def _copy_blocking(self, src: int, dst: int, n: int, buf: int, chunk: int) -> None:
        done = 0
        while done < n:
            a, b = src & 15, dst & 15
            take = min(chunk - max(a, b), n - done)
            self.get_blocking(buf + a, src, take)
            if a != b:
                self.ls_copy(buf + 16 + b, buf + a, take)
                self.put_blocking(buf + 16 + b, dst, take)
            else:
                self.put_blocking(buf + a, dst, take)
            src, dst, done = src + take, dst + take, done + take

    # -- MPI call bookkeeping -----------------------------------------------------------------

    def account_host_time(self) -> None:
        """``host-scaled``: the host time the program took since its last MPI
        call becomes SPU cycles (charged now)."""
        rule = self.world.compute
        if rule.kind == "host-scaled" and self.in_call == 0:
            now = time.perf_counter()
            self.charge(round((now - self.last_exit) * rule.factor * self.machine.core_hz))
            self.last_exit = now

    def enter(self) -> None:
        """Start of a public MPI call: the program's own time since the last call."""
        if self.in_call == 0:
            self.account_host_time()
            self.charge(self.costs.call)
        self.in_call += 1

    def leave(self) -> None:
        """End of a public MPI call: its charged cycles are spent before it returns."""
        self.in_call -= 1
        if self.in_call == 0:
            self.flush()
            self.world.busy(self.rank)
            self.last_exit = time.perf_counter()

    def next_coll_seq(self, ctx: int) -> int:
        """The sequence number of this rank's next collective on context ``ctx``."""
        s = self.coll_seq.get(ctx, 0) + 1
        self.coll_seq[ctx] = s
        return s

    def called_coll(self, ctx: int, seq: int, what: str) -> None:
        """Remembers that this rank's collective ``seq`` on ``ctx`` is ``what``."""
        self.recent_colls[(ctx, seq % RECENT_COLLS)] = (seq, what)

    def coll_called(self, ctx: int, seq: int) -> str | None:
        """What this rank called as its collective ``seq`` on ``ctx``, if recent."""
        got = self.recent_colls.get((ctx, seq % RECENT_COLLS))
        return got[1] if got is not None and got[0] == seq else None


def current_rank(call: str = "this MPI call") -> Rank:
    """The rank running the current SPE program; an MPI error outside one."""
    g = getcurrent()
    r = getattr(g, "_mpi_rank", None)
    if r is None:
        raise T.Exception(
            T.ERR_OTHER,
            f"{call} must be made by an MPI rank: run the program with `cellsim mpirun` "
            "or cellsim.mpi.mpirun()",
        )
    return r


_SPAN_PEERS = ("dest", "source", "root")
_SPAN_BUFFERS = ("buf", "message", "sendbuf", "recvbuf")


def _span_args(
    params: list[str], args: tuple[Any, ...], kwargs: dict[str, Any], buffers: bool = True
) -> dict[str, int]:
    """What a trace shows of an MPI call: its peer (dest, source or root), tag
    and bytes (of a buffer call's buffer: ``buffers``; an object's pickle is not counted)."""
    given = dict(zip(params, args, strict=False)) | kwargs
    out: dict[str, int] = {}
    for name in _SPAN_PEERS:
        v = given.get(name)
        if isinstance(v, int) and not isinstance(v, bool):
            out["root" if name == "root" else "peer"] = v
            break
    tag = given.get("tag", given.get("sendtag"))
    if isinstance(tag, int) and not isinstance(tag, bool):
        out["tag"] = tag
    for name in _SPAN_BUFFERS if buffers else ():
        n = _nbytes(given.get(name))
        if n is not None:
            out["bytes"] = n
            break
    return out


def _nbytes(buf: Any) -> int | None:
    """The bytes of an MPI buffer argument: an array, or ``[array, ...]``."""
    if isinstance(buf, (list, tuple)) and buf:
        buf = buf[0]
    n = getattr(buf, "nbytes", None)
    return int(n) if isinstance(n, int) else None


def api(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates a public MPI call: accounts the program's time since its
    previous call (``host-scaled``) and the call's own overhead; in a traced
    run, records the call's span (the outermost call only)."""
    import functools
    import inspect

    params = list(inspect.signature(fn).parameters)
    name = fn.__qualname__.rpartition(".")[2]
    buffers = not name[:1].islower()  # mpi4py: Send moves a buffer, send a pickled object

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g = getcurrent()
        r: Rank | None = getattr(g, "_mpi_rank", None)
        if r is None:
            return fn(*args, **kwargs)
        spans = r.world.spans
        outer = spans is not None and r.in_call == 0
        r.enter()
        t0 = r.machine.cycles + r.pending_cycles - r.costs.call if outer else 0
        try:
            result = fn(*args, **kwargs)
        except GreenletExit:
            raise  # the run is being stopped: keep what the rank waited on for the report
        except BaseException:
            r.leave()
            raise
        r.leave()
        if outer and spans is not None:
            spans.append((r.rank, name, t0, r.machine.cycles, _span_args(params, args, kwargs, buffers)))
        return result

    return wrapper


def ls_alloc_check(rank: Rank, top: int) -> None:
    """Lowers the rank's local-store top to ``top`` (the library's regions
    lie above it), failing if the program already uses that space."""
    p = rank.program
    if p.ls_next > top:
        raise MfcError(
            f"the MPI library needs the local store from 0x{top:x} up but the program already "
            f"allocated up to 0x{p.ls_next:x}",
            kind="ls_overflow",
            spe=rank.spe,
            command="MPI_Init",
        )
    p.ls_top = min(p.ls_top, top)
