"""``mpirun``: runs a program on N SPEs of one simulated Cell, one MPI rank each.

As Kumar et al. describe it, ``mpirun`` is a PPE program: it allocates the
shared space (the message buffers ``P_i`` for ``kumar``, a heap per rank for
buffers placed in main memory, the start-up structures and the argument
strings), creates N SPE contexts (signal register 1 in OR mode), loads the
rank program into each, runs each in its own PPE thread, and sends each
rank the address of its start-up structure through the inbound mailbox;
``MPI_Init`` in the rank reads it. ``mpirun`` then only waits for the
threads to end.

The program may be

* a Python file: an unmodified mpi4py script (``from mpi4py import MPI``
  resolves to :mod:`cellsim.mpi` while it runs: ``mpi4py`` and
  ``mpi4py.MPI`` are put in ``sys.modules`` for the run and taken out
  afterwards) or a script that uses :mod:`cellsim.mpi` and the SPU API; it
  is executed once per rank, as ``__main__``, inside the rank's SPE program;
* ``module:function`` or a Python callable, called once per rank.

Each rank's output lines are prefixed with ``[rank]``. A rank that raises
stops the run: its traceback is shown with its rank and the other ranks are
stopped (their greenlets unwind). The exit status is the worst rank's.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from greenlet import GreenletExit, getcurrent

from .. import ppe, spu
from ..exceptions import CellsimError, DeadlockError, RunawayError, UsageError
from ..machine import Machine, Program
from ..spec import MachineLike
from . import _types as T
from ._coll import Coll
from ._comm import CommState, finalize_checks
from ._costs import COSTS, Costs
from ._errors import MPIAbort
from ._program import RankModules, RankProgram, load_program, user_dirs
from ._runtime import LS_STARTUP, PEER, PROTOCOL_CODES, STARTUP, STARTUP_MAGIC, ComputeRule, Heap, Rank, World
from ._sandbox import RankAbort, RankExit, bad_termination, rank_process

__all__ = ["MpirunResult", "RankFailed", "finalize_rank", "init_rank", "mpirun"]

PROTOCOLS = ("direct", "kumar")
MAX_RANKS_TABLE = 16
STRUCT_BYTES = 64 + 32 * MAX_RANKS_TABLE


class RankFailed(CellsimError):
    """A rank raised (or exited with a non-zero status); the run was stopped.

    ``rank``, ``exc`` (what it raised), ``traceback_text`` and ``exit_code``."""

    def __init__(
        self,
        rank: int,
        exc: BaseException | None,
        text: str,
        exit_code: int,
        report: str = "",
        what: str | None = None,
    ) -> None:
        if what is None and exc is not None:
            what = f"raised {type(exc).__name__}: {exc}"
        elif what is None:
            what = f"exited with status {exit_code}"
        super().__init__(f"rank {rank} {what}; the other ranks were stopped")
        self.rank = rank
        self.exc = exc
        self.traceback_text = text
        self.exit_code = exit_code
        self.report = report


@dataclass
class MpirunResult:
    """How an ``mpirun`` ended."""

    exit_code: int
    """The worst rank's exit status (1 for a rank that raised, a deadlock...)."""
    codes: list[int | None]
    """Each rank's exit status (None: stopped before it ended)."""
    ns: float
    """Simulated time at the end of the run, in ns."""
    machine: Machine
    error: BaseException | None = None
    values: list[Any] = field(default_factory=list)
    """What a callable program returned in each rank."""
    world: World | None = field(default=None, repr=False)


# -- output ------------------------------------------------------------------------------------


class _RankStream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` during a run: each rank's complete lines
    go to the real stream prefixed with ``[rank] ``."""

    def __init__(self, out: TextIO, prefix: bool) -> None:
        self.out = out
        self.prefix = prefix
        self.partial: dict[int, str] = {}

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        r = getattr(getcurrent(), "_mpi_rank", None)
        if r is None or r.rank < 0:
            self.out.write(s)
            return len(s)
        text = self.partial.pop(r.rank, "") + s
        *lines, rest = text.split("\n")
        for line in lines:
            self.out.write(f"[{r.rank}] {line}\n" if self.prefix else line + "\n")
        if rest:
            self.partial[r.rank] = rest
        return len(s)

    def flush_rank(self, rank: int) -> None:
        rest = self.partial.pop(rank, "")
        if rest:
            self.out.write(f"[{rank}] {rest}\n" if self.prefix else rest + "\n")

    def flush(self) -> None:
        self.out.flush()


# -- the mpi4py shim ---------------------------------------------------------------------------


def _mpi4py_module() -> types.ModuleType:
    """A module that stands for the mpi4py package during a run."""
    from .. import mpi

    pkg = types.ModuleType("mpi4py")
    pkg.__doc__ = "cellsim's stand-in for mpi4py: MPI is cellsim.mpi on the simulated Cell"
    pkg.__path__ = []  # type: ignore[attr-defined]
    pkg.__version__ = "3.1.0+cellsim"  # type: ignore[attr-defined]
    pkg.MPI = mpi  # type: ignore[attr-defined]
    pkg.rc = types.SimpleNamespace(  # type: ignore[attr-defined]
        initialize=True, finalize=True, threads=False, thread_level="single", errors="exception"
    )
    pkg.get_config = lambda: {"mpicc": "cellsim"}  # type: ignore[attr-defined]
    pkg.get_include = lambda: ""  # type: ignore[attr-defined]
    return pkg


@contextlib.contextmanager
def _mpi4py_installed() -> Iterator[None]:
    from .. import mpi

    saved = {k: sys.modules.get(k) for k in ("mpi4py", "mpi4py.MPI")}
    sys.modules["mpi4py"] = _mpi4py_module()
    sys.modules["mpi4py.MPI"] = mpi
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


# -- the rank's side: MPI_Init and MPI_Finalize ------------------------------------------------------


def init_rank(rank: Rank) -> None:
    """``MPI_Init``: the start-up structure's address from the inbound
    mailbox, the structure by DMA, the protocol's set-up."""
    ea = spu.spu_read_in_mbox()
    rank.get_blocking(LS_STARTUP, ea, STRUCT_BYTES)
    head = np.frombuffer(rank.ls, dtype=STARTUP, count=1, offset=LS_STARTUP)[0]
    if int(head["magic"]) != STARTUP_MAGIC:
        raise T.Exception(T.ERR_OTHER, f"MPI_Init: no start-up structure at 0x{ea:x}")
    n = int(head["size"])
    rank.rank = int(head["rank"])
    rank.size = n
    rank.peers = np.frombuffer(rank.ls, dtype=PEER, count=n, offset=LS_STARTUP + STARTUP.itemsize).copy()
    rank.heap = Heap(int(head["heap_ea"]), int(head["heap_bytes"]))
    nbytes = int(head["argv_bytes"])
    argv_ea = int(head["argv_ea"])
    raw = b""
    scratch = LS_STARTUP + 1024
    while len(raw) < nbytes:
        take = min(2048, -(-(nbytes - len(raw)) // 16) * 16)
        rank.get_blocking(scratch, argv_ea + len(raw), take)
        raw += bytes(rank.ls[scratch : scratch + take])
    rank.argv = [a.decode() for a in raw[:nbytes].split(b"\0")[: int(head["argc"])]]
    code = int(head["protocol"])
    name = next(k for k, v in PROTOCOL_CODES.items() if v == code)
    rank.world.ranks[rank.rank] = rank
    if name == "kumar":
        from ._kumar import KumarProtocol

        rank.proto = KumarProtocol(rank)
    else:
        from ._direct import DirectProtocol

        rank.proto = DirectProtocol(rank)
    rank.proto.setup()
    rank.world_comm = CommState(0, list(range(n)), rank.rank, "MPI_COMM_WORLD")
    rank.self_comm = CommState(2, [rank.rank], 0, "MPI_COMM_SELF")
    rank.initialized = True


def finalize_rank(rank: Rank) -> None:
    """``MPI_Finalize``: a barrier on ``COMM_WORLD``, the check that no
    collective message was left unreceived, and the library's DMAs drained."""
    if rank.finalized:
        return
    rank.enter()
    try:
        assert rank.world_comm is not None
        Coll(rank, rank.world_comm, "Finalize").barrier()
        finalize_checks(rank)
        rank.wait_tags(0xFFF00000)
    finally:
        rank.leave()
    rank.finalized = True


# -- mpirun --------------------------------------------------------------------------------------------


def _heap_bytes(m: Machine, n: int) -> int:
    """Each rank's heap: half of one chip's memory shared out, at most 64 MB a
    rank (on a blade, first-touch placement keeps them all on chip 0's memory
    with room to spare for the program's own allocations)."""
    node_bytes = m.facts.memory_bytes // m.chips
    return min(64 << 20, (node_bytes // (2 * n)) & ~0xFFFF)


def _exit_status(code: Any, err: TextIO | _RankStream) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else 1
    err.write(f"{code}\n")
    return 1


def mpirun(
    program: str | Path | Callable[[], Any] | None,
    n: int,
    *,
    module: str | None = None,
    command: str | None = None,
    args: Sequence[str] = (),
    machine: MachineLike = "qs20",
    protocol: str = "direct",
    compute: str | ComputeRule = "model",
    seed: int = 0,
    trace: str | Path | None = None,
    trace_limit: int | None = None,
    overrides: dict[str, Any] | Sequence[str] | None = None,
    time_limit_ns: float | None = None,
    wall_limit_s: float | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    prefix: bool = True,
    raise_errors: bool = True,
    costs: Costs | None = None,
) -> MpirunResult:
    """Runs ``program`` as ``n`` MPI ranks on one simulated Cell (one SPE each).

    Args:
        program: a Python file (an mpi4py script or a cellsim.mpi program),
            ``"module:function"``, or a callable (called with no arguments in
            each rank; its return values are ``MpirunResult.values``); None
            with ``module`` or ``command``.
        module: run this module as ``python -m module`` would.
        command: run this code as ``python -c command`` would.
        n: ranks, at most the machine's SPEs (16 on qs20/qs22, 8 on qs20-1chip, 6 on ps3).
        args: the program's arguments (``sys.argv[1:]`` of a script; also
            passed in the start-up structure, :func:`cellsim.mpi.argv`).
        machine, seed, overrides, time_limit_ns: as for :class:`cellsim.Machine`.
        wall_limit_s: stop the run after this much host time (``RunawayError``).
        protocol: ``direct`` (default) or ``kumar`` (Kumar et al.'s design).
        compute: ``zero``, ``model`` (default) or ``host-scaled:F``; see
            :class:`cellsim.mpi.ComputeRule`.
        trace: write a Chrome/Perfetto trace of the run there (gzip-compressed
            if the name ends in ``.gz``), with each rank's MPI calls as slices
            on its own track (args: peer, tag, bytes) above its SPE's tracks.
        trace_limit: records the trace keeps (default 1,000,000; the rest are
            counted as dropped).
        stdout, stderr: where the ranks' prefixed output goes (default the
            process's).
        raise_errors: raise the run's error (a rank's exception with a note
            naming the rank, ``MPIDeadlockError``...) instead of returning it
            in ``MpirunResult.error``.
        costs: the SPU cycles of the library's own steps (default
            ``cellsim.mpi._costs.COSTS``, from their instruction counts): other
            values weigh what the protocol's SPU work costs against its DMAs.
    """
    if protocol not in PROTOCOLS:
        raise UsageError(f"unknown protocol {protocol!r}: choose {' or '.join(PROTOCOLS)}")
    rule = compute if isinstance(compute, ComputeRule) else ComputeRule.parse(compute)
    traced: dict[str, Any] = {"trace": trace is not None}
    if trace_limit is not None:
        traced["trace_limit"] = trace_limit
    m = Machine(machine, seed=seed, overrides=overrides or (), time_limit_ns=time_limit_ns, **traced)
    if not isinstance(n, int) or n < 1:
        raise UsageError(f"-n {n!r}: at least one rank")
    if n > m.spe_count:
        raise UsageError(
            f"-n {n}: this {m.name} has {m.spe_count} SPEs and an MPI rank needs one, so at most "
            f"{m.spe_count} ranks" + (" (qs20, qs22: two-chip blades with 16)" if m.chips == 1 else "")
        )
    with RankModules(user_dirs(program, module, command)) as modules:
        prog = load_program(program, module=module, command=command)
        options = (trace, stdout, stderr, prefix, raise_errors, wall_limit_s, costs or COSTS)
        return _run(prog, modules, m, n, args, protocol, rule, *options)


def _run(
    prog: RankProgram,
    modules: RankModules,
    m: Machine,
    n: int,
    args: Sequence[str],
    protocol: str,
    rule: ComputeRule,
    trace: str | Path | None,
    stdout: TextIO | None,
    stderr: TextIO | None,
    prefix: bool,
    raise_errors: bool,
    wall_limit_s: float | None,
    costs: Costs,
) -> MpirunResult:
    """The run itself (see :func:`mpirun`)."""
    world = World(m, n, protocol, rule, costs)
    if trace is not None:
        world.spans = []
    out = _RankStream(stdout or sys.stdout, prefix)
    err = _RankStream(stderr or sys.stderr, prefix)
    values: list[Any] = [None] * n
    argv = [prog.argv0, *map(str, args)]

    def rank_main(speid: int, argp: int, envp: int) -> int:
        g = getcurrent()
        assert isinstance(g, Program)
        r = Rank(world, -1, g)
        g._mpi_rank = r  # type: ignore[attr-defined]
        status = 0
        stopped = False
        try:
            g._mpi_modules = {"__main__": prog.main_module()}  # type: ignore[attr-defined]
            modules.enter(g)
            init_rank(r)
            r.last_exit = time.perf_counter()
            values[r.rank] = prog.run(g._mpi_modules["__main__"])  # type: ignore[attr-defined]
            r.enter()
            r.leave()
            finalize_rank(r)
        except MPIAbort as e:
            where = _format_traceback(e).strip().splitlines()
            at = f" ({where[-2].strip()})" if len(where) >= 2 else ""
            world.failures.append((r.rank, None, ""))
            raise RankFailed(r.rank, None, "", e.errorcode & 0xFF, what=f"called {e}{at}") from None
        except RankAbort:
            world.failures.append((r.rank, None, ""))
            report = bad_termination(r.rank, 134, "KILLED BY SIGNAL: 6 (Aborted): os.abort()")
            raise RankFailed(r.rank, None, "", 134, report, what="called os.abort()") from None
        except RankExit as e:
            status = _exit_status(e.code, err)
            world.failures.append((r.rank, None, ""))
            raise RankFailed(r.rank, None, "", status, bad_termination(r.rank, status)) from None
        except SystemExit as e:
            status = _exit_status(e.code, err)
            if status:
                world.failures.append((r.rank, None, ""))
                raise RankFailed(r.rank, None, "", status) from None
            finalize_rank(r)
        except GreenletExit:
            stopped = True
            raise
        except RunawayError as e:
            # not the rank's failure: the run's; a limit that went off in this rank's
            # own code (no call of cellsim's under way) says so
            if r.in_call == 0 and not hasattr(e, "mpi_running"):
                e.mpi_running = r.rank  # type: ignore[attr-defined]
            stopped = True
            raise
        except (DeadlockError, KeyboardInterrupt):
            raise  # not the rank's failure: the run's (Ctrl-C stops the whole job)
        except BaseException as e:
            text = _format_traceback(e)
            world.failures.append((r.rank, e, text))
            raise RankFailed(r.rank, e, text, 1) from e
        finally:
            out.flush_rank(r.rank)
            err.flush_rank(r.rank)
            if not stopped:
                world.finished.add(r.rank)
                world.progress()
        r.exit_code = status
        return status

    def mpirun_ppe() -> list[int]:
        heap = _heap_bytes(m, n)
        from ._kumar import buffer_bytes

        bufs = [m.alloc(buffer_bytes(n)) if protocol == "kumar" else None for _ in range(n)]
        heaps = [m.alloc(heap) for _ in range(n)]
        blob = b"".join(a.encode() + b"\0" for a in argv)
        argv_buf = m.alloc(max(len(blob), 16))
        argv_buf.array()[: len(blob)] = np.frombuffer(blob, np.uint8)
        contexts = [
            ppe.spe_context_create(ppe.SPE_CFG_SIGNOTIFY1_OR | ppe.SPE_CFG_SIGNOTIFY2_OR) for _ in range(n)
        ]
        for ctx in contexts:
            ppe.spe_program_load(ctx, rank_main)
        structs = []
        for r in range(n):
            s = m.alloc(-(-STRUCT_BYTES // 128) * 128)
            head = s.array(STARTUP)[:1]
            head[0] = (
                STARTUP_MAGIC,
                1,
                r,
                n,
                PROTOCOL_CODES[protocol],
                len(argv),
                len(blob),
                0,
                int(argv_buf),
                int(heaps[r]),
                heap,
                0,
            )
            table = np.frombuffer(s.array(), dtype=PEER, count=n, offset=STARTUP.itemsize)
            for q, ctx in enumerate(contexts):
                b = bufs[q]
                table[q] = (
                    ppe.spe_ls_area_get(ctx),
                    ppe.spe_ps_area_get(ctx),
                    int(b) if b is not None else 0,
                    b.size if b is not None else 0,
                )
            structs.append(s)
        threads = [ppe.pthread_create(lambda c=ctx: ppe.spe_context_run(c).exit_code) for ctx in contexts]
        for ctx, s in zip(contexts, structs, strict=True):
            ppe.spe_in_mbox_write(ctx, [int(s)])
        return [ppe.pthread_join(t) for t in threads]

    error: BaseException | None = None
    codes: list[int | None] = [None] * n
    saved = (sys.stdout, sys.stderr, list(sys.argv), list(sys.path))
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    sys.argv = list(argv)
    if prog.path0 is not None:
        sys.path.insert(0, prog.path0)
    try:
        with _mpi4py_installed(), rank_process() as threads:
            res = m.run(mpirun_ppe, wall_limit_s=wall_limit_s)
        codes = [int(c) for c in res.value]
        if threads.failures:
            error = CellsimError(f"{'; '.join(threads.failures)} (a thread of the program)")
    except RankFailed as e:
        error = e
    except T.MPIDeadlockError as e:
        error = e
    except DeadlockError as e:
        error = world.deadlock()
        error.__cause__ = e
    except RunawayError as e:
        doing = {r: f"rank {r} waits in {w}" for r, w in world.waits.items()}
        running = getattr(e, "mpi_running", None)
        if running is not None:  # the limit went off in this rank's own code
            doing[running] = f"rank {running} was running its own Python code (in no MPI or SPU call)"
        waits = "; ".join(w for _, w in sorted(doing.items()))
        error = RunawayError(f"{e}{'; ' + waits if waits else ''}")
        error.__cause__ = e
    finally:
        for r in range(n):
            out.flush_rank(r)
            err.flush_rank(r)
        sys.stdout, sys.stderr = saved[0], saved[1]
        sys.argv[:] = saved[2]
        sys.path[:] = saved[3]
    for r in range(n):
        rk = world.ranks[r]
        if rk is not None and rk.exit_code is not None:
            codes[r] = rk.exit_code
    if trace is not None:
        from ..trace import TraceWriter

        writer = TraceWriter(m, str(trace))
        spes = [int(rk.spe) if rk is not None else r for r, rk in enumerate(world.ranks)]
        writer.spans(world.spans or (), spes)
        world.trace_stats = writer.close()
    exit_code = max([c for c in codes if c is not None] or [0])
    if error is not None:
        exit_code = max(exit_code, error.exit_code if isinstance(error, RankFailed) else 1)
    result = MpirunResult(exit_code, codes, m.now_ns, m, error, values, world)
    if error is not None and raise_errors:
        if isinstance(error, RankFailed) and error.exc is not None:
            exc = error.exc
            exc.add_note(f"raised by MPI rank {error.rank} (the other ranks were stopped)")
            raise exc
        raise error
    return result


def _format_traceback(e: BaseException) -> str:
    """The traceback of the program's own frames (cellsim's frames left out,
    as mpi4py's compiled frames are), then the exception."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = traceback.extract_tb(e.__traceback__)
    # none of the program's own frames (an error found in MPI_Finalize, which the
    # launcher calls): the exception alone, no frame of cellsim's
    mine = [f for f in frames if not os.path.abspath(f.filename).startswith(pkg + os.sep)]
    head = "Traceback (most recent call last):\n" if mine else ""
    return head + "".join(traceback.format_list(mine)) + "".join(traceback.format_exception_only(type(e), e))


def report_failure(result: MpirunResult, err: TextIO) -> None:
    """Writes what went wrong in a run (tracebacks prefixed with their rank)."""
    e = result.error
    if e is None:
        return
    if isinstance(e, RankFailed):
        err.write(e.report)
        if e.traceback_text:
            for line in e.traceback_text.rstrip("\n").split("\n"):
                err.write(f"[{e.rank}] {line}\n")
        err.write(f"mpirun: {e}\n")
    else:
        err.write(f"mpirun: {e}\n")
