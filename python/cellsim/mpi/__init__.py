"""MPI on the SPEs of a simulated Cell, with the mpi4py API.

Each MPI rank is an SPE program on its own SPE; ``mpirun`` (a PPE program)
starts them as Kumar et al. describe. Run a program with ``cellsim mpirun -n 4
prog.py`` or :func:`mpirun`; inside it, this module is what ``from mpi4py
import MPI`` gives::

    from mpi4py import MPI            # or: from cellsim import mpi as MPI
    comm = MPI.COMM_WORLD
    if comm.rank == 0:
        comm.send({"hello": 1}, dest=1)
    elif comm.rank == 1:
        print(comm.recv(source=0))

Two protocols (``mpirun(..., protocol=...)``, ``--protocol``): ``direct``
(the default: local store to local store, signals, credits, pipelined pulls;
see :mod:`cellsim.mpi._direct`) and ``kumar`` (Kumar et al.'s design as
published; see :mod:`cellsim.mpi._kumar`). Times are simulated:
:func:`Wtime` reads the SPU decrementer.

Beyond mpi4py: :func:`compute` and :func:`flops` state the work a program
does between MPI calls (counted under ``--compute model``), :func:`alloc`
gives a numpy array in simulated main memory (:func:`ea_of` its address,
for the SPU's DMAs), :func:`argv` the arguments
``mpirun`` passed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import spu
from . import _types, _unsupported
from ._comm import COMM_NULL, COMM_SELF, COMM_WORLD, Comm, Intercomm, Intracomm
from ._costs import flop_cycles
from ._group import GROUP_EMPTY, GROUP_NULL, Group
from ._info import INFO_ENV, INFO_NULL, Info
from ._pickle import Pickle, pickle
from ._request import REQUEST_NULL, Prequest, Request
from ._run import MpirunResult, RankFailed, mpirun
from ._runtime import ComputeRule, current_rank
from ._topo import Cartcomm, Compute_dims, Distgraphcomm, Graphcomm, Topocomm
from ._types import *  # noqa: F403  (the names of _types.__all__, Exception among them)
from ._unsupported import *  # noqa: F403  (Win, File, Intercomm: NotImplementedError)

__all__ = [
    "COMM_NULL",
    "COMM_SELF",
    "COMM_WORLD",
    "GROUP_EMPTY",
    "GROUP_NULL",
    "INFO_ENV",
    "INFO_NULL",
    "REQUEST_NULL",
    "Alloc_mem",
    "Attach_buffer",
    "Cartcomm",
    "Comm",
    "ComputeRule",
    "Compute_dims",
    "Detach_buffer",
    "Distgraphcomm",
    "Finalize",
    "Free_mem",
    "Get_address",
    "Get_error_class",
    "Get_error_string",
    "Get_library_version",
    "Get_processor_name",
    "Get_version",
    "Graphcomm",
    "Group",
    "Info",
    "Init",
    "Init_thread",
    "Intercomm",
    "Intracomm",
    "Is_finalized",
    "Is_initialized",
    "Is_thread_main",
    "MpirunResult",
    "Pcontrol",
    "Pickle",
    "Prequest",
    "Query_thread",
    "RankFailed",
    "Request",
    "Topocomm",
    "Wtick",
    "Wtime",
    "alloc",
    "argv",
    "compute",
    "ea_of",
    "flops",
    "get_vendor",
    "mpirun",
    "pickle",
    "protocol",
]
__all__ += _types.__all__  # the constants, datatypes, operations, Status and Exception
__all__ += [n for n in _unsupported.__all__ if n not in ("CommUnsupported", "module_functions")]
globals().update(_unsupported.module_functions())  # Open_port...: NotImplementedError naming the call

VERSION = 2
SUBVERSION = 2


def Init() -> None:
    """``MPI_Init``: done by ``mpirun`` before the program starts; nothing to do."""
    current_rank("Init")


def Finalize() -> None:
    """``MPI_Finalize``: a barrier; the rank may not communicate afterwards.
    ``mpirun`` calls it when the program ends if the program did not."""
    from ._run import finalize_rank

    finalize_rank(current_rank("Finalize"))


def Is_initialized() -> bool:
    """True inside a rank."""
    try:
        return current_rank().initialized
    except _types.Exception:
        return False


def Is_finalized() -> bool:
    """Whether this rank called ``Finalize``."""
    try:
        return current_rank().finalized
    except _types.Exception:
        return False


def Wtime() -> float:
    """Simulated seconds since this rank's SPE program started, from the SPU
    decrementer (one channel read; the resolution is :func:`Wtick`)."""
    r = current_rank("Wtime")
    r.account_host_time()
    r.flush()
    ticks = 0xFFFFFFFF - spu.spu_read_decrementer()
    return ticks / r.machine.facts.timebase_hz


def Wtick() -> float:
    """Seconds per decrementer tick."""
    return 1.0 / float(current_rank("Wtick").machine.facts.timebase_hz)


def Get_processor_name() -> str:
    """``SPE <logical> (physical <p>) of <machine>``."""
    r = current_rank("Get_processor_name")
    return f"SPE {r.spe} (physical {r.machine.placement[r.spe]}) of {r.machine.name}"


def Get_version() -> tuple[int, int]:
    """The MPI standard version implemented (subset): 2.2."""
    return VERSION, SUBVERSION


def Get_library_version() -> str:
    """Which library and protocol."""
    try:
        p = current_rank().world.protocol
    except _types.Exception:
        p = "?"
    return f"cellsim MPI on the simulated Cell BE (protocol {p})"


def protocol() -> str:
    """The protocol of this run: ``direct`` or ``kumar``."""
    return current_rank("protocol").world.protocol


def argv() -> list[str]:
    """The program and arguments mpirun passed (read from the start-up structure)."""
    return list(current_rank("argv").argv)


def compute(cycles: int) -> None:
    """States that the program computes for ``cycles`` SPU cycles here.

    Counted under ``--compute model`` (the default); ignored under ``zero``
    and ``host-scaled`` (which measures the host time instead)."""
    r = current_rank("compute")
    if cycles < 0:
        raise ValueError(f"compute({cycles}): cycles must not be negative")
    if r.world.compute.kind == "model":
        r.charge(int(cycles))
        r.flush()


def flops(count: float, precision: str = "double", simd: bool = False) -> None:
    """States ``count`` floating-point operations (as multiply-adds) at the
    SPU's documented rate: double precision issues one 2-wide multiply-add
    every 7 cycles on the Cell (every cycle on the PowerXCell 8i), single
    precision one 4-wide every cycle; ``simd=False`` (code without SIMD
    intrinsics) uses one lane. See :func:`compute` for when it counts."""
    r = current_rank("flops")
    compute(flop_cycles(count, r.machine.name, precision, simd))


def alloc(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    """A zeroed numpy array in simulated main memory, in this rank's heap
    (a buffer DMAs use in place, with no host copy)."""
    r = current_rank("alloc")
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    assert r.heap is not None
    ea = r.heap.alloc(max(n, 16))
    view = r.machine.memory(ea, max(n, 16))
    view[:] = 0
    return view[:n].view(dtype).reshape(shape)


def ea_of(array: np.ndarray) -> int:
    """The effective address of an array in simulated memory (made by
    :func:`alloc`, or a view of main memory or a local store), for DMAs."""
    r = current_rank("ea_of")
    ea = r.locate(np.asarray(array))
    if ea is None:
        raise _types.Exception(
            _types.ERR_BUFFER, "the array is not in simulated memory (use cellsim.mpi.alloc)"
        )
    return ea


def Init_thread(required: int = _types.THREAD_MULTIPLE) -> int:
    """``MPI_Init_thread``: done by ``mpirun``; returns the level provided, ``THREAD_SINGLE``
    (a rank is one SPE program: threads inside a rank are not supported)."""
    current_rank("Init_thread")
    return _types.THREAD_SINGLE


def Query_thread() -> int:
    """``THREAD_SINGLE``."""
    return _types.THREAD_SINGLE


def Is_thread_main() -> bool:
    """True (one thread per rank)."""
    return True


def get_vendor() -> tuple[str, tuple[int, int, int]]:
    """The MPI implementation and its version, as mpi4py's ``get_vendor``."""
    from .. import __version__

    parts = [int(p) if p.isdigit() else 0 for p in __version__.split(".")[:3]]
    return "cellsim", ([*parts, 0, 0, 0])[:3]  # type: ignore[return-value]


def Get_error_class(errorcode: int) -> int:
    """The error class of an error code (they are the same here)."""
    return int(errorcode)


def Get_error_string(errorcode: int) -> str:
    """``MPI_ERR_TRUNCATE: message truncated``..."""
    return _types.error_string(errorcode)


def Get_address(location: Any) -> int:
    """The address of a buffer (for the displacements of ``Create_struct``/``Create_hindexed``)."""
    from ._message import as_bytes

    raw = as_bytes(location)[0]
    return int(raw.ctypes.data) if raw.size else 0


def Attach_buffer(buf: Any) -> None:
    """The buffer of buffered sends: cellsim copies their data into the rank's heap instead,
    so it is only kept, for ``Detach_buffer``."""
    current_rank("Attach_buffer").attached = buf


def Detach_buffer() -> Any:
    """The buffer given to ``Attach_buffer`` (the buffered sends are sent in the background)."""
    r = current_rank("Detach_buffer")
    buf, r.attached = r.attached, None
    return buf


def Alloc_mem(size: int, info: Info = INFO_NULL) -> Any:
    """``size`` bytes of simulated main memory (the rank's heap), as a ``memory``."""
    return _types.memory(alloc(int(size), np.uint8))


def Free_mem(mem: Any) -> None:
    """Gives memory from ``Alloc_mem`` back (the heap is the rank's for the whole run: nothing to do)."""


def Pcontrol(level: int) -> None:
    """Profiling control: nothing to do."""


def __getattr__(name: str) -> Any:
    raise AttributeError(
        f"module 'cellsim.mpi' (mpi4py's MPI) has no attribute {name!r} (docs/mpi.md lists what is supported)"
    )
