"""C threads on the simulated machine: the driver loop and the requests.

A C thread runs in the process of its program (:mod:`cellsim.c.process`) and is
driven from the :class:`~cellsim.machine.Program` greenlet of its SPE program or
PPE thread. The driver resumes it; when it makes a request (``mfc_get``,
``spu_readch``, ``spe_context_run``...), the driver answers with the same Python
call a Python program would make (:mod:`cellsim.spu`, :mod:`cellsim.ppe`), so C
programs have the Python API's semantics and timing by construction. A call
that waits switches the greenlet away while the C thread stays suspended on its
own stack in its own process.
"""

from __future__ import annotations

import errno
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from greenlet import getcurrent

from .. import _engine, ppe, spu
from ..exceptions import (
    CellsimError,
    MfcError,
    NotInProgramError,
    ProgramCrashError,
    RunawayError,
    UsageError,
)
from ..machine import Machine, Program
from . import names
from . import requests as rq
from .image import KIND_PPU_MAIN, KIND_PTHREAD, KIND_SPU_MAIN, PAGE, Image, ls_page
from .process import (
    LS_BASE,
    LS_STRIDE,
    MEMORY_BASE,
    R_ARGS,
    R_EVEN,
    R_LINE,
    R_ODD,
    R_OP,
    R_RESULT,
    SPU_LS_AT,
    SPU_LS_BYTES,
    SPU_STACK_GUARD,
    W_CPU_NS,
    W_MEASURE,
    CProcess,
    CrashReport,
    HostLimit,
    ProcessEnded,
    share_local_stores,
)

if TYPE_CHECKING:
    from .app import CApp

U64 = (1 << 64) - 1
LS_BYTES = 256 * 1024
SPU_STACK_BYTES = SPU_LS_BYTES - SPU_STACK_GUARD
"""An SPU program's C stack (a guard page included): the top of its local store, as on the Cell."""
PPU_STACK_BYTES = 1 << 20
"""A PPE thread's C stack (a guard page included), in main memory, as on the Cell."""
PPU_STACKS_RESERVED = 32 << 20
"""The top of main memory kept for PPE threads' stacks (at most a 16th of it)."""


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
class Crash:
    """A C program that died in its process: who, and how (for the run's summary)."""

    who: str
    program: str
    report: CrashReport

    def describe(self) -> str:
        return f"{self.who} (C program {self.program}) {self.report.describe()}"


@dataclass
class CEnv:
    """What every C thread of one machine shares: the address translation
    between the C processes' pointers and effective addresses, and the app."""

    machine: Machine
    app: CApp | None = None
    mode: ComputeMode = field(default_factory=ComputeMode)
    memory_lo: int = MEMORY_BASE
    memory_hi: int = MEMORY_BASE
    ppu_data_ea: int = 0
    ppu: CProcess | None = None
    contexts: dict[int, ppe.SpeContext] = field(default_factory=dict)
    # libspe2 event handlers, by the number the C runtime holds
    handlers: list[ppe.SpeEventHandler] = field(default_factory=list)
    threads: dict[int, ppe.PpeThread] = field(default_factory=dict)
    # each C thread's last call, file:line, for reports
    calls: dict[int, str] = field(default_factory=dict)
    # each C thread's process, for the wall-limit report
    running: dict[int, tuple[CProcess, str]] = field(default_factory=dict)
    crashes: list[Crash] = field(default_factory=list)
    # each SPE's last stop under spe_context_run (spe_stop_info_read)
    stops: dict[int, ppe.StopInfo] = field(default_factory=dict)

    ls_bases: list[int] = field(default_factory=list)
    # PPE threads' stacks (EAs) free for the next thread
    free_stacks: list[int] = field(default_factory=list)
    stacks_made: int = 0

    def __post_init__(self) -> None:
        self.memory_hi = MEMORY_BASE + self.machine.facts.memory_bytes
        # where each local store is mapped in every C process
        self.ls_bases = [LS_BASE + s * LS_STRIDE for s in range(self.machine.spe_count)]

    def ls_host(self, spe: int) -> int:
        return self.ls_bases[spe]

    def ea(self, x: int, what: str = "ea") -> int:
        """The effective address of ``x``: a pointer into simulated memory,
        into the PPU image's data or into a local store (from
        ``spe_ls_area_get``) becomes its EA; anything else is taken as an EA."""
        if self.memory_lo <= x < self.memory_hi:
            return x - self.memory_lo
        if x < self.memory_hi - self.memory_lo:
            return x  # an EA already (from a Python program, or a small integer)
        ppu = self.ppu
        if ppu is not None and self.ppu_data_ea and ppu.seg_start <= x < ppu.seg_start + ppu.seg_size:
            return self.ppu_data_ea + (x - ppu.seg_start)
        if LS_BASE <= x < LS_BASE + len(self.ls_bases) * LS_STRIDE and (x - LS_BASE) % LS_STRIDE < LS_BYTES:
            spe = (x - LS_BASE) // LS_STRIDE
            return int(_engine.ls_ea(spe)) + (x - self.ls_bases[spe])
        return x

    def host(self, ea: int) -> int:
        """The pointer to main-memory EA ``ea`` in the C processes."""
        return self.memory_lo + ea

    @property
    def stacks_floor(self) -> int:
        """Where the PPE threads' stacks begin: the top of main memory, outside the
        allocator's way, so that the program's own allocations (and their timing)
        are where they would be without them."""
        size = self.memory_hi - self.memory_lo
        return size - min(PPU_STACKS_RESERVED, size // 16) // PPU_STACK_BYTES * PPU_STACK_BYTES

    def ppe_stack(self) -> int:
        """Main memory for a PPE thread's stack (EA): a freed one, else the next of
        the top of memory, else (many threads at once) an allocation."""
        if self.free_stacks:
            return self.free_stacks.pop()
        ea = self.memory_hi - self.memory_lo - (self.stacks_made + 1) * PPU_STACK_BYTES
        self.stacks_made += 1
        if ea >= self.stacks_floor:
            return ea
        return int(self.machine.alloc(PPU_STACK_BYTES, PAGE))


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
    """One C thread: its coroutine in its program's process and the greenlet it runs in."""

    def __init__(self, env: CEnv, proc: CProcess, program: Program, kind: int, fn: int, *args: int) -> None:
        self.env = env
        self.proc = proc
        self.program = program
        self.kind = kind
        self.fn = fn
        self.args = args
        self.ls_base = 0
        self.stack = (0, 0)  # the C stack: its address in the process, its bytes
        self.update_mode = spu.MFC_TAG_UPDATE_ALL
        self.channel_cmd = [0] * 6  # MFC_LSA .. MFC_TagID, for MFC_Cmd writes
        # DMA lists whose elements are translated in the local store while the
        # command may read them: list address -> [size, tag, the C program's bytes]
        self.list_patches: dict[int, list[Any]] = {}
        self.list_high = 0

    # -- DMA lists around each resume -------------------------------------------------
    # The program's data is its home (the local store, or simulated memory for the PPU)
    # itself. DMA lists are the one exception: the MFC reads them with translated EAs,
    # the program sees its own.

    def _enter(self) -> None:
        ls = self.program.ls
        for lst, (size, _, original) in self.list_patches.items():
            ls[lst : lst + size] = np.frombuffer(original, dtype=np.uint8)

    def _leave(self) -> None:
        ls_view = self.program.ls
        for lst, patch in self.list_patches.items():
            patch[2] = bytes(ls_view[lst : lst + patch[0]])  # the program may have changed it
            self._translate_list(lst, patch[0])

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> int:
        """Runs the C thread to its end (in simulated time); returns its exit value."""
        proc = self.proc
        tid = self.program.tid
        self.env.running[tid] = (proc, self.program.who)
        stack_ea = None
        if self.kind != KIND_SPU_MAIN:  # a PPE thread's stack is main memory
            stack_ea = self.env.ppe_stack()
            self.stack = (self.env.host(stack_ea), PPU_STACK_BYTES)
        try:
            a0, a1, a2 = (*self.args, 0, 0, 0)[:3]
            w = self._resume(lambda: proc.new_thread(self.kind, self.fn, a0, a1, a2, stack=self.stack))
            number = proc.thread
            while True:
                op = w[R_OP]
                if op <= rq.EXIT:
                    return int(np.int64(np.uint64(w[R_RESULT])))
                reply = self._answer(op, w)
                w = self._resume(lambda reply=reply: proc.resume(number, reply))  # type: ignore[misc]
        except HostLimit as e:
            raise self._runaway(str(e)) from None
        finally:
            self.env.running.pop(tid, None)
            if stack_ea is not None:
                self.env.free_stacks.append(stack_ea)

    def _resume(self, go: Callable[[], list[int]]) -> list[int]:
        """Runs the thread to its next request; charges the work it reported."""
        if self.list_patches:
            self._enter()
        scale = self.env.mode.host_time_scale
        if scale:
            self.proc.words[W_MEASURE] = 1
        try:
            w = go()
        except RunawayError as e:
            if e.activity:
                raise
            # a command's --wall-limit alarm went off while the C code ran
            raise self._runaway(str(e.args[0]) if e.args else "host-time limit reached") from None
        if self.list_patches:
            self._leave()
        if self.proc.last_call:
            self.env.calls[self.program.tid] = self.proc.last_call
        work = max(w[R_EVEN], w[R_ODD])
        if scale:
            host_ns = int(self.proc.words[W_CPU_NS])
            work += round(host_ns * scale * self.program.machine.core_hz / 1e9)
        if work:
            self._charge(work)
        return w

    def _runaway(self, why: str) -> RunawayError:
        """The host-time limit passed while this thread ran its own C code."""
        m = self.program.machine
        me = self.program.who
        since = self.proc.last_call
        doing = "running its own C code" + (f" since its last SDK call at {since}" if since else "")
        activity = [(me, doing)]
        activity += [(w, d) for w, d in m._engine.activity() if w != me]
        report = "; ".join(f"{w}: {d}" for w, d in activity)
        return RunawayError(
            f"{why}; stopped at cycle {m.cycles}; {report}", cycle=m.cycles, activity=activity
        )

    def _answer(self, op: int, w: list[int]) -> int:
        """The reply to request ``op``; an error names the C line that made it."""
        a = w[R_ARGS : R_ARGS + 6]
        try:
            handler = _HANDLERS.get(op)
            if handler is None or handler.spu != (self.kind == KIND_SPU_MAIN):
                self._misuse(op, handler)
            if self.program.machine._dma_checker is not None:  # --check-dma names the C line
                self.program.c_site = f"{self.proc.file()}:{w[R_LINE]}" if w[R_LINE] else None
            return int(handler.fn(self, a)) & U64  # type: ignore[union-attr]
        except CellsimError as e:
            if w[R_LINE]:
                where = f"{self.proc.file()}:{w[R_LINE]}"
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
        proc = self.proc
        if proc.seg_start <= x <= proc.seg_start + proc.seg_size:
            return self.ls_base + (x - proc.seg_start)
        if x < LS_BYTES:
            return x
        if SPU_LS_AT <= x < SPU_LS_AT + LS_BYTES:  # the stack, or any pointer into the local store
            return x - SPU_LS_AT
        raise MfcError(
            f"{what} 0x{x:x} is not in the local store: DMA buffers are statics (global or "
            "static variables, e.g. `static char buf[N] __attribute__((aligned(128)))`) or "
            "variables on the SPU program's stack; the host heap (malloc) is not local store",
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
        if a[0] & _ISOLATE_FLAGS:
            raise UsageError(
                f"spe_context_create: flags 0x{a[0]:x} ask for an isolated SPE (SPE_ISOLATE or "
                "SPE_ISOLATE_EMULATE), which cellsim does not model"
            )
        ctx = ppe.spe_context_create(a[0])
        self.env.contexts[ctx.spe] = ctx
        return ctx.spe

    def ctx_destroy(self, a: list[int]) -> int:
        ppe.spe_context_destroy(self.context(a[0]))
        return 0

    def _image(self) -> str | None:
        """The SPU program the name in the payload reaches (see :mod:`cellsim.c.names`), or None."""
        name = self.proc.payload(256).split(b"\0", 1)[0].decode(errors="replace")
        app = self.env.app
        hits = names.resolve(name, app.spu) if app is not None else []
        return hits[0] if len(hits) == 1 else None

    def image_open(self, a: list[int]) -> int:
        return int(self._image() is not None)

    def program_load(self, a: list[int]) -> int:
        program = self._image()
        app = self.env.app
        if program is None or app is None:
            name = self.proc.payload(256).split(b"\0", 1)[0].decode(errors="replace")
            known = ", ".join(sorted(app.spu)) if app else "none"
            raise UsageError(f"spe_program_load: no SPU program {name!r} in this app (it has: {known})")
        ppe.spe_program_load(self.context(a[0]), CProgram(app.spu[program]))
        return 0

    def ctx_run(self, a: list[int]) -> int:
        ctx = self.context(a[0])
        user_regs = bool(a[3])
        if user_regs:  # r3-r5 are the program's three arguments, whatever their values
            regs = (a[4], a[1], a[2])
            argp = envp = 0
        else:
            regs = None
            argp, envp = self.env.ea(a[1]), self.env.ea(a[2])
            for name, ptr in (("argp", argp), ("envp", envp)):
                if not self.program.machine.is_mapped(ptr) and ptr >= 1 << 32:
                    raise UsageError(
                        f"spe_context_run: {name} 0x{ptr:x} is a host pointer outside simulated memory: "
                        "give the SPE memory from malloc/posix_memalign, a static or a PPU stack variable"
                    )
        program = ctx.program
        if program is not None:
            ctx.program = _Run(program, self.env, ctx.spe, regs)
        try:
            stop = ppe.spe_context_run(ctx, argp=argp, envp=envp)
        finally:
            ctx.program = program
        return _encode_stop(stop)

    def stop_info(self, a: list[int]) -> int:
        stop = self.env.stops.get(self.context(a[0]).spe)
        return U64 if stop is None else _encode_stop(stop)

    def in_mbox_write(self, a: list[int]) -> int:
        spe, count, behavior = a[0], a[2], a[3]
        values = np.frombuffer(self.proc.payload(4 * count), dtype=np.uint32).tolist() if count else []
        return ppe.spe_in_mbox_write(self.context(spe), values, behavior)

    def out_mbox_read(self, a: list[int]) -> int:
        spe, count, interrupt, behavior = a[0], a[2], a[3], a[4]
        ctx = self.context(spe)
        if interrupt:
            got = ppe.spe_out_intr_mbox_read(ctx, count, behavior)
        else:
            got = ppe.spe_out_mbox_read(ctx, count)
        self.proc.set_payload(np.array(got, dtype=np.uint32).tobytes())
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
        env, proc = self.env, self.proc

        def body() -> int:
            me = _current("pthread_create")
            return CThread(env, proc, me, KIND_PTHREAD, fn, arg).run()

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
        floor = self.env.stacks_floor
        if int(buf) + size > floor:
            raise UsageError(
                f"malloc({size}): main memory exhausted: the allocation would pass 0x{floor:x}, where the "
                f"top {(self.env.memory_hi - self.env.memory_lo - floor) >> 20} MB of main memory hold the "
                "PPE threads' stacks"
            )
        return self.env.host(int(buf))

    def time(self, a: list[int]) -> int:
        """``__mftb()``: the PPU's timebase, simulated (ticks of ``timebase_hz`` since the run began)."""
        m = self.program.machine
        hz = int(m.facts.timebase_hz)
        if a[0] == rq.TIME_TIMEBASE_HZ:
            return hz
        if a[0] == rq.TIME_CORE_HZ:
            return int(m.core_hz)
        return m.cycles * hz // int(m.core_hz)

    def ppe_compute(self, a: list[int]) -> int:
        ppe.compute(a[0])
        return 0

    def mfcio(self, a: list[int]) -> int:
        spe, opcode, lsa, ea, size, tag = a[:6]
        ctx = self.context(spe)
        call = _PROXY_DMAS.get(opcode)
        if call is None:
            raise UsageError(f"spe_mfcio_*: MFC opcode 0x{opcode:x} is not a proxy get or put")
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
        timeout = a[2] - (1 << 32) if a[2] & 0x80000000 else a[2]
        got = ppe.wait_events(self.env.handlers[a[0]], a[1], timeout)
        return sum(bit << (4 * spe) for spe, bit in got)


class _Run:
    """The program of one ``spe_context_run``: with ``SPE_RUN_USER_REGS`` it gets
    r3-r5 as its three arguments; its stop is recorded for ``spe_stop_info_read``
    the moment it stops (before the stop event wakes anyone)."""

    def __init__(self, program: Any, env: CEnv, spe: int, regs: tuple[int, int, int] | None) -> None:
        self.program = program
        self.env = env
        self.spe = spe
        self.regs = regs
        self.__name__ = getattr(program, "__name__", "program")

    def __call__(self, speid: int, argp: int, envp: int) -> int:
        args = self.regs if self.regs is not None else (speid, argp, envp)
        code = int(self.program(*args) or 0)
        m = self.env.machine
        crash = m._spe_crashes.get(_current("spe_context_run").tid)
        if crash is not None:
            reason, detail, err = stop_of(crash)
            self.env.stops[self.spe] = ppe.StopInfo(reason, detail, err, crash)
        else:
            self.env.stops[self.spe] = ppe.StopInfo("exit", code)
        return code


def _encode_stop(stop: ppe.StopInfo) -> int:
    """A stop as the C runtime decodes it (``decode_stop`` in ppu_runtime.c)."""
    if stop.stop_reason == "exit":
        return stop.exit_code & 0xFFFFFFFF
    # libspe2: -1, errno and the stop info
    reason = _STOP_REASONS[stop.stop_reason]
    return 1 << 63 | reason << 40 | stop.errno << 32 | (stop.exit_code & 0xFFFFFFFF)


_PROXY_DMAS: dict[int, Callable[[ppe.SpeContext, int, int, int, int], None]] = {
    0x40: ppe.spe_mfcio_get,
    0x41: ppe.spe_mfcio_getb,
    0x42: ppe.spe_mfcio_getf,
    0x20: ppe.spe_mfcio_put,
    0x21: ppe.spe_mfcio_putb,
    0x22: ppe.spe_mfcio_putf,
}
_ISOLATE_FLAGS = 0x80 | 0x100  # libspe2.h's SPE_ISOLATE, SPE_ISOLATE_EMULATE

# spe_context_run's stop reasons (libspe2.h's SPE_*)
_STOP_REASONS = {"exit": 1, "runtime_error": 3, "runtime_exception": 4, "runtime_fatal": 5}

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
    return "; ".join(f"thread {tid} at {where}" for tid, where in sorted(env.calls.items()))


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
        (rq.IMAGE_OPEN, "spe_image_open", CThread.image_open, False),
        (rq.PROGRAM_LOAD, "spe_program_load", CThread.program_load, False),
        (rq.STOP_INFO, "spe_stop_info_read", CThread.stop_info, False),
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
    long argp, unsigned long long envp)`` runs on the SPE, in a process of its own.

    ``CProgram("app_dir", "NAME")`` takes SPU program ``NAME`` of an app;
    ``CProgram("prog.so")`` an image built with ``cellsim cc``.

    If the program dies (a fatal signal: a NULL write, ``abort()``...), the SPE
    stops: under ``spe_context_run`` the PPE program gets the error as from
    libspe2 (``StopInfo.stop_reason`` ``"runtime_exception"``, ``"runtime_error"``
    or ``"runtime_fatal"``, with ``.crash``); a program started by
    :meth:`Machine.load` stops the run with ``ProgramCrashError``. Either way
    the error names the SPE, the signal and the C line. ``_exit(n)`` ends the
    program with exit code ``n``, as ``exit(n)`` does."""

    def __init__(self, image: Image | str | Path, name: str | None = None) -> None:
        from .app import load_spu

        self.image = image if isinstance(image, Image) else load_spu(image, name)
        self.__name__ = self.image.name

    def __call__(self, speid: int, argp: int, envp: int) -> int:
        p = _current(f"the C program {self.image.name}")
        assert p.spe is not None
        env = env_of(p.machine)
        m = p.machine
        who = f"SPE {p.spe}"
        size = m.facts.ls_bytes
        fd = m._engine.share_local_store(p.spe)
        proc = CProcess(m, self.image.path, self.image.name, [(fd, SPU_LS_AT, size)], who)
        try:
            thread = CThread(env, proc, p, KIND_SPU_MAIN, proc.main_fn, speid, argp, envp)
            # the stack is the top of the local store, below it the program's data
            p.ls_top = min(p.ls_top, size - SPU_STACK_BYTES)
            thread.stack = (SPU_LS_AT + size - SPU_STACK_BYTES, SPU_STACK_BYTES)
            self._setup(thread, fd, size)
            code = thread.run()
        except ProcessEnded as ended:
            report = ended.report
            if report.signal is None:  # _exit(n): the program's exit, as exit(n)
                return (report.exit_status or 0) & 0xFFFFFFFF
            crash = Crash(who, self.image.name, report)
            env.crashes.append(crash)
            if p.tid in m._context_runs:  # spe_context_run reports it to the PPE program
                m._spe_crashes[p.tid] = crash
                return 0
            raise _crash_error(crash) from None
        finally:
            proc.close()
        return code & 0xFFFFFFFF

    def _setup(self, t: CThread, fd: int, size: int) -> None:
        """The program's statics become local-store bytes: where the image was
        loaded, in its local store's window (so ``(unsigned int)&x`` is the
        local-store address); else (a loader that ignored the link address,
        a larger reserved area) copied past the reserved part."""
        p, proc = t.program, t.proc
        reserved = ls_page(p.machine.facts.ls_reserved_bytes)
        page = (proc.seg_start - SPU_LS_AT) // PAGE * PAGE
        in_place = reserved <= page < size
        if not in_place:
            page = reserved
        t.ls_base = page + proc.seg_start % PAGE
        end = t.ls_base + proc.seg_size
        mapped_end = -(-end // PAGE) * PAGE
        if end > p.ls_top or mapped_end > size:
            proc.close()
            raise MfcError(
                f"the C program {self.image.name}'s static data ({proc.seg_size} bytes"
                + (", after its code" if in_place else "")
                + f") does not fit in the local store of SPE {p.spe}: it would end at 0x{end:x}, past "
                f"0x{p.ls_top:x} where its stack begins ({SPU_STACK_BYTES // 1024} KB at the top of the "
                "local store)",
                kind="ls_overflow",
                spe=p.spe,
                command=f"load {self.image.name}",
            )
        # the heap: from a page past the data (kept for Python helpers, cellsim.sync) to the stack
        heap = (mapped_end + PAGE, p.ls_top)
        if in_place and heap[0] < heap[1]:
            proc.setup(fd, page, SPU_LS_AT + page, (SPU_LS_AT + heap[0], SPU_LS_AT + heap[1]))
            p.ls_top = heap[0]
        else:  # malloc is the host's (not DMA-able)
            proc.setup(fd, page, SPU_LS_AT + page)
        p.ls_next = max(p.ls_next, end)  # Python helpers (cellsim.sync) allocate past it

    def __repr__(self) -> str:
        return f"CProgram({self.image.name!r})"


def _crash_error(crash: Crash) -> ProgramCrashError:
    r = crash.report
    return ProgramCrashError(
        crash.describe(),
        who=crash.who,
        program=crash.program,
        signal=r.signal_name or None,
        location=r.location,
        last_call=r.last_call,
        exit_status=r.exit_status,
    )


def stop_of(crash: Crash) -> tuple[str, int, int]:
    """libspe2's view of a crashed SPE program: stop reason, detail, errno."""
    sig = crash.report.signal
    if sig in (signal.SIGSEGV, signal.SIGBUS):
        return "runtime_exception", SPE_DMA_SEGMENTATION, errno.EFAULT
    if sig == signal.SIGILL:
        return "runtime_error", SPE_SPU_INVALID_INSTR, errno.EIO
    if sig in (signal.SIGABRT, signal.SIGFPE, signal.SIGTRAP):
        return "runtime_error", SPE_SPU_HALT, errno.EIO
    return "runtime_fatal", errno.EIO, errno.EIO


SPE_SPU_HALT = 0x04
SPE_SPU_INVALID_INSTR = 0x20
SPE_DMA_SEGMENTATION = 0x20


def run_ppu_main(env: CEnv, image: Image, argv: list[str]) -> int:
    """The PPU program's ``main(argc, argv)`` on the calling PPE thread, in a process of its own."""
    p = _current("the PPU program")
    m = p.machine
    mem_bytes = -(-m.facts.memory_bytes // PAGE) * PAGE
    mem_fd = m._engine.share_memory()
    maps = [(mem_fd, MEMORY_BASE, mem_bytes), *share_local_stores(m)]
    proc = env.ppu = CProcess(m, image.path, image.name, maps, "the PPU program")
    page_ea = int(m.alloc(proc.seg_size + PAGE, PAGE))
    env.ppu_data_ea = page_ea + proc.seg_start % PAGE
    proc.setup(mem_fd, page_ea, env.host(page_ea))
    # argv travels in the payload (the process copies it to its own heap)
    args = b"".join(s.encode() + b"\0" for s in argv)
    if len(args) > 4096:
        proc.close()
        raise UsageError(f"the PPU program's arguments are {len(args)} bytes: at most 4096")
    proc.set_payload(args)
    try:
        return CThread(env, proc, p, KIND_PPU_MAIN, proc.main_fn, len(argv)).run()
    except ProcessEnded as ended:
        crash = Crash("the PPU program", image.name, ended.report)
        env.crashes.append(crash)
        raise _crash_error(crash) from None


__all__ = ["CEnv", "CProgram", "CThread", "ComputeMode", "Crash", "env_of", "run_ppu_main", "stop_of"]
