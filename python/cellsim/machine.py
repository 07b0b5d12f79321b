"""A simulated Cell machine and the driver that runs Python programs on it.

An SPE program is a plain function that blocks in simulated time: each SPU
call (``mfc_get``, ``mfc_read_tag_status_all``, ``compute``...) goes to the
Rust engine, which runs the chip until some program must continue. Programs
are greenlets; the engine says which one runs next, and the calling program
switches straight to it (or simply continues when it is itself). No
``async``/``await`` in user code, so C programs port line by line.

>>> from cellsim import Machine
>>> from cellsim.spu import ls_alloc, mfc_get, mfc_write_tag_mask, mfc_read_tag_status_all
>>> m = Machine("qs20", seed=1)
>>> src = m.alloc(128)
>>> src.array()[:] = 7
>>> def spe_main(speid, argp, envp):
...     buf = ls_alloc(128, align=128)
...     mfc_get(buf, argp, 128, tag=0)
...     mfc_write_tag_mask(1 << 0)
...     mfc_read_tag_status_all()
...     return int(buf.array()[5])
>>> m.load(0, spe_main, argp=src)
>>> result = m.run()
>>> result.programs[0].exit_code
7
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

import numpy as np
from greenlet import GreenletExit, getcurrent, greenlet

from . import _engine
from . import dmacheck as _dmacheck
from ._checks import integer, number, positive
from .exceptions import UsageError
from .limits import run_deadline, wall_limit
from .spec import MachineFacts, MachineSpec

if TYPE_CHECKING:
    from .trace import TraceStats

__all__ = ["EaBuffer", "LsBuffer", "Machine", "ProgramResult", "RunResult"]

_Next = int | _engine.RunEnd
"""Who runs after a call: a program's thread id, or how the run ended."""
_PUMP_EVERY = 4096
"""Program switches between two writes of a streamed trace."""


class _SizedAddress(int):
    """An address that knows its size and views its bytes: what
    :class:`EaBuffer` and :class:`LsBuffer` share (they differ in the address
    space the ``int`` belongs to, which the type keeps apart)."""

    size: int
    _view: np.ndarray

    def __new__(cls, address: int, size: int, view: np.ndarray) -> Self:
        obj = super().__new__(cls, address)
        obj.size = size
        obj._view = view
        return obj

    def array(self, dtype: Any = np.uint8) -> np.ndarray:
        """A writable numpy view of the buffer as ``dtype``."""
        if _dmacheck.ACTIVE and isinstance(self, LsBuffer):
            _check_ls_view(int(self), self.size)
        return self._view.view(dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(0x{int(self):x}, size={self.size})"


def _check_ls_view(lo: int, size: int) -> None:
    """``--check-dma``: a view of local store taken while a DMA moves it is a race."""
    g = getcurrent()
    checker = getattr(getattr(g, "machine", None), "_dma_checker", None)
    if checker is not None and getattr(g, "spe", None) is not None:
        checker.access(g, lo, lo + size, "LsBuffer.array()")


class EaBuffer(_SizedAddress):
    """An effective address in main memory that knows its size.

    It is an ``int`` (pass it as ``ea`` or ``argp``); ``array(dtype)`` gives a
    writable numpy view of the bytes. Shared data is big-endian on the Cell:
    use dtypes such as ``">u4"`` or ``">f8"`` for values the SPEs read.
    """


class LsBuffer(_SizedAddress):
    """A local-store address that knows its size; ``array(dtype)`` views the bytes."""


@dataclass(frozen=True)
class ProgramResult:
    """How one program ended."""

    thread: int
    spe: int | None
    physical: int | None
    exit_code: int | None
    end_cycle: int | None
    end_ns: float | None

    @property
    def ended_ns(self) -> float:
        """When the program ended, in ns (``end_ns`` known to be set: a
        ``UsageError`` if the program had not ended when the run stopped)."""
        if self.end_ns is None:
            raise UsageError(f"program {self.thread} had not ended when the run stopped")
        return self.end_ns


@dataclass(frozen=True)
class RunResult:
    """The outcome of :meth:`Machine.run`."""

    cycles: int
    ns: float
    programs: list[ProgramResult]
    stats: dict[str, Any] = field(repr=False)
    value: Any = None
    """What the PPE ``main`` returned, if :meth:`Machine.run` was given one."""


class Program(greenlet):
    """One Python program on an SPE or a PPE thread (internal: the SPU and PPE calls use it)."""

    def __init__(
        self,
        machine: Machine,
        tid: int,
        spe: int | None,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None = None,
    ):
        super().__init__(run=self._main)
        if machine._driver is not None:
            self.parent = machine._driver
        self.machine = machine
        self.tid = tid
        self.spe = spe
        self.fn = fn
        self.args = args
        self.kwargs = kwargs or {}
        self.engine = machine._engine
        self.stopping = False
        # The program's own tag mask, and whether a library's replaced it in
        # the channel (see cellsim.spu.library_wait_tags).
        self.tag_mask = 0
        self.library_mask = False
        # the tag-status update last requested (mfc_write_tag_update_*), for mfc_read_tag_status
        self.tag_update = 0
        # the C line of the request being answered (set only under --check-dma)
        self.c_site: str | None = None
        if spe is not None:
            self.ls_top = machine.facts.ls_bytes
            self.ls_next = machine.facts.ls_reserved_bytes
            self.ls = machine.local_store(spe)

    @property
    def who(self) -> str:
        return f"the SPE program on SPE {self.spe}" if self.spe is not None else f"PPE thread {self.tid}"

    def _main(self, _reply: int) -> tuple[Any, ...]:
        try:
            value = self.fn(*self.args, **self.kwargs)
        except GreenletExit as exc:
            if self.stopping:  # the driver ends the programs left after a run
                raise
            misuse = UsageError(
                f"{self.who} raised GreenletExit: a program ends by returning (or raising an "
                "ordinary exception), never by ending its greenlet"
            )
            return ("raise", self.tid, misuse.with_traceback(exc.__traceback__))
        except BaseException as exc:  # the driver re-raises it with the traceback
            return ("raise", self.tid, exc)
        if self.spe is None:
            # A PPE thread returns any Python value; the engine carries 0.
            self.machine._results[self.tid] = value
            code = 0
        else:
            code = 0 if value is None else value
            if not isinstance(code, (int, np.integer)) or not 0 <= int(code) < 2**32:
                misuse = UsageError(f"{self.who} returned {value!r}; return an int 0..2**32-1 or None")
                return ("raise", self.tid, misuse)
        nxt, reply = self.engine.exit(self.tid, int(code))
        return ("next", nxt, reply)

    def engine_now(self) -> int:
        """The current cycle (for errors raised before a call reaches the engine)."""
        return int(self.engine.now)

    def call(self, method: Callable[..., tuple[_Next, int]], *args: Any) -> int:
        """Submits one call and blocks (in simulated time) until it is done."""
        nxt, reply = method(self.tid, *args)
        if nxt == self.tid:
            return reply
        if not isinstance(nxt, _engine.RunEnd):
            return self.machine._programs[nxt].switch(reply)
        driver = self.machine._driver
        assert driver is not None, "a program runs only inside Machine.run"
        return driver.switch(("next", nxt, reply))


class Machine:
    """A simulated Cell machine.

    Args:
        machine: a shipped machine (``qs20``, ``ps3``, ``qs22``; see
            :func:`cellsim.machines`), the path of a machine TOML file, or a
            :class:`~cellsim.spec.MachineSpec` (whose overrides come first, and
            whose run options, :class:`~cellsim.spec.RunOptions`, apply).
        seed: drives every random choice (SPE placement, random traffic).
        overrides: machine parameters to change, ``{"eib.arbiter_window": 2}``
            or ``["eib.arbiter_window=2"]``.
        placement: physical SPE for each logical SPE, overriding the
            machine's placement policy.
        time_limit_ns: stop runs longer than this with ``RunawayError``
            (default 10 simulated seconds; at most the spec's run options' limit).
        trace: record a Chrome/Perfetto trace (see :meth:`write_trace`).
        trace_limit: records the trace keeps (the rest are counted as dropped).
        exact_reference: simulate every bus transfer event by event, without
            the engine's fast-forward of steady states (the reference it is
            tested against; results are identical, only slower). ``None``:
            the spec's run options' (``--exact-reference``; off by default).
        check_dma: stop a Python or C program at a DMA race (a local-store
            range used while a DMA moves it, overlapping DMAs without a fence
            or barrier) with :class:`cellsim.dmacheck.DmaHazardError`;
            ``None``: the spec's run options' or the command's ``--check-dma``
            (off by default).
    """

    def __init__(
        self,
        machine: str | MachineSpec = "qs20",
        *,
        seed: int = 0,
        overrides: Mapping[str, Any] | Iterable[str] = (),
        placement: Iterable[int] | None = None,
        time_limit_ns: float | None = None,
        trace: bool = False,
        trace_limit: int = 1_000_000,
        exact_reference: bool | None = None,
        check_dma: bool | None = None,
    ) -> None:
        spec = MachineSpec.of(machine, overrides)
        seed = integer(seed, "seed")
        self._engine = _engine.Engine(spec.source, seed, list(spec.overrides))
        self.spec: MachineSpec = spec
        """The machine as a value: its source and overrides (:class:`~cellsim.spec.MachineSpec`)."""
        self.info: dict[str, Any] = dict(self._engine.describe())
        """The engine's own description of the machine, untyped (:attr:`facts` has them typed)."""
        self.name: str = self.facts.name
        self.core_hz: float = self.facts.core_hz
        self.context_run_cycles: int = int(self.info["context_run_cycles"])
        """SPU cycles from ``spe_context_run`` until the SPE program starts (``ppe.context_run_ns``)."""
        self.seed = seed
        if placement is not None:
            self._engine.set_placement([integer(p, "placement: physical SPE", 0, 1 << 32) for p in placement])
        cap = spec.run.time_limit_ns  # a run's --time-limit bounds every machine
        if time_limit_ns is not None:
            self._set_time_limit(
                time_limit_ns if cap is None else min(positive(time_limit_ns, "time_limit_ns"), cap)
            )
        elif cap is not None:
            self._set_time_limit(cap)
        from . import dmacheck

        self._dma_checker: dmacheck.DmaChecker | None = None
        if check_dma is None:
            check_dma = spec.run.check_dma or dmacheck.default()
        if check_dma:
            ea0 = self.ls_ea(0)
            stride = self.ls_ea(1) - ea0
            self._dma_checker = dmacheck.DmaChecker(
                self.facts.memory_bytes, ea0, stride, self.facts.ls_bytes, self.spe_count
            )
            dmacheck.ACTIVE.add(self)
            self._engine.set_check_dma(True)  # native (Rust) programs check in the engine
        self._programs: dict[int, Program] = {}
        self._results: dict[int, Any] = {}
        # SPE programs run by spe_context_run, and the C programs among them that
        # died (cellsim.c): the PPE program's spe_context_run reports them
        self._context_runs: set[int] = set()
        self._spe_crashes: dict[int, Any] = {}
        self._driver: greenlet | None = None
        self._ls_views: dict[int, np.ndarray] = {}
        self._next_context = 0
        from . import trace as _trace

        self._trace_writer: _trace.TraceWriter | None = None
        captured = _trace._register(self, spec.run.trace)
        if captured is not None:
            trace_limit, self._trace_writer = captured
        if trace or captured is not None:
            self._engine.enable_trace(integer(trace_limit, "trace_limit", 1, 1 << 62))
        if exact_reference is None:
            exact_reference = spec.run.exact_reference
        self._engine.set_exact_reference(bool(exact_reference))
        self._ran = False

    # -- the chip -------------------------------------------------------------------

    @property
    def fast_forward_stats(self) -> dict[str, int]:
        """What the engine's fast-forward of steady states did so far: jumps,
        and the simulated cycles and bus transfers they covered."""
        jumps, cycles, transfers = self._engine.fast_forward_stats()
        return {"jumps": jumps, "cycles": cycles, "transfers": transfers}

    @property
    def facts(self) -> MachineFacts:
        """The machine's facts, typed (its spec's: :class:`~cellsim.spec.MachineFacts`)."""
        return self.spec.facts

    @property
    def spe_count(self) -> int:
        """Logical SPEs available to programs."""
        return self.facts.spes

    @property
    def placement(self) -> list[int]:
        """Physical SPE of each logical SPE."""
        return list(self._engine.placement)

    @property
    def cycles(self) -> int:
        """Current simulated time in SPU cycles."""
        return int(self._engine.now)

    @property
    def now_ns(self) -> float:
        """Current simulated time in ns."""
        return float(self._engine.now_ns)

    def cycles_to_ns(self, cycles: float) -> float:
        """Converts SPU cycles to nanoseconds on this machine."""
        return cycles * 1e9 / self.core_hz

    def ns_to_cycles(self, ns: float) -> int:
        """Converts nanoseconds (finite, not negative) to SPU cycles on this machine."""
        cycles = number(ns, "ns_to_cycles: ns") * self.core_hz / 1e9
        if not (math.isfinite(cycles) and 0 <= cycles < 2**64):
            raise UsageError(f"ns_to_cycles: ns {ns!r} must be finite, not negative and under 2**64 cycles")
        return round(cycles)

    def alloc(
        self,
        size: int,
        align: int = 128,
        *,
        node: int | None = None,
        policy: Literal["first-touch", "interleave"] | None = None,
        huge: bool = False,
    ) -> EaBuffer:
        """Allocates ``size`` bytes of main memory (``malloc_align``); zero-filled.

        On a two-chip blade each chip has its own memory (a NUMA node): the
        pages go where the machine's policy puts them (``facts.numa_policy``,
        Linux's first touch unless the machine file says otherwise), on node
        ``node`` (``numa_alloc_onnode``, ``numactl --membind``), or by
        ``policy`` (``"interleave"``: alternating page by page, ``numactl
        --interleave=all``). ``huge`` puts them on 16 MB pages (hugetlbfs).
        """
        size = integer(size, "alloc: size")
        if policy is not None and not isinstance(policy, str):
            raise UsageError(
                f"alloc: policy must be 'first-touch' or 'interleave' (a string), not {policy!r}"
            )
        if node is not None and policy is not None:
            raise UsageError(f"alloc: give node={node} or policy={policy!r}, not both")
        how = f"node{integer(node, 'alloc: node')}" if node is not None else policy
        ea = self._engine.alloc(size, integer(align, "alloc: align"), how, bool(huge))
        return EaBuffer(ea, size, self.memory(ea, size))

    def memory_node(self, ea: int) -> int:
        """The NUMA node (chip) whose memory holds main-memory address ``ea``."""
        ea = integer(ea, "memory_node: ea (an address of main memory)", 0, self.facts.memory_bytes)
        return int(self._engine.memory_node(ea))

    @property
    def chips(self) -> int:
        """Cell chips in the machine (2 on a blade)."""
        return self.facts.chips

    def memory(self, ea: int, size: int) -> np.ndarray:
        """A writable ``uint8`` view of main memory ``[ea, ea + size)``."""
        ea, size = integer(ea, "memory: ea"), integer(size, "memory: size")
        total = self.facts.memory_bytes
        if ea + size > total:
            raise UsageError(f"memory: 0x{ea:x}..+{size} is outside main memory ({total} bytes)")
        view = self._engine.memory(ea, size)
        return np.frombuffer(memoryview(view), dtype=np.uint8)

    def local_store(self, spe: int) -> np.ndarray:
        """A writable ``uint8`` view of logical SPE ``spe``'s local store."""
        spe = _spe(spe)
        if spe not in self._ls_views:
            self._ls_views[spe] = np.frombuffer(memoryview(self._engine.local_store(spe)), dtype=np.uint8)
        return self._ls_views[spe]

    def is_mapped(self, ea: int) -> bool:
        """Whether ``ea`` is in main memory or in an SPE's local-store or problem-state mapping."""
        ea = integer(ea, "is_mapped: ea", -(1 << 128), 1 << 128)
        if 0 <= ea < self.facts.memory_bytes:
            return True
        base = _engine.ls_ea(0)
        stride = _engine.ls_ea(1) - base
        return base <= ea < base + stride * self.spe_count

    @staticmethod
    def ls_ea(spe: int) -> int:
        """The effective address at which logical SPE ``spe``'s local store is mapped."""
        return int(_engine.ls_ea(_spe(spe)))

    # -- programs -------------------------------------------------------------------

    def load(self, spe: int, program: Callable[..., Any], *, argp: int = 0, envp: int = 0) -> None:
        """Loads a Python SPE program on logical SPE ``spe``; it runs as
        ``program(speid, argp, envp)`` when :meth:`run` is called, like an SPE
        ``main``. Its return value (an int, or None for 0) is the exit value."""
        if not callable(program):
            raise UsageError(f"program must be a function, not {type(program).__name__}")
        self.start_spe(spe, program, argp=argp, envp=envp, delay=0)

    def start_spe(self, spe: int, program: Any, *, argp: int = 0, envp: int = 0, delay: int = 0) -> int:
        """Starts ``program`` (a Python function or a :class:`cellsim.kernels.Kernel`)
        on logical SPE ``spe``, ``delay`` cycles from now; returns its thread id."""
        from .kernels import Kernel

        spe, delay = _spe(spe), integer(delay, "delay")
        if isinstance(program, Kernel):
            return int(self._engine.spawn_program(spe, program.description(), delay))
        if not callable(program):
            raise UsageError(f"program must be a function or a Kernel, not {type(program).__name__}")
        argp, envp = integer(argp, "argp"), integer(envp, "envp")
        tid = int(self._engine.spawn_external_after(spe, delay))
        self._programs[tid] = Program(self, tid, spe, program, (spe, argp, envp))
        return tid

    def start_ppe_thread(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
        """Starts a PPE thread running ``fn(*args, **kwargs)``; returns its thread id."""
        if not callable(fn):
            raise UsageError(f"a PPE thread runs a function, not {type(fn).__name__}")
        tid = int(self._engine.spawn_ppe())
        self._programs[tid] = Program(self, tid, None, fn, args, kwargs)
        return tid

    def thread_result(self, tid: int) -> Any:
        """What program thread ``tid`` (a PPE thread or an SPE program) returned, once it ended."""
        return self._results.get(tid)

    def new_context(self, signal_or: tuple[bool, bool] = (False, False)) -> int:
        """The next free logical SPE for an SPE context (libspe's
        ``spe_context_create``), its signal-notification registers in OR mode
        where ``signal_or`` says so; ``UsageError`` when every SPE has one."""
        spe = self._next_context
        if spe >= self.spe_count:
            raise UsageError(f"no SPE left: this {self.name} has {self.spe_count} SPEs and all have contexts")
        self._next_context += 1
        for which, on in ((1, signal_or[0]), (2, signal_or[1])):
            if on:
                self._engine.set_signal_mode(spe, which, True)
        return spe

    def place_on_affinity_chain(self) -> None:
        """Places logical SPEs along the chain nearest the memory controller
        (libspe's ``SPE_AFFINITY_MEMORY``); before any SPE runs."""
        self._engine.set_placement(list(self._engine.affinity_chain()))

    def run_synthetic(self, rate: float, cycles: int) -> None:
        """Runs ``cycles`` of synthetic uniform traffic, ``rate`` transfers per
        ramp per bus cycle (the engine's speed benchmark), on a machine with no
        programs. Called again, the traffic goes on (at the new ``rate`` from
        each ramp's next injection): two calls at one rate are one longer run."""
        cycles = integer(cycles, "run_synthetic: cycles", 1)
        self._engine.start_synthetic(positive(rate, "run_synthetic: rate"))
        self._engine.run_for(cycles)

    def take_trace(self, n: int) -> tuple[list[tuple[Any, ...]], int]:
        """Up to ``n`` trace records taken out of the machine (oldest first),
        and how many were dropped past the trace limit so far."""
        rows, dropped = self._engine.take_trace(n)
        return list(rows), int(dropped)

    def memory_address(self) -> int:
        """The host address of simulated main memory's first byte (for
        programs that copy to and from it in bulk, as the MPI runtime does)."""
        view = self._engine.memory(0, self.facts.memory_bytes)
        return int(np.frombuffer(memoryview(view), dtype=np.uint8).ctypes.data)

    def load_kernel(self, spe: int, name: str, **params: Any) -> int:
        """Loads native (Rust) kernel ``name`` on logical SPE ``spe``; see
        :mod:`cellsim.kernels`. Returns its thread id."""
        return int(self._engine.spawn_program(_spe(spe), {"kind": str(name), **params}))

    def run(
        self,
        main: Callable[..., Any] | None = None,
        *args: Any,
        time_limit_ns: float | None = None,
        wall_limit_s: float | None = None,
        **kwargs: Any,
    ) -> RunResult:
        """Runs every loaded program to the end and returns how they ended.

        With ``main``, a PPE program ``main(*args, **kwargs)`` runs too (it may
        start SPE programs with :mod:`cellsim.ppe`); its return value is
        ``RunResult.value``.

        ``time_limit_ns`` stops the run after that much simulated time (it
        replaces the machine's limit, 10 simulated seconds by default);
        ``wall_limit_s`` after that much host time. Both raise
        ``RunawayError`` with a livelock report (``.activity``: what each
        unfinished program was doing, e.g. the channel it kept polling).
        Ctrl-C stops a run at once (``KeyboardInterrupt``), native programs
        included.

        Raises the first exception a program raised (its traceback shows the
        program's line), ``DeadlockError`` if every program blocks, or
        ``RunawayError`` if a limit passes.
        """
        if self._ran:
            raise UsageError("this machine has already run; create a new Machine for a new run")
        if time_limit_ns is not None:
            self._set_time_limit(time_limit_ns)
        if wall_limit_s is not None:
            self._engine.set_wall_limit(wall_limit(wall_limit_s, "wall_limit_s"))
        self._ran = True
        main_tid = self.start_ppe_thread(main, *args, **kwargs) if main is not None else None
        self._driver = greenlet.getcurrent()
        for p in self._programs.values():
            p.parent = self._driver
        with run_deadline(None if wall_limit_s is None else wall_limit(wall_limit_s, "wall_limit_s")):
            return self._drive(main_tid)

    def _drive(self, main_tid: int | None) -> RunResult:
        nxt, reply = self._engine.start()
        pumped = 0
        try:
            while True:
                if isinstance(nxt, _engine.RunEnd):
                    if nxt == _engine.RunEnd.Failed:
                        self._engine.take_error()  # raises why
                    break
                pumped += 1
                if self._trace_writer is not None and pumped % _PUMP_EVERY == 0:
                    self._trace_writer.pump()  # stream the trace while the run goes on
                out = self._programs[nxt].switch(reply)
                if not _is_driver_message(out):
                    raise UsageError(
                        f"a program switched to the driver by hand ({out!r}) after {self._programs[nxt].who} "
                        "was resumed: programs run as greenlets that only the SPU and PPE calls may switch"
                    )
                if out[0] == "raise":
                    _, tid, exc = out
                    _note(exc, f"raised by {self._programs[tid].who}")
                    raise exc
                _, nxt, reply = out
        finally:
            self._stop_programs()
        result = self._result()
        if main_tid is not None:
            object.__setattr__(result, "value", self._results.get(main_tid))
        return result

    def _stop_programs(self) -> None:
        for p in self._programs.values():
            if p and not p.dead:
                p.stopping = True
                p.throw(GreenletExit)

    def _set_time_limit(self, time_limit_ns: Any) -> None:
        ns = positive(time_limit_ns, "time_limit_ns")
        if ns * self.core_hz / 1e9 >= 2**64:
            raise UsageError(f"time_limit_ns {time_limit_ns!r} is more than 2**64 - 1 cycles of this machine")
        cycles = round(ns * self.core_hz / 1e9)
        self._engine.set_time_limit(integer(cycles, f"time_limit_ns {time_limit_ns!r} in cycles"))

    def _result(self) -> RunResult:
        programs = [
            ProgramResult(
                thread=tid,
                spe=spe,
                physical=phys,
                exit_code=code,
                end_cycle=at,
                end_ns=None if at is None else self.cycles_to_ns(at),
            )
            for (tid, spe, phys, _state, code, at) in self._engine.threads()
        ]
        return RunResult(cycles=self.cycles, ns=self.now_ns, programs=programs, stats=self.stats())

    def stats(self) -> dict[str, Any]:
        """Counters of the run so far (transfers, bytes per ramp, segment busy time, ...)."""
        return dict(self._engine.stats())

    def ppe_cache_stats(self) -> dict[str, int]:
        """Counters of the PPE's caches: ``loads``, ``stores``, ``l1_hits``,
        ``l1_misses``, ``reloads`` (lines the L1 asked the L2 for),
        ``l2_misses`` (demand line fetches), ``prefetches``, ``castouts``
        and ``snoop_invalidations`` (lines an SPE's write took away)."""
        return {k: int(v) for k, v in self._engine.ppe_cache_stats().items()}

    def ppe_cache_holds(self, ea: int) -> tuple[bool, bool]:
        """Whether the PPE's L1 and L2 hold the line of main-memory address ``ea``."""
        l1, l2 = self._engine.ppe_cache_holds(int(ea))
        return bool(l1), bool(l2)

    def record_dma_latencies(self) -> None:
        """Starts recording the latencies of every DMA command; call it before :meth:`run`."""
        self._engine.record_dma_latencies()

    def dma_latencies(self, spe: int, kind: Literal["queued", "service"] = "queued") -> np.ndarray:
        """The recorded DMA latencies of logical SPE ``spe`` in SPU cycles, in the
        order the commands retired (empty unless :meth:`record_dma_latencies` was called).

        ``kind="queued"``: from the command's entry into the MFC queue (the SPU's
        issue) to its tag-group update, time waiting behind older commands
        included. ``kind="service"``: from the DMAC's start on the command (its
        first bus request) to its tag-group update: how long the chip took to
        move it.
        """
        if kind not in ("queued", "service"):
            raise UsageError(f"latency kind {kind!r} is not 'queued' or 'service'")
        pairs = np.asarray(self._engine.dma_latencies(int(spe)), dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0 if kind == "queued" else 1].copy()

    def write_trace(self, path: str | Path) -> TraceStats:
        """Writes the recorded trace as Chrome trace JSON (open it at
        https://ui.perfetto.dev), streaming the records out of the machine;
        returns how many were written and dropped past ``trace_limit``."""
        from .trace import write_chrome_trace

        return write_chrome_trace(self, path)

    def enable_checks(self) -> None:
        """Records every EIB reservation so :meth:`verify` can check the invariants."""
        self._engine.enable_checks()

    def verify(self) -> None:
        """Checks the EIB invariants over the run; raises ``InvariantError`` on a violation."""
        self._engine.verify()

    def __repr__(self) -> str:
        return f"Machine({self.name!r}, seed={self.seed}, cycle={self.cycles})"


def machine_digest(machine: str, overrides: Iterable[str] = ()) -> str:
    """A hash of the machine as resolved (its file's or preset's contents, its bases
    merged, the overrides applied: ``MachineSpec.toml``). Two runs with the same
    digest simulate the same machine; an edited machine file changes it."""
    import hashlib

    text = str(_engine.resolved_machine(str(machine), [str(o) for o in overrides]))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _spe(spe: Any) -> int:
    """A logical SPE number: an integer (the engine says whether the SPE exists)."""
    return integer(spe, "SPE number", 0, 1 << 32)


def _is_driver_message(out: Any) -> bool:
    """Whether a program's switch to the driver is one of Program's own messages."""
    return isinstance(out, tuple) and len(out) == 3 and out[0] in ("raise", "next")


def _note(exc: BaseException, note: str) -> None:
    exc.add_note(note)
