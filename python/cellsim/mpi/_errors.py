"""MPI error classes and the exceptions: ``MPI.Exception`` (what a failed
MPI call raises, as in mpi4py) and the deadlock error.

Error classes take MPICH's values, as mpi4py built against MPICH shows them.
"""

from __future__ import annotations

from ..exceptions import CellsimError, DeadlockError
from ._handle import Handle

__all__ = [
    "ERRHANDLER_NULL",
    "ERRORS",
    "ERRORS_ARE_FATAL",
    "ERRORS_RETURN",
    "ERR_ACCESS",
    "ERR_AMODE",
    "ERR_ARG",
    "ERR_ASSERT",
    "ERR_BAD_FILE",
    "ERR_BASE",
    "ERR_BUFFER",
    "ERR_COMM",
    "ERR_CONVERSION",
    "ERR_COUNT",
    "ERR_DIMS",
    "ERR_DISP",
    "ERR_DUP_DATAREP",
    "ERR_FILE",
    "ERR_FILE_EXISTS",
    "ERR_FILE_IN_USE",
    "ERR_GROUP",
    "ERR_INFO",
    "ERR_INFO_KEY",
    "ERR_INFO_NOKEY",
    "ERR_INFO_VALUE",
    "ERR_INTERN",
    "ERR_IN_STATUS",
    "ERR_IO",
    "ERR_KEYVAL",
    "ERR_LASTCODE",
    "ERR_LOCKTYPE",
    "ERR_NAME",
    "ERR_NOT_SAME",
    "ERR_NO_MEM",
    "ERR_NO_SPACE",
    "ERR_NO_SUCH_FILE",
    "ERR_OP",
    "ERR_OTHER",
    "ERR_PENDING",
    "ERR_PORT",
    "ERR_QUOTA",
    "ERR_RANK",
    "ERR_READ_ONLY",
    "ERR_REQUEST",
    "ERR_RMA_ATTACH",
    "ERR_RMA_CONFLICT",
    "ERR_RMA_FLAVOR",
    "ERR_RMA_RANGE",
    "ERR_RMA_SHARED",
    "ERR_RMA_SYNC",
    "ERR_ROOT",
    "ERR_SERVICE",
    "ERR_SIZE",
    "ERR_SPAWN",
    "ERR_TAG",
    "ERR_TOPOLOGY",
    "ERR_TRUNCATE",
    "ERR_TYPE",
    "ERR_UNKNOWN",
    "ERR_UNSUPPORTED_DATAREP",
    "ERR_UNSUPPORTED_OPERATION",
    "ERR_WIN",
    "SUCCESS",
    "Errhandler",
    "Exception",
    "MPIAbort",
    "MPIDeadlockError",
    "error_string",
]

SUCCESS = 0
ERR_BUFFER = 1
ERR_COUNT = 2
ERR_TYPE = 3
ERR_TAG = 4
ERR_COMM = 5
ERR_RANK = 6
ERR_ROOT = 7
ERR_GROUP = 8
ERR_OP = 9
ERR_TOPOLOGY = 10
ERR_DIMS = 11
ERR_ARG = 12
ERR_UNKNOWN = 13
ERR_TRUNCATE = 14
ERR_OTHER = 15
ERR_INTERN = 16
ERR_IN_STATUS = 17
ERR_PENDING = 18
ERR_REQUEST = 19
ERR_ACCESS = 20
ERR_AMODE = 21
ERR_BAD_FILE = 22
ERR_CONVERSION = 23
ERR_DUP_DATAREP = 24
ERR_FILE_EXISTS = 25
ERR_FILE_IN_USE = 26
ERR_FILE = 27
ERR_INFO = 28
ERR_INFO_KEY = 29
ERR_INFO_VALUE = 30
ERR_INFO_NOKEY = 31
ERR_IO = 32
ERR_NAME = 33
ERR_NO_MEM = 34
ERR_NOT_SAME = 35
ERR_NO_SPACE = 36
ERR_NO_SUCH_FILE = 37
ERR_PORT = 38
ERR_QUOTA = 39
ERR_READ_ONLY = 40
ERR_SERVICE = 41
ERR_SPAWN = 42
ERR_UNSUPPORTED_DATAREP = 43
ERR_UNSUPPORTED_OPERATION = 44
ERR_WIN = 45
ERR_BASE = 46
ERR_LOCKTYPE = 47
ERR_KEYVAL = 48
ERR_RMA_CONFLICT = 49
ERR_RMA_SYNC = 50
ERR_SIZE = 51
ERR_DISP = 52
ERR_ASSERT = 53
ERR_RMA_RANGE = 55
ERR_RMA_ATTACH = 56
ERR_RMA_SHARED = 57
ERR_RMA_FLAVOR = 58
ERR_LASTCODE = 0x3FFFFFFF

ERRORS: dict[str, int] = {k: v for k, v in globals().items() if k == "SUCCESS" or k.startswith("ERR_")}
"""Every error class by name."""

_TEXT = {
    "SUCCESS": "no errors",
    "ERR_BUFFER": "invalid buffer pointer",
    "ERR_COUNT": "invalid count argument",
    "ERR_TYPE": "invalid datatype",
    "ERR_TAG": "invalid tag",
    "ERR_COMM": "invalid communicator",
    "ERR_RANK": "invalid rank",
    "ERR_ROOT": "invalid root",
    "ERR_GROUP": "invalid group",
    "ERR_OP": "invalid reduce operation",
    "ERR_TOPOLOGY": "invalid topology",
    "ERR_DIMS": "invalid dimension argument",
    "ERR_ARG": "invalid argument of some other kind",
    "ERR_TRUNCATE": "message truncated",
    "ERR_OTHER": "known error not in list",
    "ERR_INTERN": "internal error",
    "ERR_REQUEST": "invalid request",
    "ERR_PENDING": "pending request",
    "ERR_UNSUPPORTED_OPERATION": "unsupported operation",
}
_BY_CLASS = {v: k for k, v in ERRORS.items()}


def error_string(error_class: int) -> str:
    """``MPI_ERR_TRUNCATE: message truncated``."""
    name = _BY_CLASS.get(int(error_class))
    if name is None:
        return f"MPI error {error_class}"
    return f"MPI_{name}: {_TEXT.get(name, name[4:].lower().replace('_', ' '))}"


class Exception(CellsimError, RuntimeError):
    """An MPI error, as mpi4py raises it: ``str(e)`` is the MPI error string
    (``MPI_ERR_TRUNCATE: message truncated``) followed by what happened."""

    def __init__(self, error_class: int = 0, detail: str = "") -> None:
        self.error_class = int(error_class)
        self.error_code = int(error_class)
        self.detail = detail
        text = error_string(self.error_class)
        super().__init__(f"{text}: {detail}" if detail else text)

    __module__ = "cellsim.mpi"

    def Get_error_class(self) -> int:
        """The MPI error class (``MPI.ERR_TRUNCATE``...)."""
        return self.error_class

    def Get_error_code(self) -> int:
        """The MPI error code (the class here)."""
        return self.error_code

    def Get_error_string(self) -> str:
        """The MPI error string of the class."""
        return error_string(self.error_class)

    @property
    def error_string(self) -> str:
        return self.Get_error_string()

    def __int__(self) -> int:
        return self.error_code


class MPIDeadlockError(DeadlockError):
    """Every rank waits for something no other rank will do.

    ``waits`` maps each waiting rank to what it waits on
    (``"Recv(source=1, tag=7) on COMM_WORLD"``)."""

    def __init__(self, message: str, *, waits: dict[int, str] | None = None, cycle: int = 0) -> None:
        super().__init__(message, cycle=cycle)
        self.waits = dict(waits or {})


class MPIAbort(BaseException):
    """``Comm.Abort(errorcode)`` in a rank: mpirun stops every rank and ends
    with ``errorcode`` (a BaseException, so that ``except Exception`` in the
    program does not stop it)."""

    def __init__(self, errorcode: int, comm: str) -> None:
        super().__init__(f"MPI_Abort({comm}, {errorcode})")
        self.errorcode = int(errorcode)


class Errhandler(Handle):
    """An error handler handle: errors always raise ``MPI.Exception`` here
    (mpi4py's default, ``ERRORS_RETURN`` turned into exceptions)."""

    __slots__ = ()

    def Free(self) -> None:
        """Frees the handle (it becomes ``ERRHANDLER_NULL``)."""
        self._h = None


ERRHANDLER_NULL = Errhandler()
ERRORS_RETURN = Errhandler._of("MPI_ERRORS_RETURN")
ERRORS_ARE_FATAL = Errhandler._of("MPI_ERRORS_ARE_FATAL")
