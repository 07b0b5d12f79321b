"""C threads on the simulated machine: the driver loop and the requests.

A C thread runs inside the :class:`~cellsim.machine.Program` greenlet of its
SPE program or PPE thread. The driver resumes it; when it makes a request
(``mfc_get``, ``spu_readch``, ``spe_context_run``...), the driver answers with
the same Python call a Python program would make (:mod:`cellsim.spu`,
:mod:`cellsim.ppe`), so C programs have the Python API's semantics and
timing by construction. A call that waits switches the greenlet away while the
C thread stays suspended on its own stack.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from greenlet import getcurrent

from .. import _engine, ppe, spu
from ..exceptions import CellsimError, MfcError, NotInProgramError, UsageError
from ..machine import Machine, Program
from . import requests as rq
from .image import KIND_PPU_MAIN, KIND_PTHREAD, KIND_SPU_MAIN, Image, ThreadHeader

if TYPE_CHECKING:
    from .app import CApp

U64 = (1 << 64) - 1
LS_BYTES = 256 * 1024


@dataclass
class ComputeMode:
    """How a run charges the C code's own work (see docs/c-programs.md)."""

    count_intrinsics: bool = False
    host_time_scale: float | None = None
    """Charge each C thread's host CPU time between calls, times this, as
    simulated time (off by default: it makes runs depend on the host)."""

    def describe(self) -> str:
        parts = ["spu_compute() annotations"]
        if self.count_intrinsics:
            parts.append("intrinsic costs (--count-intrinsics)")
        if self.host_time_scale:
            parts.append(f"host CPU time x {self.host_time_scale:g} (--host-time-scale: not deterministic)")
        if len(parts) == 1:
            return "spu_compute() annotations only (C code between calls takes no simulated time)"
        return " + ".join(parts)


@dataclass
class CEnv:
    """What every C thread of one machine shares: the address translation
    between host pointers and effective addresses, and the app's images."""

    machine: Machine
    app: CApp | None = None
    mode: ComputeMode = field(default_factory=ComputeMode)
    memory_lo: int = 0
    memory_hi: int = 0
    ppu_data_ea: int = 0
    contexts: dict[int, ppe.SpeContext] = field(default_factory=dict)
    # libspe2 event handlers, by the number the C runtime holds
    handlers: list[ppe.SpeEventHandler] = field(default_factory=list)
    threads: dict[int, ppe.PpeThread] = field(default_factory=dict)
    # each C thread's last call: (the C string of its file, its line), for reports
    calls: dict[int, tuple[int, int]] = field(default_factory=dict)

    ls_bases: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.memory_lo = self.machine.memory_address()
        self.memory_hi = self.memory_lo + int(self.machine.info["memory_bytes"])
        # the host address of each local store (the machine's views stay put)
        self.ls_bases = [int(self.machine.local_store(s).ctypes.data) for s in range(self.machine.spe_count)]

    def ls_host(self, spe: int) -> int:
        return self.ls_bases[spe]

    def ea(self, x: int, what: str = "ea") -> int:
        """The effective address of ``x``: a host pointer into simulated
        memory, into the PPU image's data or into a local store (from
        ``spe_ls_area_get``) becomes its EA; anything else is taken as an EA."""
        if self.memory_lo <= x < self.memory_hi:
            return x - self.memory_lo
        if x < self.memory_hi - self.memory_lo:
            return x  # an EA already (from a Python program, or a small integer)
        app = self.app
        if app is not None and app.ppu is not None and self.ppu_data_ea:
            seg = app.ppu.segment
            if seg.start <= x < seg.start + seg.size:
                return self.ppu_data_ea + (x - seg.start)
        for spe, base in enumerate(self.ls_bases):
            if base <= x < base + LS_BYTES:
                return int(_engine.ls_ea(spe)) + (x - base)
        return x

    def host(self, ea: int) -> int:
        """The host pointer of main-memory EA ``ea`` (for PPU code)."""
        return self.memory_lo + ea


def env_of(machine: Machine) -> CEnv:
    env: CEnv | None = getattr(machine, "_c_env", None)
    if env is None:
        env = CEnv(machine)
        machine._c_env = env  # type: ignore[attr-defined]
    return env


def _current(call: str) -> Program:
    g = getcurrent()
    if not isinstance(g, Program):
        raise NotInProgramError(f"{call} must run inside Machine.run()")
    return g


class CThread:
    """One C thread: its coroutine in an image and the greenlet it runs in."""

    def __init__(self, env: CEnv, image: Image, program: Program, kind: int, fn: int, *args: int) -> None:
        self.env = env
        self.image = image
        self.program = program
        self.kind = kind
        self.fn = fn
        self.args = args
        self.update_mode = spu.MFC_TAG_UPDATE_ALL
        self.channel_cmd = [0] * 6  # MFC_LSA .. MFC_TagID, for MFC_Cmd writes
        # DMA lists whose elements are translated in the local store while the
        # command may read them: list address -> [size, tag, the C program's bytes]
        self.list_patches: dict[int, list[Any]] = {}
        self.list_high = 0

    # -- the data around each resume ---------------------------------------------------
    # The runtime copies the data from its home (the SPE's local store, or simulated
    # memory for the PPU) into the image before each resume and back after it. DMA
    # lists are the one exception: the MFC reads them with translated EAs, the
    # program sees its own.

    def _home(self) -> int:
        if self.kind == KIND_SPU_MAIN:
            return self.ls_data
        return self.env.host(self.env.ppu_data_ea) if self.env.ppu_data_ea else 0

    def _enter(self) -> None:
        ls = self.program.ls
        for lst, (size, _, original) in self.list_patches.items():
            ls[lst : lst + size] = np.frombuffer(original, dtype=np.uint8)

    def _leave(self) -> None:
        ls_view = self.program.ls
        for lst, patch in self.list_patches.items():
            patch[2] = bytes(ls_view[lst : lst + patch[0]])  # the program may have changed it
            self._translate_list(lst, patch[0])

    def _setup_spu(self) -> None:
        p = self.program
        assert p.spe is not None
        seg = self.image.segment
        self.ls_base = self.image.ls_address(int(p.machine.info["ls_reserved_bytes"]))
        end = self.ls_base + seg.size
        if end > p.ls_top:
            raise MfcError(
                f"the C program {self.image.name}'s static data ({seg.size} bytes) does not fit in the "
                f"local store of SPE {p.spe}: it would end at 0x{end:x}, the local store at 0x{p.ls_top:x}",
                kind="ls_overflow",
                spe=p.spe,
                command=f"load {self.image.name}",
            )
        self.ls_data = self.env.ls_host(p.spe) + self.ls_base
        ctypes.memmove(self.ls_data, seg.pristine, seg.size)
        p.ls_next = max(p.ls_next, end)  # Python helpers (cellsim.sync) allocate past it

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> int:
        """Runs the C thread to its end (in simulated time); returns its exit value."""
        if self.kind == KIND_SPU_MAIN:
            self._setup_spu()
        t = self.image.new_thread(self.kind, self.fn, *self.args)
        # the header as 64-bit words, read in one go per request
        words = np.frombuffer(memoryview((ctypes.c_uint64 * _HEADER_WORDS).from_address(t)), dtype=np.uint64)
        home = self._home()
        if home:
            self.image.set_data(t, home)
        try:
            while True:
                op, w = self._step(t, words)
                if op <= rq.EXIT:
                    return int(ThreadHeader.from_address(t).result)
                words[_REPLY] = self._answer(op, w, t)
        finally:
            self.image.free_thread(t)

    def _step(self, t: int, words: np.ndarray) -> tuple[int, list[int]]:
        """Resumes the thread to its next request; charges the work it reported."""
        if self.list_patches:
            self._enter()
        scale = self.env.mode.host_time_scale
        t0 = time.thread_time_ns() if scale else 0
        op = int(self.image.lib.cellsim_thread_resume(t))
        host_ns = time.thread_time_ns() - t0 if scale else 0
        if self.list_patches:
            self._leave()
        w: list[int] = words.tolist()
        self.env.calls[self.program.tid] = (w[_FILE], w[_LINE])
        work = max(w[_EVEN], w[_ODD])
        if scale:
            work += round(host_ns * scale * self.program.machine.core_hz / 1e9)
        if work:
            self._charge(work)
        return op, w

    def _answer(self, op: int, w: list[int], t: int) -> int:
        """The reply to request ``op``; an error names the C line that made it."""
        try:
            handler = _HANDLERS.get(op)
            if handler is None or handler.spu != (self.kind == KIND_SPU_MAIN):
                self._misuse(op, handler)
            if self.program.machine._dma_checker is not None:  # --check-dma names the C line
                hdr = ThreadHeader.from_address(t)
                self.program.c_site = f"{hdr.file.decode()}:{hdr.line}" if hdr.file else None
            return int(handler.fn(self, w)) & U64  # type: ignore[union-attr]
        except CellsimError as e:
            hdr = ThreadHeader.from_address(t)
            if hdr.file:
                where = f"{hdr.file.decode()}:{hdr.line}"
                e.args = (f"{e.args[0] if e.args else ''} (in C at {where})", *e.args[1:])
                e.c_location = where  # type: ignore[attr-defined]
            raise

    def _charge(self, cycles: int) -> None:
        if self.kind == KIND_SPU_MAIN:
            spu.compute(cycles)
        else:
            ppe.compute(cycles)

    def _misuse(self, op: int, handler: _Handler | None) -> None:
        if handler is None:
            raise UsageError(f"unknown request {op} from the C runtime (an image built by another cellsim?)")
        side = "an SPU" if handler.spu else "a PPU"
        raise UsageError(f"{handler.name} can only be called from {side} program")

    # -- SPU requests ----------------------------------------------------------------------

    def ls(self, x: int, what: str) -> int:
        """A local-store address: a pointer into the program's statics, or a
        local-store address (below 256 KB) as it is."""
        seg = self.image.segment
        if seg.start <= x <= seg.start + seg.size:
            return self.ls_base + (x - seg.start)
        if x < LS_BYTES:
            return x
        raise MfcError(
            f"{what} 0x{x:x} is not in the local store: DMA buffers must be static (global or "
            "static variables, e.g. `static char buf[N] __attribute__((aligned(128)))`); the C "
            "stack and the host heap are not local store",
            kind="ls_range",
            spe=self.program.spe,
            cycle=self.program.engine_now(),
            command=what,
        )

    def dma(self, a: list[int]) -> int:
        opcode, ls_ptr, ea_ptr, size, tag, lst_ptr = a[:6]
        name = _DMA_NAMES.get(opcode, f"MFC command 0x{opcode:x}")
        ls = self.ls(ls_ptr, f"{name}: ls") if ls_ptr or opcode not in _NO_LS else 0
        ea = self.env.ea(ea_ptr, f"{name}: ea")
        p = self.program
        if opcode in _LIST_OPS:
            lst = self.ls(lst_ptr, f"{name}: list")
            self.list_patches[lst] = [size, tag, bytes(p.ls[lst : lst + size])]
            self.list_high = ea_ptr >> 32
            self._translate_list(lst, size)
            spu._list_dma(name, opcode, ls, ea, lst, size, tag)
        else:
            spu._dma(name, opcode, ls, ea, size, tag)
        return 0

    def _translate_list(self, lst: int, size: int) -> None:
        """The list's elements as the MFC must see them: each element's EA
        (the command's high word, the element's low word) translated."""
        ls = self.program.ls
        n = min(size, len(ls) - lst) // 8
        words = np.frombuffer(ls, dtype=">u8", count=n, offset=lst).copy()
        high = self.list_high << 32
        for i, w in enumerate(words):
            ea = self.env.ea(high | (int(w) & 0xFFFFFFFF))
            words[i] = (int(w) & ~0xFFFFFFFF & U64) | (ea & 0xFFFFFFFF)
        ls[lst : lst + 8 * n] = words.view(np.uint8)

    def _lists_done(self, status: int) -> None:
        """Forgets the lists whose tag group is complete: the MFC has read them."""
        for ls in [ls for ls, (_, tag, _) in self.list_patches.items() if status >> tag & 1]:
            del self.list_patches[ls]

    def read_channel(self, a: list[int]) -> int:
        ch = a[0]
        if ch == rq.MFC_RD_TAG_STAT:
            status = _TAG_READS.get(self.update_mode, spu.mfc_read_tag_status_immediate)()
            self._lists_done(status)
            return status
        if ch == rq.MFC_RD_TAG_MASK:
            return spu.mfc_read_tag_mask()
        if ch in (rq.SPU_RD_SIG_NOTIFY_1, rq.SPU_RD_SIG_NOTIFY_2):
            value = spu.spu_read_signal1() if ch == rq.SPU_RD_SIG_NOTIFY_1 else spu.spu_read_signal2()
            return _host_word(value)
        reader = _READERS.get(ch)
        if reader is not None:
            return reader()
        raise _channel_error(self, ch, "read")

    def write_channel(self, a: list[int]) -> int:
        ch, value = a[0], a[1]
        if rq.MFC_LSA <= ch <= rq.MFC_TAG_ID:
            self.channel_cmd[ch - rq.MFC_LSA] = value
            return 0
        if ch == rq.MFC_CMD:
            lsa, eah, eal, size, tag, _ = self.channel_cmd
            self.dma([value & 0xFF, lsa, (eah << 32) | eal, size, tag, 0])
            return 0
        if ch == rq.MFC_WR_TAG_UPDATE:
            self.update_mode = value
            spu.mfc_write_tag_update(value)  # raises the tag-group event when met
            return 0
        writer = _WRITERS.get(ch)
        if writer is not None:
            writer(value)
            return 0
        raise _channel_error(self, ch, "write")

    def channel_count(self, a: list[int]) -> int:
        ch = a[0]
        count = _COUNTS.get(ch)
        if count is not None:
            return count()
        if ch in (rq.MFC_WR_TAG_UPDATE, rq.MFC_RD_TAG_STAT, rq.MFC_WR_TAG_MASK, rq.MFC_RD_TAG_MASK):
            return 1
        raise _channel_error(self, ch, "count")

    def compute(self, a: list[int]) -> int:
        spu.compute(a[0])
        return 0

    def lsa(self, a: list[int]) -> int:
        return self.ls(a[0], "cellsim_lsa")

    # -- PPU requests ----------------------------------------------------------------------

    def context(self, spe: int) -> ppe.SpeContext:
        ctx = self.env.contexts.get(spe)
        if ctx is None:
            raise UsageError(f"no SPE context for SPE {spe} (spe_context_create it first)")
        return ctx

    def spe_count(self, a: list[int]) -> int:
        return self.program.machine.spe_count

    def ctx_create(self, a: list[int]) -> int:
        ctx = ppe.spe_context_create(a[0])
        self.env.contexts[ctx.spe] = ctx
        return ctx.spe

    def ctx_destroy(self, a: list[int]) -> int:
        ppe.spe_context_destroy(self.context(a[0]))
        return 0

    def program_load(self, a: list[int]) -> int:
        name = ctypes.string_at(a[1]).decode()
        app = self.env.app
        if app is None or name not in app.spu:
            known = ", ".join(sorted(app.spu)) if app else "none"
            raise UsageError(f"spe_program_load: no SPU program {name!r} in this app (it has: {known})")
        ppe.spe_program_load(self.context(a[0]), CProgram(app.spu[name]))
        return 0

    def ctx_run(self, a: list[int]) -> int:
        ctx = self.context(a[0])
        argp, envp = self.env.ea(a[1]), self.env.ea(a[2])
        for name, ptr in (("argp", argp), ("envp", envp)):
            if not self.program.machine.is_mapped(ptr) and ptr >= 1 << 32:
                raise UsageError(
                    f"spe_context_run: {name} 0x{ptr:x} is a host pointer outside simulated memory (the "
                    "PPU's stack?): give the SPE memory from malloc/posix_memalign or a static variable"
                )
        return ppe.spe_context_run(ctx, argp=argp, envp=envp).exit_code & 0xFFFFFFFF

    def in_mbox_write(self, a: list[int]) -> int:
        spe, data, count, behavior = a[0], a[1], a[2], a[3]
        values = list((ctypes.c_uint32 * count).from_address(data)) if count else []
        return ppe.spe_in_mbox_write(self.context(spe), values, behavior)

    def out_mbox_read(self, a: list[int]) -> int:
        spe, data, count, interrupt, behavior = a[0], a[1], a[2], a[3], a[4]
        ctx = self.context(spe)
        if interrupt:
            got = ppe.spe_out_intr_mbox_read(ctx, count, behavior)
        else:
            got = ppe.spe_out_mbox_read(ctx, count)
        out = (ctypes.c_uint32 * max(count, 1)).from_address(data)
        for i, v in enumerate(got):
            out[i] = v
        return len(got)

    def mbox_status(self, a: list[int]) -> int:
        ctx = self.context(a[0])
        return [ppe.spe_in_mbox_status, ppe.spe_out_mbox_status, ppe.spe_out_intr_mbox_status][a[1]](ctx)

    def signal_write(self, a: list[int]) -> int:
        ppe.spe_signal_write(self.context(a[0]), a[1], _host_word(a[2]))
        return 0

    def ls_area(self, a: list[int]) -> int:
        return self.env.ls_host(self.context(a[0]).spe)

    def ps_area(self, a: list[int]) -> int:
        return ppe.spe_ps_area_get(self.context(a[0]), a[1])

    def thread_create(self, a: list[int]) -> int:
        fn, arg = a[0], a[1]
        env, image = self.env, self.image

        def body() -> int:
            me = _current("pthread_create")
            return CThread(env, image, me, KIND_PTHREAD, fn, arg).run()

        t = ppe.pthread_create(body)
        env.threads[t.tid] = t
        return t.tid

    def thread_join(self, a: list[int]) -> int:
        t = self.env.threads.get(a[0])
        if t is None:
            raise UsageError(f"pthread_join: no thread {a[0]} (not made by pthread_create)")
        return int(ppe.pthread_join(t) or 0)

    def alloc(self, a: list[int]) -> int:
        size, align = a[0], a[1]
        buf = self.program.machine.alloc(max(size, 1), align)
        return self.env.host(int(buf))

    def time(self, a: list[int]) -> int:
        """``__mftb()``: the PPU's timebase, simulated (ticks of ``timebase_hz`` since the run began)."""
        m = self.program.machine
        hz = int(m.info["timebase_hz"])
        if a[0] == rq.TIME_TIMEBASE_HZ:
            return hz
        return m.cycles * hz // int(m.core_hz)

    def ppe_compute(self, a: list[int]) -> int:
        ppe.compute(a[0])
        return 0

    def mfcio(self, a: list[int]) -> int:
        spe, opcode, lsa, ea, size, tag = a[:6]
        ctx = self.context(spe)
        call = ppe.spe_mfcio_get if opcode == spu.MFC_GET_CMD else ppe.spe_mfcio_put
        call(ctx, lsa, self.env.ea(ea), size, tag)
        return 0

    def mfcio_status(self, a: list[int]) -> int:
        return ppe.spe_mfcio_tag_status_read(self.context(a[0]), a[1], a[2])

    def event_handler(self, a: list[int]) -> int:
        what, number = a[0], a[1]
        if what == rq.EVENT_CREATE:
            self.env.handlers.append(ppe.spe_event_handler_create())
            return len(self.env.handlers) - 1
        h = self.env.handlers[number]
        if what == rq.EVENT_DESTROY:
            ppe.spe_event_handler_destroy(h)
            return 0
        unit = ppe.SpeEventUnit(a[3], self.context(a[2]))
        if what == rq.EVENT_REGISTER:
            ppe.spe_event_handler_register(h, unit)
        else:
            ppe.spe_event_handler_deregister(h, unit)
        return 0

    def event_wait(self, a: list[int]) -> int:
        timeout = ctypes.c_int32(a[2]).value
        got = ppe.wait_events(self.env.handlers[a[0]], a[1], timeout)
        return sum(bit << (4 * spe) for spe, bit in got)


_HEADER_WORDS = 13
_REPLY, _FILE, _LINE, _EVEN, _ODD = 6, 7, 8, 11, 12  # words of the thread's header (ThreadHeader)

_READERS: dict[int, Callable[[], int]] = {
    rq.SPU_RD_IN_MBOX: spu.spu_read_in_mbox,
    rq.MFC_RD_ATOMIC_STAT: spu.mfc_read_atomic_status,
    rq.MFC_RD_LIST_STALL_STAT: spu.mfc_read_list_stall_status,
    rq.SPU_RD_DEC: spu.spu_read_decrementer,
    rq.SPU_RD_EVENT_STAT: spu.spu_read_event_status,
    rq.SPU_RD_EVENT_MASK: spu.spu_read_event_mask,
}
_WRITERS: dict[int, Callable[[int], None]] = {
    rq.MFC_WR_TAG_MASK: spu.mfc_write_tag_mask,
    rq.SPU_WR_OUT_MBOX: spu.spu_write_out_mbox,
    rq.SPU_WR_OUT_INTR_MBOX: spu.spu_write_out_intr_mbox,
    rq.MFC_WR_LIST_STALL_ACK: spu.mfc_write_list_stall_ack,
    rq.SPU_WR_DEC: spu.spu_write_decrementer,
    rq.SPU_WR_EVENT_MASK: spu.spu_write_event_mask,
    rq.SPU_WR_EVENT_ACK: spu.spu_write_event_ack,
}
_COUNTS: dict[int, Callable[[], int]] = {
    rq.SPU_RD_IN_MBOX: spu.spu_stat_in_mbox,
    rq.SPU_WR_OUT_MBOX: spu.spu_stat_out_mbox,
    rq.SPU_WR_OUT_INTR_MBOX: spu.spu_stat_out_intr_mbox,
    rq.SPU_RD_SIG_NOTIFY_1: spu.spu_stat_signal1,
    rq.SPU_RD_SIG_NOTIFY_2: spu.spu_stat_signal2,
    rq.SPU_RD_EVENT_STAT: spu.spu_stat_event_status,
}
_TAG_READS: dict[int, Callable[[], int]] = {
    spu.MFC_TAG_UPDATE_ALL: spu.mfc_read_tag_status_all,
    spu.MFC_TAG_UPDATE_ANY: spu.mfc_read_tag_status_any,
}


def where_blocked(env: CEnv) -> str:
    """Where each C thread made its last call (for a deadlock or a runaway)."""
    out = []
    for tid, (file, line) in sorted(env.calls.items()):
        if file:
            out.append(f"thread {tid} at {ctypes.string_at(file).decode()}:{line}")
    return "; ".join(out)


def _host_word(v: int) -> int:
    """A 32-bit word between C and a signal register: C code keeps the host's
    byte order, the MFC reads a signal's 4 bytes big-endian, so values sent as
    bytes (mfc_sndsig) and as values (spe_signal_write) meet byte-swapped."""
    return int.from_bytes(int(v & 0xFFFFFFFF).to_bytes(4, "big"), "little")


def _channel_error(t: CThread, ch: int, how: str) -> UsageError:
    name = rq.CHANNEL_NAMES.get(ch, f"channel {ch}")
    return UsageError(f"{how} of SPU channel {ch} ({name}) is not supported by cellsim's C runtime")


@dataclass(frozen=True)
class _Handler:
    name: str
    fn: Callable[[CThread, list[int]], int]
    spu: bool


_HANDLERS: dict[int, _Handler] = {
    op: _Handler(name, fn, side)
    for op, name, fn, side in [
        (rq.DMA, "an MFC command", CThread.dma, True),
        (rq.READ_CH, "spu_readch", CThread.read_channel, True),
        (rq.WRITE_CH, "spu_writech", CThread.write_channel, True),
        (rq.CHCNT, "spu_readchcnt", CThread.channel_count, True),
        (rq.COMPUTE, "spu_compute", CThread.compute, True),
        (rq.LSA, "cellsim_lsa", CThread.lsa, True),
        (rq.CTX_CREATE, "spe_context_create", CThread.ctx_create, False),
        (rq.CTX_DESTROY, "spe_context_destroy", CThread.ctx_destroy, False),
        (rq.SPE_COUNT, "spe_cpu_info_get", CThread.spe_count, False),
        (rq.PROGRAM_LOAD, "spe_program_load", CThread.program_load, False),
        (rq.CTX_RUN, "spe_context_run", CThread.ctx_run, False),
        (rq.IN_MBOX_WRITE, "spe_in_mbox_write", CThread.in_mbox_write, False),
        (rq.OUT_MBOX_READ, "spe_out_mbox_read", CThread.out_mbox_read, False),
        (rq.MBOX_STATUS, "spe_*_mbox_status", CThread.mbox_status, False),
        (rq.SIGNAL_WRITE, "spe_signal_write", CThread.signal_write, False),
        (rq.LS_AREA, "spe_ls_area_get", CThread.ls_area, False),
        (rq.PS_AREA, "spe_ps_area_get", CThread.ps_area, False),
        (rq.THREAD_CREATE, "pthread_create", CThread.thread_create, False),
        (rq.THREAD_JOIN, "pthread_join", CThread.thread_join, False),
        (rq.ALLOC, "malloc", CThread.alloc, False),
        (rq.PPE_COMPUTE, "ppu_compute", CThread.ppe_compute, False),
        (rq.TIME, "__mftb", CThread.time, False),
        (rq.MFCIO, "spe_mfcio_get/put", CThread.mfcio, False),
        (rq.MFCIO_STATUS, "spe_mfcio_tag_status_read", CThread.mfcio_status, False),
        (rq.EVENT_HANDLER, "spe_event_handler_*", CThread.event_handler, False),
        (rq.EVENT_WAIT, "spe_event_wait", CThread.event_wait, False),
    ]
}

_DMA_NAMES = {v: k for k, v in vars(spu).items() if k.startswith("MFC_") and k.endswith("_CMD")}
_DMA_NAMES = {op: name.removesuffix("_CMD").lower() for op, name in _DMA_NAMES.items()}
_NO_LS = {spu.MFC_BARRIER_CMD, spu.MFC_EIEIO_CMD, spu.MFC_SYNC_CMD}
_LIST_OPS = {
    spu.MFC_GETL_CMD,
    spu.MFC_GETLB_CMD,
    spu.MFC_GETLF_CMD,
    spu.MFC_PUTL_CMD,
    spu.MFC_PUTLB_CMD,
    spu.MFC_PUTLF_CMD,
}


class CProgram:
    """A C SPU program built by ``cellsim cc``, for :meth:`Machine.load` and
    ``spe_program_load``: ``int main(unsigned long long speid, unsigned long
    long argp, unsigned long long envp)`` runs on the SPE.

    ``CProgram("app_dir", "NAME")`` takes SPU program ``NAME`` of an app;
    ``CProgram("prog.so")`` an image built with ``cellsim cc --spu-only``."""

    def __init__(self, image: Image | str, name: str | None = None) -> None:
        from .app import load_spu

        self.image = image if isinstance(image, Image) else load_spu(image, name)
        self.__name__ = self.image.name

    def __call__(self, speid: int, argp: int, envp: int) -> int:
        p = _current(f"the C program {self.image.name}")
        env = env_of(p.machine)
        code = CThread(env, self.image, p, KIND_SPU_MAIN, self.image.symbol("main"), speid, argp, envp).run()
        return code & 0xFFFFFFFF

    def __repr__(self) -> str:
        return f"CProgram({self.image.name!r})"


def run_ppu_main(env: CEnv, image: Image, argv: list[str]) -> int:
    """The PPU program's ``main(argc, argv)`` on the calling PPE thread."""
    p = _current("the PPU program")
    env.ppu_data_ea = int(p.machine.alloc(image.segment.size + 4096, 4096)) + image.segment.start % 4096
    # the runtime's own statics are in the data too: set them in a fresh copy
    ctypes.memmove(image.segment.start, image.segment.pristine, image.segment.size)
    image.lib.cellsim_set_memory(ctypes.c_size_t(env.memory_lo), ctypes.c_size_t(env.memory_hi))
    ctypes.memmove(env.host(env.ppu_data_ea), image.segment.start, image.segment.size)
    args = [s.encode() for s in argv]
    arr = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    env._argv = arr  # type: ignore[attr-defined]  # alive while main runs
    addr = ctypes.cast(arr, ctypes.c_void_p).value or 0
    return CThread(env, image, p, KIND_PPU_MAIN, image.symbol("main"), len(args), addr).run()


__all__ = ["CEnv", "CProgram", "CThread", "ComputeMode", "env_of", "run_ppu_main"]
