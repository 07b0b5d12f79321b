"""What cellsim.mpi does not offer, each raising ``NotImplementedError``
that names the call (never an ``AttributeError``, so that a program stops
at the call it needs, with the reason):

* one-sided communication (``MPI.Win``): an SPE cannot expose memory that
  other SPEs update while it computes, beyond the 128-byte reservations of
  its atomic unit, and the MPI library runs only inside MPI calls;
* dynamic processes (``Spawn``, ``Connect``/``Accept``, intercommunicators,
  of which ``MPI.Intercomm()`` is only the null handle):
  ``mpirun`` starts one rank per SPE of the machine, all at once;
* MPI-IO (``MPI.File``): the simulated chip has no file system;
* MPI-3's nonblocking collectives, matched probes and neighbour collectives.

The constants these interfaces use (``MODE_*``, ``LOCK_*``, ``SEEK_*``) exist,
so that a program gets to the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

__all__ = [
    "FILE_NULL",
    "LOCK_EXCLUSIVE",
    "LOCK_SHARED",
    "MESSAGE_NO_PROC",
    "MESSAGE_NULL",
    "MODE_APPEND",
    "MODE_CREATE",
    "MODE_DELETE_ON_CLOSE",
    "MODE_EXCL",
    "MODE_NOCHECK",
    "MODE_NOPRECEDE",
    "MODE_NOPUT",
    "MODE_NOSTORE",
    "MODE_NOSUCCEED",
    "MODE_RDONLY",
    "MODE_RDWR",
    "MODE_SEQUENTIAL",
    "MODE_UNIQUE_OPEN",
    "MODE_WRONLY",
    "SEEK_CUR",
    "SEEK_END",
    "SEEK_SET",
    "WIN_NULL",
    "CommUnsupported",
    "File",
    "Message",
    "Win",
    "module_functions",
]

RMA = "one-sided communication (RMA windows) is not supported by cellsim.mpi (see docs/mpi.md)"
DYNAMIC = (
    "dynamic processes and intercommunicators are not supported: mpirun starts one rank per SPE, all at once"
)
IO = "MPI-IO is not supported: the simulated Cell has no file system"
MPI3 = "this MPI-3 call is not supported by cellsim.mpi (see docs/mpi.md)"

MODE_CREATE, MODE_RDONLY, MODE_WRONLY, MODE_RDWR = 1, 2, 4, 8
MODE_DELETE_ON_CLOSE, MODE_UNIQUE_OPEN, MODE_EXCL, MODE_APPEND, MODE_SEQUENTIAL = 16, 32, 64, 128, 256
MODE_NOCHECK, MODE_NOSTORE, MODE_NOPUT, MODE_NOPRECEDE, MODE_NOSUCCEED = 1024, 2048, 4096, 8192, 16384
LOCK_EXCLUSIVE, LOCK_SHARED = 234, 235
SEEK_SET, SEEK_CUR, SEEK_END = 600, 602, 604


def raising(qualname: str, why: str) -> Callable[..., NoReturn]:
    """A call that raises ``NotImplementedError("MPI.<qualname>: <why>")``."""

    def call(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"MPI.{qualname}: {why}")

    call.__name__ = qualname.rsplit(".", 1)[-1]
    call.__doc__ = f"Not supported: {why}."
    return call


class _Refusing(type):
    """Any attribute of the class itself names the call it would be."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return raising(f"{cls.__name__}.{name}", cls._why)  # type: ignore[attr-defined]


class _NullHandle(metaclass=_Refusing):
    """A handle class whose objects can only be null (``MPI.Win()`` is ``WIN_NULL``)."""

    _why = ""

    def __init__(self, other: Any = None) -> None:
        pass

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return raising(f"{type(self).__name__}.{name}", self._why)


class Win(_NullHandle):
    """RMA windows: not supported (every call raises ``NotImplementedError``)."""

    _why = RMA


class File(_NullHandle):
    """MPI-IO files: not supported (every call raises ``NotImplementedError``)."""

    _why = IO


class Message(_NullHandle):
    """Matched-probe messages (MPI-3): not supported."""

    _why = MPI3


WIN_NULL = Win()
FILE_NULL = File()
MESSAGE_NULL = Message()
MESSAGE_NO_PROC = Message()

_COMM_CALLS = {
    DYNAMIC: (
        "Spawn",
        "Spawn_multiple",
        "Accept",
        "Connect",
        "Join",
        "Create_intercomm",
        "Merge",
        "Get_remote_group",
        "Get_remote_size",
    ),
    MPI3: (
        "Mprobe",
        "Improbe",
        "mprobe",
        "improbe",
        "Ibarrier",
        "Ibcast",
        "Igather",
        "Igatherv",
        "Iscatter",
        "Iscatterv",
        "Iallgather",
        "Iallgatherv",
        "Ialltoall",
        "Ialltoallv",
        "Ialltoallw",
        "Ireduce",
        "Iallreduce",
        "Ireduce_scatter",
        "Ireduce_scatter_block",
        "Iscan",
        "Iexscan",
    ),
}

CommUnsupported: type = type(
    "CommUnsupported",
    (),
    {
        "__slots__": (),
        "__doc__": "The communicator calls cellsim.mpi does not offer.",
        **{name: raising(f"Comm.{name}", why) for why, names in _COMM_CALLS.items() for name in names},
    },
)

_MODULE_CALLS = {
    DYNAMIC: ("Open_port", "Close_port", "Publish_name", "Unpublish_name", "Lookup_name"),
    RMA: ("Win_allocate", "Win_create"),
}


def module_functions() -> dict[str, Callable[..., NoReturn]]:
    """The module-level calls cellsim.mpi does not offer."""
    return {name: raising(name, why) for why, names in _MODULE_CALLS.items() for name in names}
