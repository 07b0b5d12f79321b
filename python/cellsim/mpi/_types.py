"""MPI constants and ``Status``, with mpi4py's names and MPICH's values
(``ANY_SOURCE = -2``, ``ANY_TAG = -1``, ``PROC_NULL = -1``), as mpi4py built
against MPICH shows them; with the error classes, datatypes and operations
of their own modules, this is the namespace the rest of the library uses.
"""

from __future__ import annotations

from typing import Any

from . import _datatype, _errors, _op
from ._datatype import *  # noqa: F403
from ._datatype import BYTE, Datatype, datatype_of
from ._errors import *  # noqa: F403
from ._errors import ERR_ARG, SUCCESS, Exception
from ._op import *  # noqa: F403

__all__ = [
    "ANY_SOURCE",
    "ANY_TAG",
    "APPNUM",
    "BOTTOM",
    "BSEND_OVERHEAD",
    "CART",
    "COMM_TYPE_SHARED",
    "CONGRUENT",
    "DIST_GRAPH",
    "GRAPH",
    "HOST",
    "IDENT",
    "IN_PLACE",
    "IO",
    "KEYVAL_INVALID",
    "LASTUSEDCODE",
    "MAX_ERROR_STRING",
    "MAX_INFO_KEY",
    "MAX_INFO_VAL",
    "MAX_LIBRARY_VERSION_STRING",
    "MAX_OBJECT_NAME",
    "MAX_PORT_NAME",
    "MAX_PROCESSOR_NAME",
    "PROC_NULL",
    "ROOT",
    "SIMILAR",
    "TAG_UB",
    "THREAD_FUNNELED",
    "THREAD_MULTIPLE",
    "THREAD_SERIALIZED",
    "THREAD_SINGLE",
    "UNDEFINED",
    "UNEQUAL",
    "UNIVERSE_SIZE",
    "UNWEIGHTED",
    "WEIGHTS_EMPTY",
    "WTIME_IS_GLOBAL",
    "Status",
]
__all__ += _errors.__all__ + _datatype.__all__ + _op.__all__

ANY_SOURCE = -2
ANY_TAG = -1
PROC_NULL = -1
ROOT = -3
UNDEFINED = -32766
MAX_TAG = 2**31 - 1
"""The largest tag a program may use (the value of the ``TAG_UB`` attribute)."""
BSEND_OVERHEAD = 96
"""Bytes ``Attach_buffer`` needs per buffered send beyond its data (MPICH's)."""
KEYVAL_INVALID = 0x24000000
# attribute keys of COMM_WORLD
TAG_UB, HOST, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE, LASTUSEDCODE, APPNUM = (
    0x64400001,
    0x64400003,
    0x64400005,
    0x64400007,
    0x64400009,
    0x6440000D,
    0x6440000B,
)
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3
GRAPH, CART, DIST_GRAPH = 1, 2, 3
THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3
COMM_TYPE_SHARED = 1
MAX_PROCESSOR_NAME = 128
MAX_ERROR_STRING = 512
MAX_OBJECT_NAME = 128
MAX_LIBRARY_VERSION_STRING = 8192
MAX_INFO_KEY = 255
MAX_INFO_VAL = 1024
MAX_PORT_NAME = 256


class _Sentinel(int):
    """``BOTTOM``, ``IN_PLACE``: special buffer addresses, as mpi4py's are ints."""

    _name = ""

    def __new__(cls, value: int, name: str) -> _Sentinel:
        s = super().__new__(cls, value)
        s._name = name
        return s

    def __repr__(self) -> str:
        return self._name


BOTTOM: Any = _Sentinel(0, "BOTTOM")
"""``MPI.BOTTOM``: address zero (a buffer given as absolute addresses; here: no buffer)."""
IN_PLACE: Any = _Sentinel(-1, "IN_PLACE")
"""``MPI.IN_PLACE``: the send buffer is the receive buffer (collectives)."""


class _Weights:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNWEIGHTED: Any = _Weights("UNWEIGHTED")
WEIGHTS_EMPTY: Any = _Weights("WEIGHTS_EMPTY")


class Status:
    """What a receive or probe matched: ``source``, ``tag``, ``error`` and
    the size received, with mpi4py's getters and setters."""

    def __init__(self, status: Status | None = None) -> None:
        if status is not None and not isinstance(status, Status):
            raise TypeError(f"Status({status!r}): expected a Status")
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.error = SUCCESS
        self._nbytes = 0
        self.cancelled = False
        if status is not None:
            self.source, self.tag, self.error = status.source, status.tag, status.error
            self._nbytes, self.cancelled = status._nbytes, status.cancelled

    def _set(self, source: int, tag: int, nbytes: int, error: int = SUCCESS) -> None:
        self.source, self.tag, self._nbytes, self.error = source, tag, nbytes, error

    def Get_source(self) -> int:
        """The rank (in the communicator) that sent the message."""
        return self.source

    def Set_source(self, source: int) -> None:
        self.source = int(source)

    def Get_tag(self) -> int:
        """The message's tag."""
        return self.tag

    def Set_tag(self, tag: int) -> None:
        self.tag = int(tag)

    def Get_error(self) -> int:
        """The error class of the operation (``SUCCESS``)."""
        return self.error

    def Set_error(self, error: int) -> None:
        self.error = int(error)

    def Get_count(self, datatype: Datatype = BYTE) -> int:
        """Instances of ``datatype`` received (``UNDEFINED`` if not a whole number)."""
        size = datatype_of(datatype).size
        if size == 0:
            return 0
        if self._nbytes % size:
            return UNDEFINED
        return self._nbytes // size

    def Get_elements(self, datatype: Datatype = BYTE) -> int:
        """Basic elements of ``datatype`` received (``UNDEFINED`` if a basic element is cut)."""
        tm = datatype_of(datatype).typemap
        n = tm.elements_in(self._nbytes)
        whole = self._nbytes // tm.size if tm.size else 0
        packed = whole * tm.size + _bytes_of(tm, n - whole * tm.elements)
        return n if packed == self._nbytes else UNDEFINED

    def Set_elements(self, datatype: Datatype, count: int) -> None:
        """Makes the status say ``count`` basic elements of ``datatype`` were received."""
        tm = datatype_of(datatype).typemap
        if tm.elements == 0:
            if count:
                raise Exception(ERR_ARG, f"Set_elements: {datatype} has no elements")
            self._nbytes = 0
            return
        whole, rest = divmod(int(count), tm.elements)
        self._nbytes = whole * tm.size + _bytes_of(tm, rest)

    def Is_cancelled(self) -> bool:
        """Whether the request was cancelled."""
        return bool(self.cancelled)

    def Set_cancelled(self, flag: bool) -> None:
        self.cancelled = bool(flag)

    @property
    def count(self) -> int:
        """Bytes received (mpi4py's ``Status.count`` with the byte datatype)."""
        return self._nbytes

    def __repr__(self) -> str:
        return f"Status(source={self.source}, tag={self.tag}, count={self._nbytes})"


def _bytes_of(tm: Any, elements: int) -> int:
    """Bytes of the first ``elements`` basic elements of one instance."""
    n = 0
    for b, k in tm.runs:
        take = min(k, elements)
        n += take * b.size
        elements -= take
        if not elements:
            break
    return n
