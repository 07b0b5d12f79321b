"""MPI constants, datatypes, reduction operations, ``Status`` and the MPI
exception, with mpi4py's names and behaviour.

Constants take MPICH's values (``ANY_SOURCE = -2``, ``ANY_TAG = -1``,
``PROC_NULL = -1``), as mpi4py built against MPICH shows them.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..exceptions import CellsimError, DeadlockError

__all__ = [
    "ANY_SOURCE",
    "ANY_TAG",
    "BAND",
    "BOOL",
    "BOR",
    "BXOR",
    "BYTE",
    "CHAR",
    "COMPLEX",
    "C_BOOL",
    "C_DOUBLE_COMPLEX",
    "C_FLOAT_COMPLEX",
    "DOUBLE",
    "DOUBLE_COMPLEX",
    "ERR_ARG",
    "ERR_BUFFER",
    "ERR_COMM",
    "ERR_COUNT",
    "ERR_OTHER",
    "ERR_RANK",
    "ERR_ROOT",
    "ERR_TAG",
    "ERR_TRUNCATE",
    "ERR_TYPE",
    "FLOAT",
    "INT",
    "INT8_T",
    "INT16_T",
    "INT32_T",
    "INT64_T",
    "IN_PLACE",
    "LAND",
    "LONG",
    "LONG_LONG",
    "LOR",
    "LXOR",
    "MAX",
    "MIN",
    "PROC_NULL",
    "PROD",
    "SHORT",
    "SIGNED_CHAR",
    "SUCCESS",
    "SUM",
    "TAG_UB",
    "UINT8_T",
    "UINT16_T",
    "UINT32_T",
    "UINT64_T",
    "UNDEFINED",
    "UNSIGNED",
    "UNSIGNED_CHAR",
    "UNSIGNED_LONG",
    "UNSIGNED_LONG_LONG",
    "UNSIGNED_SHORT",
    "Datatype",
    "Exception",
    "MPIDeadlockError",
    "Op",
    "Status",
]

ANY_SOURCE = -2
ANY_TAG = -1
PROC_NULL = -1
UNDEFINED = -32766
TAG_UB = 2**31 - 1
"""The largest tag a program may use."""

SUCCESS = 0
ERR_BUFFER = 1
ERR_COUNT = 2
ERR_TYPE = 3
ERR_TAG = 4
ERR_COMM = 5
ERR_RANK = 6
ERR_ROOT = 7
ERR_TRUNCATE = 14
ERR_OTHER = 15
ERR_ARG = 12

_ERROR_STRINGS = {
    SUCCESS: "MPI_SUCCESS: no errors",
    ERR_BUFFER: "MPI_ERR_BUFFER: invalid buffer pointer",
    ERR_COUNT: "MPI_ERR_COUNT: invalid count argument",
    ERR_TYPE: "MPI_ERR_TYPE: invalid datatype",
    ERR_TAG: "MPI_ERR_TAG: invalid tag",
    ERR_COMM: "MPI_ERR_COMM: invalid communicator",
    ERR_RANK: "MPI_ERR_RANK: invalid rank",
    ERR_ROOT: "MPI_ERR_ROOT: invalid root",
    ERR_ARG: "MPI_ERR_ARG: invalid argument of some other kind",
    ERR_TRUNCATE: "MPI_ERR_TRUNCATE: message truncated",
    ERR_OTHER: "MPI_ERR_OTHER: known error not in list",
}


class _InPlace:
    def __repr__(self) -> str:
        return "IN_PLACE"


IN_PLACE: Any = _InPlace()
"""``MPI.IN_PLACE``: the send buffer is the receive buffer (collectives)."""


class Exception(CellsimError, builtins.Exception):
    """An MPI error, as mpi4py raises it: ``str(e)`` is the MPI error string
    (``MPI_ERR_TRUNCATE: message truncated``) followed by what happened."""

    def __init__(self, error_class: int, detail: str = "") -> None:
        self.error_class = int(error_class)
        self.error_code = int(error_class)
        self.detail = detail
        text = _ERROR_STRINGS.get(self.error_class, f"MPI error {self.error_class}")
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
        return _ERROR_STRINGS.get(self.error_class, f"MPI error {self.error_class}")


class MPIDeadlockError(DeadlockError):
    """Every rank waits for something no other rank will do.

    ``waits`` maps each waiting rank to what it waits on
    (``"Recv(source=1, tag=7) on COMM_WORLD"``)."""

    def __init__(self, message: str, *, waits: dict[int, str] | None = None, cycle: int = 0) -> None:
        super().__init__(message, cycle=cycle)
        self.waits = dict(waits or {})


class Datatype:
    """An MPI datatype: a name, a numpy dtype (native byte order, as mpi4py
    uses) and a one-byte code carried in the message metadata."""

    def __init__(self, name: str, dtype: Any, code: int) -> None:
        self.name = name
        self.dtype = np.dtype(dtype)
        self.code = code

    @property
    def size(self) -> int:
        """Bytes per element."""
        return int(self.dtype.itemsize)

    def Get_size(self) -> int:
        """Bytes per element."""
        return self.size

    def Get_extent(self) -> tuple[int, int]:
        """``(lower bound, extent)``: ``(0, size)`` for these basic types."""
        return 0, self.size

    @property
    def extent(self) -> int:
        """Bytes between consecutive elements."""
        return self.size

    def Get_name(self) -> str:
        """``MPI_DOUBLE``..."""
        return self.name

    def __repr__(self) -> str:
        return f"<cellsim.mpi.Datatype {self.name}>"


_DTYPES: list[Datatype] = []


def _dt(name: str, dtype: Any) -> Datatype:
    d = Datatype(name, dtype, len(_DTYPES) + 1)
    _DTYPES.append(d)
    return d


BYTE = _dt("MPI_BYTE", np.uint8)
CHAR = _dt("MPI_CHAR", np.int8)
SIGNED_CHAR = _dt("MPI_SIGNED_CHAR", np.int8)
UNSIGNED_CHAR = _dt("MPI_UNSIGNED_CHAR", np.uint8)
SHORT = _dt("MPI_SHORT", np.int16)
UNSIGNED_SHORT = _dt("MPI_UNSIGNED_SHORT", np.uint16)
INT = _dt("MPI_INT", np.int32)
UNSIGNED = _dt("MPI_UNSIGNED", np.uint32)
LONG = _dt("MPI_LONG", np.int64)
UNSIGNED_LONG = _dt("MPI_UNSIGNED_LONG", np.uint64)
LONG_LONG = _dt("MPI_LONG_LONG", np.int64)
UNSIGNED_LONG_LONG = _dt("MPI_UNSIGNED_LONG_LONG", np.uint64)
FLOAT = _dt("MPI_FLOAT", np.float32)
DOUBLE = _dt("MPI_DOUBLE", np.float64)
C_BOOL = _dt("MPI_C_BOOL", np.bool_)
BOOL = C_BOOL
INT8_T = _dt("MPI_INT8_T", np.int8)
INT16_T = _dt("MPI_INT16_T", np.int16)
INT32_T = _dt("MPI_INT32_T", np.int32)
INT64_T = _dt("MPI_INT64_T", np.int64)
UINT8_T = _dt("MPI_UINT8_T", np.uint8)
UINT16_T = _dt("MPI_UINT16_T", np.uint16)
UINT32_T = _dt("MPI_UINT32_T", np.uint32)
UINT64_T = _dt("MPI_UINT64_T", np.uint64)
C_FLOAT_COMPLEX = _dt("MPI_C_FLOAT_COMPLEX", np.complex64)
C_DOUBLE_COMPLEX = _dt("MPI_C_DOUBLE_COMPLEX", np.complex128)
COMPLEX = C_FLOAT_COMPLEX
DOUBLE_COMPLEX = C_DOUBLE_COMPLEX

# numpy type characters -> datatypes, for buffers given without one (mpi4py's typemap)
_BY_CHAR: dict[str, Datatype] = {
    "b": SIGNED_CHAR,
    "B": UNSIGNED_CHAR,
    "h": SHORT,
    "H": UNSIGNED_SHORT,
    "i": INT,
    "I": UNSIGNED,
    "l": LONG,
    "L": UNSIGNED_LONG,
    "q": LONG_LONG,
    "Q": UNSIGNED_LONG_LONG,
    "f": FLOAT,
    "d": DOUBLE,
    "?": C_BOOL,
    "F": C_FLOAT_COMPLEX,
    "D": C_DOUBLE_COMPLEX,
    "c": CHAR,
}


def datatype_of(dtype: Any) -> Datatype:
    """The MPI datatype for a numpy dtype or a type character (``'d'``)."""
    if isinstance(dtype, Datatype):
        return dtype
    if isinstance(dtype, str) and dtype in _BY_CHAR:
        return _BY_CHAR[dtype]
    dt = np.dtype(dtype)
    if dt.char in _BY_CHAR and dt.isnative:
        return _BY_CHAR[dt.char]
    for d in _DTYPES:
        if d.dtype == dt.newbyteorder("=") and dt.kind == d.dtype.kind:
            return d
    if dt.kind == "V" or dt.kind == "S" or dt.kind == "U":
        return BYTE
    raise Exception(ERR_TYPE, f"no MPI datatype for numpy dtype {dt}")


def datatype_by_code(code: int) -> Datatype:
    """The datatype whose metadata code is ``code`` (``BYTE`` if unknown)."""
    return _DTYPES[code - 1] if 1 <= code <= len(_DTYPES) else BYTE


class Op:
    """A reduction operation: ``MPI.SUM``... or ``Op.Create(function, commute)``.

    ``function(invec, inoutvec, datatype)`` updates ``inoutvec`` in place
    (numpy arrays); for Python objects ``op(a, b)`` returns the result.
    """

    def __init__(
        self,
        name: str,
        ufunc: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
        pyop: Callable[[Any, Any], Any],
        commute: bool = True,
        user: Callable[[np.ndarray, np.ndarray, Datatype], None] | None = None,
    ) -> None:
        self.name = name
        self.ufunc = ufunc
        self.pyop = pyop
        self.commute = commute
        self.user = user

    @classmethod
    def Create(cls, function: Callable[..., Any], commute: bool = False) -> Op:
        """A user-defined operation (``function(invec, inoutvec, datatype)``)."""

        def pyop(a: Any, b: Any) -> Any:
            return function(a, b, None)

        return cls("user", None, pyop, commute, function)

    def apply(self, incoming: np.ndarray, inout: np.ndarray, datatype: Datatype) -> None:
        """``inout = incoming op inout`` element-wise, in place."""
        if self.user is not None:
            self.user(incoming, inout, datatype)
        else:
            assert self.ufunc is not None
            inout[...] = self.ufunc(incoming, inout)

    def __call__(self, a: Any, b: Any) -> Any:
        return self.pyop(a, b)

    def Is_commutative(self) -> bool:
        """Whether the operation commutes."""
        return self.commute

    def Free(self) -> None:
        """Frees a user operation (nothing to do)."""

    def __repr__(self) -> str:
        return f"<cellsim.mpi.Op {self.name}>"


def _land(a: Any, b: Any) -> Any:
    return np.logical_and(a, b)


def _lor(a: Any, b: Any) -> Any:
    return np.logical_or(a, b)


def _lxor(a: Any, b: Any) -> Any:
    return np.logical_xor(a, b)


SUM = Op("MPI_SUM", np.add, operator.add)
PROD = Op("MPI_PROD", np.multiply, operator.mul)
MAX = Op("MPI_MAX", np.maximum, lambda a, b: a if a >= b else b)
MIN = Op("MPI_MIN", np.minimum, lambda a, b: a if a <= b else b)
LAND = Op("MPI_LAND", _land, lambda a, b: bool(a) and bool(b))
LOR = Op("MPI_LOR", _lor, lambda a, b: bool(a) or bool(b))
LXOR = Op("MPI_LXOR", _lxor, lambda a, b: bool(a) != bool(b))
BAND = Op("MPI_BAND", np.bitwise_and, operator.and_)
BOR = Op("MPI_BOR", np.bitwise_or, operator.or_)
BXOR = Op("MPI_BXOR", np.bitwise_xor, operator.xor)


class Status:
    """What a receive or probe matched: ``source``, ``tag``, ``count`` (bytes)
    and ``error``, with mpi4py's getters."""

    def __init__(self) -> None:
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.error = SUCCESS
        self._nbytes = 0
        self.cancelled = False

    def _set(self, source: int, tag: int, nbytes: int, error: int = SUCCESS) -> None:
        self.source, self.tag, self._nbytes, self.error = source, tag, nbytes, error

    def Get_source(self) -> int:
        """The rank (in the communicator) that sent the message."""
        return self.source

    def Get_tag(self) -> int:
        """The message's tag."""
        return self.tag

    def Get_error(self) -> int:
        """The error class of the operation (``SUCCESS``)."""
        return self.error

    def Get_count(self, datatype: Datatype = BYTE) -> int:
        """Elements of ``datatype`` received (``UNDEFINED`` if not a whole number)."""
        dt = datatype_of(datatype)
        if self._nbytes % dt.size:
            return UNDEFINED
        return self._nbytes // dt.size

    def Get_elements(self, datatype: Datatype) -> int:
        """Basic elements of ``datatype`` received."""
        return self.Get_count(datatype)

    def Is_cancelled(self) -> bool:
        """Whether the request was cancelled (never, here)."""
        return self.cancelled

    @property
    def count(self) -> int:
        """Bytes received (mpi4py's ``Status.count`` with the byte datatype)."""
        return self._nbytes

    def __repr__(self) -> str:
        return f"Status(source={self.source}, tag={self.tag}, count={self._nbytes})"
