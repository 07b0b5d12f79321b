"""The PPE side of the Cell SDK (libspe2), for Python PPE programs.

A PPE program is a plain function run by ``Machine.run(main, *args)``; like
SPE programs it blocks in simulated time. It creates SPE contexts, loads
programs into them and runs them — ``spe_context_run`` blocks the calling PPE
thread until the SPE program stops, so starting several SPEs takes several
threads, as with pthreads:

>>> from cellsim import Machine
>>> from cellsim.ppe import pthread_create, pthread_join
>>> from cellsim.ppe import spe_context_create, spe_context_run, spe_program_load
>>> def spe_main(speid, argp, envp):
...     return argp * 2
>>> def ppe_main():
...     def run_one(i):
...         ctx = spe_context_create()
...         spe_program_load(ctx, spe_main)
...         return spe_context_run(ctx, argp=i).exit_code
...     threads = [pthread_create(run_one, i) for i in range(4)]
...     return [pthread_join(t) for t in threads]
>>> Machine("qs20").run(ppe_main).value
[0, 2, 4, 6]

================================  =====================================================
libspe2 / PPE call                 simulated as
================================  =====================================================
``spe_context_create``             takes the next logical SPE
``spe_context_run``                the program starts ``ppe.context_run_ns`` later; the
                                   thread waits for its end
``spe_in_mbox_write``              a 4-byte store to the SPE's problem state over the EIB
``spe_out_mbox_read``              a 4-byte load from it (waits for a message if blocking)
``spe_signal_write``               a 4-byte store to a signal register
``spe_mfcio_get/put[b|f]``        a command in the SPE's 8-entry proxy queue
``spe_mfcio_tag_status_read``      the proxy tag groups
``load`` / ``store``               through the PPE's L1 and L2 (main memory), or a bus
                                   request for local stores and registers
``access_loop``                    a loop of loads, stores or copies through the caches,
                                   simulated access by access in the engine
``lwarx`` / ``stwcx``              load-reserve / store-conditional, performed at the L2
``pthread_create/join``            PPE threads (greenlets in simulated time)
================================  =====================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from greenlet import getcurrent

from . import _engine
from ._checks import integer, mfc_args, word
from .exceptions import NotInProgramError, UsageError
from .machine import Program
from .problem_state import (
    AREA_OFFSETS,
    SIG_NOTIFY_1,
    SIG_NOTIFY_2,
    SPE_CONTROL_AREA,
    SPE_MFC_COMMAND_AREA,
    SPE_MSSYNC_AREA,
    SPE_SIG_NOTIFY_1_AREA,
    SPE_SIG_NOTIFY_2_AREA,
    SPU_IN_MBOX,
    SPU_MBOX_STAT,
    SPU_OUT_MBOX,
)

__all__ = [
    "SIG_NOTIFY_1",
    "SIG_NOTIFY_2",
    "SPE_AFFINITY_MEMORY",
    "SPE_CFG_SIGNOTIFY1_OR",
    "SPE_CFG_SIGNOTIFY2_OR",
    "SPE_CONTROL_AREA",
    "SPE_EVENT_ALL_EVENTS",
    "SPE_EVENT_IN_MBOX",
    "SPE_EVENT_OUT_INTR_MBOX",
    "SPE_EVENT_SPE_STOPPED",
    "SPE_EVENT_TAG_GROUP",
    "SPE_MBOX_ALL_BLOCKING",
    "SPE_MBOX_ANY_BLOCKING",
    "SPE_MBOX_ANY_NONBLOCKING",
    "SPE_MFC_COMMAND_AREA",
    "SPE_MSSYNC_AREA",
    "SPE_SIG_NOTIFY_1_AREA",
    "SPE_SIG_NOTIFY_2_AREA",
    "SPE_SIG_NOTIFY_REG_1",
    "SPE_SIG_NOTIFY_REG_2",
    "SPE_TAG_ALL",
    "SPE_TAG_ANY",
    "SPE_TAG_IMMEDIATE",
    "SPU_IN_MBOX",
    "SPU_MBOX_STAT",
    "SPU_OUT_MBOX",
    "SpeContext",
    "SpeEventHandler",
    "SpeEventUnit",
    "SpeGang",
    "StopInfo",
    "access_loop",
    "compute",
    "load",
    "lwarx",
    "pthread_create",
    "pthread_join",
    "spe_context_create",
    "spe_context_destroy",
    "spe_context_run",
    "spe_event_handler_create",
    "spe_event_handler_deregister",
    "spe_event_handler_destroy",
    "spe_event_handler_register",
    "spe_event_wait",
    "spe_gang_context_create",
    "spe_in_mbox_status",
    "spe_in_mbox_write",
    "spe_ls_area_get",
    "spe_mfcio_get",
    "spe_mfcio_getb",
    "spe_mfcio_getf",
    "spe_mfcio_put",
    "spe_mfcio_putb",
    "spe_mfcio_putf",
    "spe_mfcio_tag_status_read",
    "spe_out_intr_mbox_read",
    "spe_out_intr_mbox_status",
    "spe_out_mbox_read",
    "spe_out_mbox_status",
    "spe_out_mbox_wait",
    "spe_program_load",
    "spe_ps_area_get",
    "spe_signal_write",
    "store",
    "stwcx",
]

SPE_CFG_SIGNOTIFY1_OR = 0x10
SPE_CFG_SIGNOTIFY2_OR = 0x20
SPE_MBOX_ALL_BLOCKING = 1
SPE_MBOX_ANY_BLOCKING = 2
SPE_MBOX_ANY_NONBLOCKING = 3
SPE_SIG_NOTIFY_REG_1 = 1
SPE_SIG_NOTIFY_REG_2 = 2
SPE_TAG_ALL = 1
SPE_TAG_ANY = 2
SPE_TAG_IMMEDIATE = 3
SPE_AFFINITY_MEMORY = 0x1
# libspe2 events (spe_event_handler_*): docs/c-programs.md says which are modelled.
SPE_EVENT_OUT_INTR_MBOX = 0x1
SPE_EVENT_IN_MBOX = 0x2
SPE_EVENT_TAG_GROUP = 0x4
SPE_EVENT_SPE_STOPPED = 0x8
SPE_EVENT_ALL_EVENTS = 0xF
_MODELLED_EVENTS = SPE_EVENT_OUT_INTR_MBOX | SPE_EVENT_IN_MBOX | SPE_EVENT_SPE_STOPPED
"""Gang flag: place the gang's SPEs nearest the memory controller, in the affinity chain."""

_AREA_NAMES = {
    "SPE_MSSYNC_AREA": SPE_MSSYNC_AREA,
    "SPE_MFC_COMMAND_AREA": SPE_MFC_COMMAND_AREA,
    "SPE_CONTROL_AREA": SPE_CONTROL_AREA,
    "SPE_SIG_NOTIFY_1_AREA": SPE_SIG_NOTIFY_1_AREA,
    "SPE_SIG_NOTIFY_2_AREA": SPE_SIG_NOTIFY_2_AREA,
}

_MODE = {SPE_TAG_IMMEDIATE: 0, SPE_TAG_ANY: 1, SPE_TAG_ALL: 2}


def _ppe(call: str) -> Program:
    g = getcurrent()
    if not isinstance(g, Program) or g.spe is not None:
        raise NotInProgramError(f"{call} must be called from a PPE program run by Machine.run(main)")
    return g


@dataclass(frozen=True)
class StopInfo:
    """Why an SPE program stopped (libspe2's ``spe_stop_info_t``).

    ``stop_reason`` is ``"exit"`` (``exit_code`` is the program's), or, for a C
    program whose process died, ``"runtime_exception"`` (SIGSEGV, SIGBUS),
    ``"runtime_error"`` (SIGILL, SIGABRT, SIGFPE, SIGTRAP) or ``"runtime_fatal"``
    (any other signal): then ``exit_code`` is the libspe2 detail
    (``SPE_DMA_SEGMENTATION``, ``SPE_SPU_INVALID_INSTR``, ``SPE_SPU_HALT``),
    ``errno`` what libspe2's ``spe_context_run`` sets when it returns -1, and
    ``crash`` says what happened (``.describe()``)."""

    stop_reason: str
    exit_code: int
    errno: int = 0
    crash: Any = None


@dataclass(eq=False)
class SpeGang:
    """A gang of contexts (``spe_gang_context_create``)."""

    flags: int


@dataclass(eq=False)
class SpeContext:
    """An SPE context: a logical SPE and the program loaded into it."""

    spe: int
    flags: int = 0
    gang: SpeGang | None = None
    program: Any = None
    destroyed: bool = False
    # spe_context_run calls so far: a stop event is reported once per run
    runs: int = 0


def spe_gang_context_create(flags: int = 0) -> SpeGang:
    """A gang; with ``SPE_AFFINITY_MEMORY`` its SPEs are placed nearest the memory
    controller (the affinity chain), which must happen before any SPE runs."""
    p = _ppe("spe_gang_context_create")
    if flags & SPE_AFFINITY_MEMORY:
        p.machine.place_on_affinity_chain()
    return SpeGang(flags)


def spe_context_create(flags: int = 0, gang: SpeGang | None = None) -> SpeContext:
    """Creates a context on the next free logical SPE."""
    p = _ppe("spe_context_create")
    spe = p.machine.new_context(
        signal_or=(bool(flags & SPE_CFG_SIGNOTIFY1_OR), bool(flags & SPE_CFG_SIGNOTIFY2_OR))
    )
    return SpeContext(spe, flags, gang)


def spe_program_load(ctx: SpeContext, program: Callable[..., Any] | Any) -> None:
    """Loads an SPE program: a Python function ``program(speid, argp, envp)``
    or a native :class:`cellsim.kernels.Kernel`."""
    _ppe("spe_program_load")
    ctx.program = program


def spe_context_run(
    ctx: SpeContext, entry: int = 0, runflags: int = 0, argp: int = 0, envp: int = 0
) -> StopInfo:
    """Runs the loaded program on the context's SPE; this PPE thread waits
    until it stops. The program starts ``ppe.context_run_ns`` after the call."""
    p = _ppe("spe_context_run")
    if ctx.program is None:
        raise UsageError(f"no program loaded in the context of SPE {ctx.spe} (call spe_program_load)")
    if ctx.destroyed:
        raise UsageError(f"the context of SPE {ctx.spe} was destroyed")
    m = p.machine
    for name, ptr in (("argp", argp), ("envp", envp)):
        if not m.is_mapped(ptr):
            raise UsageError(
                f"{name} 0x{int(ptr):x} is outside main memory ({m.facts.memory_bytes} bytes) and every "
                "local-store mapping: pass an address from Machine.alloc (or a small integer)"
            )
    tid = m.start_spe(ctx.spe, ctx.program, argp=argp, envp=envp, delay=m.context_run_cycles)
    ctx.runs += 1
    m._context_runs.add(tid)
    code = p.call(p.engine.join, tid)
    m._context_runs.discard(tid)
    crash = m._spe_crashes.pop(tid, None)
    if crash is not None:
        from .c.threads import stop_of

        reason, detail, err = stop_of(crash)
        return StopInfo(reason, detail, err, crash)
    return StopInfo("exit", int(code))


@dataclass(eq=False)
class SpeEventUnit:
    """libspe2's ``spe_event_unit_t``: the events of one context (``SPE_EVENT_*`` bits)
    and the user's data; ``spe_event_wait`` returns units with the event that occurred."""

    events: int
    spe: SpeContext
    data: Any = None


@dataclass(eq=False)
class SpeEventHandler:
    """libspe2's event handler: the contexts and events registered with it."""

    units: dict[int, SpeEventUnit]
    # per SPE, the run whose stop was already reported
    stops_seen: dict[int, int]
    destroyed: bool = False


def spe_event_handler_create() -> SpeEventHandler:
    """A new event handler (``spe_event_handler_create``)."""
    _ppe("spe_event_handler_create")
    return SpeEventHandler({}, {})


def _handler(call: str, handler: SpeEventHandler) -> SpeEventHandler:
    if not isinstance(handler, SpeEventHandler) or handler.destroyed:
        raise UsageError(f"{call}: {handler!r} is not a live handler from spe_event_handler_create")
    return handler


def spe_event_handler_register(handler: SpeEventHandler, event: SpeEventUnit) -> None:
    """Registers ``event.events`` of context ``event.spe`` with the handler. The modelled
    events are ``SPE_EVENT_OUT_INTR_MBOX`` (a message is there), ``SPE_EVENT_IN_MBOX``
    (room to write) and ``SPE_EVENT_SPE_STOPPED`` (the program ended)."""
    _ppe("spe_event_handler_register")
    h = _handler("spe_event_handler_register", handler)
    events = integer(event.events, "spe_event_handler_register: events", 0, SPE_EVENT_ALL_EVENTS + 1)
    if events & ~_MODELLED_EVENTS:
        raise UsageError(
            f"spe_event_handler_register: events 0x{events:x} include SPE_EVENT_TAG_GROUP (0x4), "
            "which this model does not raise (proxy tag groups: use spe_mfcio_tag_status_read)"
        )
    h.units[event.spe.spe] = event


def spe_event_handler_deregister(handler: SpeEventHandler, event: SpeEventUnit) -> None:
    """Removes the context of ``event`` from the handler."""
    _ppe("spe_event_handler_deregister")
    h = _handler("spe_event_handler_deregister", handler)
    if h.units.pop(event.spe.spe, None) is None:
        raise UsageError(f"spe_event_handler_deregister: SPE {event.spe.spe} is not registered")


def spe_event_handler_destroy(handler: SpeEventHandler) -> None:
    """Destroys the handler."""
    _ppe("spe_event_handler_destroy")
    _handler("spe_event_handler_destroy", handler).destroyed = True


def spe_event_wait(handler: SpeEventHandler, max_events: int = 1, timeout: int = -1) -> list[SpeEventUnit]:
    """Waits for registered events (``timeout`` -1), looks once (0) or waits at most
    ``timeout`` ms of simulated time (looking every ``EVENT_POLL_NS``); returns at most
    ``max_events`` units, each with the one event that occurred, in SPE order. A stop is
    reported once per ``spe_context_run``; mailbox events hold while their condition
    does. Costs one MMIO access when an event is already there; an event that comes
    while waiting wakes the thread at once (the OS's interrupt path is not modelled)."""
    h = _handler("spe_event_wait", handler)
    return [
        SpeEventUnit(bit, h.units[spe].spe, h.units[spe].data)
        for spe, bit in wait_events(h, max_events, timeout)
    ]


def wait_events(handler: SpeEventHandler, max_events: int, timeout: int) -> list[tuple[int, int]]:
    """``spe_event_wait`` as (logical SPE, ``SPE_EVENT_*`` bit) pairs (for the C runtime)."""
    p = _ppe("spe_event_wait")
    h = _handler("spe_event_wait", handler)
    max_events = integer(max_events, "spe_event_wait: max_events", 1, 1 << 31)
    timeout = integer(timeout, "spe_event_wait: timeout (ms; -1 waits for ever)", -1, 1 << 31)
    masks = 0
    for spe, unit in h.units.items():
        events = unit.events
        if h.stops_seen.get(spe) == unit.spe.runs:
            events &= ~SPE_EVENT_SPE_STOPPED
        masks |= events << (4 * spe)
    if masks == 0:
        if timeout == 0:
            return []
        raise UsageError("spe_event_wait: nothing registered could ever occur (register events first)")
    got = p.call(p.engine.ppe_event_wait, masks, timeout == -1)
    if not got and timeout > 0:
        got = _wait_until(p, masks, timeout)
    out: list[tuple[int, int]] = []
    for spe in sorted(h.units):
        for bit in (SPE_EVENT_OUT_INTR_MBOX, SPE_EVENT_IN_MBOX, SPE_EVENT_SPE_STOPPED):
            if (got >> (4 * spe)) & bit and len(out) < max_events:
                if bit == SPE_EVENT_SPE_STOPPED:
                    h.stops_seen[spe] = h.units[spe].spe.runs
                out.append((spe, bit))
    return out


EVENT_POLL_NS = 1000
"""A wait with a timeout looks for its events this often (simulated ns), or
``EVENT_POLLS`` times over a longer wait (so a long wait costs the host little)."""
EVENT_POLLS = 10_000


def _wait_until(p: Program, masks: int, timeout_ms: int) -> int:
    """``spe_event_wait`` with a timeout: the events, or 0 once ``timeout_ms``
    of simulated time has passed. It looks every ``EVENT_POLL_NS`` (the
    engine's wait has no deadline), so an event is seen up to that late."""
    m = p.machine
    timeout = m.ns_to_cycles(timeout_ms * 1e6)
    deadline = p.engine_now() + timeout
    step = max(1, m.ns_to_cycles(EVENT_POLL_NS), timeout // EVENT_POLLS)
    while (left := deadline - p.engine_now()) > 0:
        p.call(p.engine.compute, min(step, left))
        got = int(p.call(p.engine.ppe_event_wait, masks, False))
        if got:
            return got
    return 0


def spe_context_destroy(ctx: SpeContext) -> None:
    """Destroys a context."""
    _ppe("spe_context_destroy")
    ctx.destroyed = True


def spe_ls_area_get(ctx: SpeContext) -> int:
    """The effective address at which the SPE's local store is mapped."""
    return int(_engine.ls_ea(ctx.spe))


def spe_ps_area_get(ctx: SpeContext, area: int = SPE_MSSYNC_AREA) -> int:
    """The effective address of one of the SPE's problem-state areas
    (libspe2's ``SPE_MSSYNC_AREA``, the start of the whole area, by default;
    ``SPE_MFC_COMMAND_AREA``, ``SPE_CONTROL_AREA``, ``SPE_SIG_NOTIFY_1_AREA``,
    ``SPE_SIG_NOTIFY_2_AREA``). The registers' offsets from the start are in
    :mod:`cellsim.problem_state` (``SPU_IN_MBOX``, ``SIG_NOTIFY_1``...)."""
    if isinstance(area, bool) or not isinstance(area, int) or area not in AREA_OFFSETS:
        names = ", ".join(f"{n} ({v})" for n, v in _AREA_NAMES.items())
        raise UsageError(f"spe_ps_area_get: area {area!r} is not one of libspe2's areas: {names}")
    return int(_engine.ps_ea(ctx.spe)) + AREA_OFFSETS[area]


def spe_in_mbox_write(ctx: SpeContext, data: Sequence[int], behavior: int = SPE_MBOX_ALL_BLOCKING) -> int:
    """Writes messages to the SPE's inbound mailbox; returns how many were written.
    ``SPE_MBOX_ALL_BLOCKING`` waits for room for all of them, ``SPE_MBOX_ANY_BLOCKING``
    for the first, ``SPE_MBOX_ANY_NONBLOCKING`` writes what fits now."""
    p = _ppe("spe_in_mbox_write")
    written = 0
    for i, v in enumerate(data):
        wait = behavior == SPE_MBOX_ALL_BLOCKING or (behavior == SPE_MBOX_ANY_BLOCKING and i == 0)
        if not p.call(p.engine.ppe_write_mbox, ctx.spe, word(v, f"spe_in_mbox_write: data[{i}]"), wait):
            break
        written += 1
    return written


def spe_in_mbox_status(ctx: SpeContext) -> int:
    """Free entries in the SPE's inbound mailbox (a register read over the EIB)."""
    p = _ppe("spe_in_mbox_status")
    return (p.call(p.engine.ppe_mbox_status, ctx.spe) >> 8) & 0xFF


def spe_out_mbox_status(ctx: SpeContext) -> int:
    """Messages in the SPE's outbound mailbox (0 or 1)."""
    p = _ppe("spe_out_mbox_status")
    return p.call(p.engine.ppe_mbox_status, ctx.spe) & 0xFF


def spe_out_intr_mbox_status(ctx: SpeContext) -> int:
    """Messages in the SPE's outbound-interrupt mailbox (0 or 1)."""
    p = _ppe("spe_out_intr_mbox_status")
    return (p.call(p.engine.ppe_mbox_status, ctx.spe) >> 16) & 0xFF


def spe_out_mbox_read(ctx: SpeContext, count: int = 1) -> list[int]:
    """Reads up to ``count`` messages from the SPE's outbound mailbox without
    waiting (libspe2's semantics: it reads the mailbox status register, then
    the mailbox): an empty list when there is none."""
    p = _ppe("spe_out_mbox_read")
    out: list[int] = []
    for _ in range(count):
        if p.call(p.engine.ppe_mbox_status, ctx.spe) & 0xFF == 0:
            break
        out.append(int(p.call(p.engine.ppe_read_mbox, ctx.spe, False, True)))
    return out


def spe_out_intr_mbox_read(
    ctx: SpeContext, count: int = 1, behavior: int = SPE_MBOX_ALL_BLOCKING
) -> list[int]:
    """Reads messages from the outbound-interrupt mailbox; blocking by default
    (the PPE waits for the interrupt)."""
    p = _ppe("spe_out_intr_mbox_read")
    out = []
    for i in range(count):
        wait = behavior == SPE_MBOX_ALL_BLOCKING or (behavior == SPE_MBOX_ANY_BLOCKING and i == 0)
        if not wait and (p.call(p.engine.ppe_mbox_status, ctx.spe) >> 16) & 0xFF == 0:
            break
        out.append(int(p.call(p.engine.ppe_read_mbox, ctx.spe, True, True)))
    return out


def spe_out_mbox_wait(ctx: SpeContext) -> int:
    """Waits for one message in the outbound mailbox (a polling loop, simulated
    without its polls) and returns it. Not libspe2; a convenience."""
    p = _ppe("spe_out_mbox_wait")
    return int(p.call(p.engine.ppe_read_mbox, ctx.spe, False, True))


def spe_signal_write(ctx: SpeContext, signal_reg: int, data: int) -> None:
    """Writes signal-notification register ``SPE_SIG_NOTIFY_REG_1`` or ``_2``."""
    p = _ppe("spe_signal_write")
    p.call(
        p.engine.ppe_signal,
        ctx.spe,
        integer(signal_reg, "spe_signal_write: signal_reg", 0, 256),
        word(data, "spe_signal_write: data"),
    )


def _proxy_dma(call: str, opcode: int, ctx: SpeContext, lsa: int, ea: int, size: int, tag: int) -> None:
    """A proxy command (``opcode``) in the SPE's proxy queue."""
    p = _ppe(call)
    args = mfc_args(call, ctx.spe, p.engine_now, ls=lsa, ea=ea, size=size, tag=tag)
    p.call(p.engine.proxy_mfc, ctx.spe, opcode, *args)


def spe_mfcio_get(
    ctx: SpeContext, lsa: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0
) -> None:
    """A proxy DMA from ``ea`` into the SPE's local store at ``lsa``."""
    _proxy_dma("spe_mfcio_get", 0x40, ctx, lsa, ea, size, tag)


def spe_mfcio_getb(
    ctx: SpeContext, lsa: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0
) -> None:
    """:func:`spe_mfcio_get` with a barrier: after every earlier command of its tag group."""
    _proxy_dma("spe_mfcio_getb", 0x41, ctx, lsa, ea, size, tag)


def spe_mfcio_getf(
    ctx: SpeContext, lsa: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0
) -> None:
    """:func:`spe_mfcio_get` with a fence: after the earlier commands of its tag group issued before it."""
    _proxy_dma("spe_mfcio_getf", 0x42, ctx, lsa, ea, size, tag)


def spe_mfcio_put(
    ctx: SpeContext, lsa: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0
) -> None:
    """A proxy DMA from the SPE's local store at ``lsa`` to ``ea``."""
    _proxy_dma("spe_mfcio_put", 0x20, ctx, lsa, ea, size, tag)


def spe_mfcio_putb(
    ctx: SpeContext, lsa: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0
) -> None:
    """:func:`spe_mfcio_put` with a barrier."""
    _proxy_dma("spe_mfcio_putb", 0x21, ctx, lsa, ea, size, tag)


def spe_mfcio_putf(
    ctx: SpeContext, lsa: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0
) -> None:
    """:func:`spe_mfcio_put` with a fence."""
    _proxy_dma("spe_mfcio_putf", 0x22, ctx, lsa, ea, size, tag)


def spe_mfcio_tag_status_read(ctx: SpeContext, mask: int, behavior: int = SPE_TAG_ALL) -> int:
    """The SPE's proxy tag groups: immediately, or waiting for any or all of ``mask``."""
    p = _ppe("spe_mfcio_tag_status_read")
    if behavior not in _MODE:
        raise UsageError(f"behavior {behavior} is not SPE_TAG_ALL, SPE_TAG_ANY or SPE_TAG_IMMEDIATE")
    return p.call(
        p.engine.proxy_tag_status,
        ctx.spe,
        integer(mask, "spe_mfcio_tag_status_read: mask", 0, 1 << 32),
        _MODE[behavior],
    )


def load(ea: int, size: int = 4) -> int:
    """Loads ``size`` (1, 2, 4, 8) big-endian bytes from ``ea``.

    Main memory is read through the PPE's caches: the thread waits for the
    data (an L1 hit, an L2 hit, or a line fetched over the EIB), as a
    program that uses the value at once does. Local stores and registers
    are read over the EIB."""
    p = _ppe("load")
    return p.call(p.engine.ppe_load, *_access("load", ea, size))


def store(ea: int, value: int, size: int = 4) -> None:
    """Stores the low ``size`` bytes of ``value`` at ``ea`` (big-endian).

    Stores are posted: the thread goes on once the store has its place in
    its store queue (main memory) or has left for the EIB (local stores,
    registers)."""
    p = _ppe("store")
    ea, size = _access("store", ea, size)
    p.call(p.engine.ppe_store, ea, size, _value("store", value, size))


def lwarx(ea: int, size: int = 4) -> int:
    """Load and reserve (``lwarx``, or ``ldarx`` with ``size=8``)."""
    p = _ppe("lwarx")
    return p.call(p.engine.ppe_lwarx, *_access("lwarx", ea, size))


def stwcx(ea: int, value: int, size: int = 4) -> bool:
    """Store conditional (``stwcx.``/``stdcx.``): True if the reservation held and it stored."""
    p = _ppe("stwcx")
    ea, size = _access("stwcx", ea, size)
    return bool(p.call(p.engine.ppe_stwcx, ea, size, _value("stwcx", value, size)))


def _access(call: str, ea: Any, size: Any) -> tuple[int, int]:
    """The address and size (the engine checks 1, 2, 4 or 8) of a PPE access."""
    return integer(ea, f"{call}: ea"), integer(size, f"{call}: size", 1, 9)


def _value(call: str, value: Any, size: int) -> int:
    """The low ``size`` bytes of a 64-bit signed or unsigned value (a store
    keeps only its size, as C's narrowing conversion does)."""
    return integer(value, f"{call}: value", -(1 << 63), 1 << 64) & ((1 << (8 * size)) - 1)


_LOOP_OPS = ("load", "store", "copy")


def access_loop(
    op: str,
    buffer: int,
    nbytes: int,
    element: int = 8,
    threads: int = 1,
    *,
    dst: int | None = None,
    stride: int | None = None,
    dependent: bool = False,
    fill: int = 0,
) -> int:
    """A loop of accesses to main memory, simulated access by access in the
    engine (a Python loop of millions of loads would be slow); returns the
    simulated cycles it took.

    ``op`` is ``"load"`` (read ``buffer``), ``"store"`` (write ``fill`` into
    every byte of ``buffer``) or ``"copy"`` (read ``buffer``, write ``dst``;
    loads go ahead of the stores that use them as far as the compiler's
    unrolling allows). ``nbytes`` is the bytes accessed in each buffer,
    ``element`` the bytes per access: 1, 2, 4, 8, or 16 (a VMX register,
    which must be 16-byte aligned). ``threads=2`` splits the loop over the
    PPU's two hardware threads (each takes half). ``stride`` is the distance
    between accesses (default ``element``: a dense traversal). With
    ``dependent=True`` each load's value is used before the next access
    issues — the timing of the same loads made one by one with :func:`load`.

    >>> from cellsim import Machine
    >>> m = Machine("blade21")
    >>> def main():
    ...     buf = m.alloc(16384)
    ...     access_loop("load", buf, 16384, 8)           # warm-up: into the L1
    ...     return access_loop("load", buf, 16384, 8)    # one 8-byte load per cycle
    >>> m.run(main).value
    2048
    """
    p = _ppe("access_loop")
    if op not in _LOOP_OPS:
        raise UsageError(f"access_loop: op {op!r} is not one of {', '.join(_LOOP_OPS)}")
    if op == "copy" and dst is None:
        raise UsageError("access_loop: a copy needs dst=")
    return int(
        p.call(
            p.engine.ppe_access_loop,
            op,
            integer(buffer, "access_loop: buffer"),
            integer(dst or 0, "access_loop: dst"),
            integer(nbytes, "access_loop: nbytes"),
            integer(element, "access_loop: element", 0, 256),
            integer(stride or 0, "access_loop: stride"),
            integer(threads, "access_loop: threads", 0, 256),
            bool(dependent),
            integer(fill, "access_loop: fill", -128, 256) & 0xFF,
        )
    )


def compute(cycles: int) -> None:
    """Spends ``cycles`` PPE cycles computing."""
    p = _ppe("compute")
    p.call(p.engine.compute, integer(cycles, "compute: cycles"))


class PpeThread:
    """A PPE thread started by :func:`pthread_create`."""

    def __init__(self, tid: int) -> None:
        self.tid = tid

    def __repr__(self) -> str:
        return f"PpeThread({self.tid})"


def pthread_create(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> PpeThread:
    """Starts a PPE thread running ``fn(*args, **kwargs)``."""
    p = _ppe("pthread_create")
    return PpeThread(p.machine.start_ppe_thread(fn, *args, **kwargs))


def pthread_join(thread: PpeThread) -> Any:
    """Waits for a PPE thread to end; returns what its function returned."""
    p = _ppe("pthread_join")
    p.call(p.engine.join, thread.tid)
    return p.machine.thread_result(thread.tid)
