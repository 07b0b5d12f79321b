"""Reduction operations: the predefined ones (``MPI.SUM``... ``MINLOC``,
``MAXLOC``), user operations (``Op.Create``) and the ``memory`` buffers a
user operation is given, with mpi4py's handle semantics.

On buffers an operation updates ``inout`` from ``incoming`` element-wise
(numpy views of the local store where the SPU combines them). A user
operation ``function(invec, inoutvec, datatype)`` gets two :class:`memory`
objects (the bytes, as mpi4py gives them) and the datatype. On Python
objects (``comm.reduce``) ``op(a, b)`` returns the result.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ._errors import ERR_OP, Exception
from ._handle import Handle

__all__ = [
    "BAND",
    "BOR",
    "BXOR",
    "LAND",
    "LOR",
    "LXOR",
    "MAX",
    "MAXLOC",
    "MIN",
    "MINLOC",
    "NO_OP",
    "OP_NULL",
    "PROD",
    "REPLACE",
    "SUM",
    "Op",
    "memory",
]


class memory(np.ndarray):
    """A byte buffer (mpi4py's ``MPI.memory``): a numpy uint8 array whose
    slices also take any buffer (an ``array.array``, bytes) byte for byte."""

    def __new__(cls, buf: Any = b"") -> memory:
        raw = buf if isinstance(buf, np.ndarray) else np.frombuffer(memoryview(buf).cast("B"), np.uint8)
        return raw.reshape(-1).view(np.uint8).view(cls)

    def __setitem__(self, key: Any, value: Any) -> None:
        if not isinstance(value, np.ndarray | int | float):
            with contextlib.suppress(TypeError):  # not a buffer: numpy takes it as it is
                value = np.frombuffer(memoryview(value).cast("B"), np.uint8)
        super().__setitem__(key, value)

    @property
    def address(self) -> int:
        return int(self.ctypes.data)

    @property
    def readonly(self) -> bool:
        return not self.flags.writeable

    def tomemory(self) -> memory:
        return self


class _OpObj:
    """The MPI object behind operation handles."""

    def __init__(
        self,
        name: str,
        ufunc: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
        pyop: Callable[[Any, Any], Any],
        commute: bool = True,
        user: Callable[..., Any] | None = None,
    ) -> None:
        self.name, self.ufunc, self.pyop, self.commute, self.user = name, ufunc, pyop, commute, user


class Op(Handle):
    """A reduction operation handle: ``MPI.SUM``... or ``Op.Create(function, commute)``."""

    __slots__ = ()
    _h: _OpObj | None

    @property
    def _obj(self) -> _OpObj:
        if self._h is None:
            raise Exception(ERR_OP, "the operation is MPI_OP_NULL")
        return self._h

    @classmethod
    def Create(cls, function: Callable[..., Any], commute: bool = False) -> Op:
        """A user operation: ``function(invec, inoutvec, datatype)`` updates
        ``inoutvec`` (``memory`` buffers) for buffers; for Python objects it
        is called with ``datatype=None`` and returns the result."""

        def pyop(a: Any, b: Any) -> Any:
            return function(a, b, None)

        return cls._of(
            _OpObj(f"user {getattr(function, '__name__', 'function')}", None, pyop, commute, function)
        )

    def Free(self) -> None:
        """Frees a user operation (the handle becomes ``OP_NULL``)."""
        o = self._obj
        if o.user is None:
            raise Exception(ERR_OP, f"MPI_Op_free: {o.name} is a predefined operation")
        self._h = None

    def apply(self, incoming: np.ndarray, inout: np.ndarray, datatype: Any) -> None:
        """``inout = incoming op inout`` element-wise, in place."""
        o = self._obj
        if o.user is not None:
            o.user(memory(incoming), memory(inout), datatype)
        else:
            assert o.ufunc is not None
            inout[...] = o.ufunc(incoming, inout)

    def __call__(self, a: Any, b: Any) -> Any:
        return self._obj.pyop(a, b)

    def Is_commutative(self) -> bool:
        """Whether the operation commutes."""
        return self._obj.commute

    @property
    def is_commutative(self) -> bool:
        return self.Is_commutative()

    @property
    def is_predefined(self) -> bool:
        return self._h is None or self._h.user is None

    @property
    def name(self) -> str:
        return self._h.name if self._h else "MPI_OP_NULL"

    def Reduce_local(self, inbuf: Any, inoutbuf: Any) -> None:
        """``inoutbuf = inbuf op inoutbuf``, element-wise, in this rank (no communication)."""
        from ._message import parse

        a, b = parse(inbuf), parse(inoutbuf)
        if a.count != b.count:
            raise ValueError(f"Reduce_local: mismatch in inbuf count {a.count} and inoutbuf count {b.count}")
        if a.datatype != b.datatype:
            raise ValueError("Reduce_local: mismatch in inbuf and inoutbuf MPI datatypes")
        dt = a.datatype
        if not dt.contiguous or not b.writable:
            raise Exception(ERR_OP, f"Reduce_local needs writable buffers of a named datatype, not {dt!r}")
        n = a.count * dt.size
        va, vb = a.raw[:n].view(dt.dtype), b.raw[:n].view(dt.dtype)
        self.apply(va, vb, dt)

    def __repr__(self) -> str:
        return f"<cellsim.mpi.Op {self.name}>"


def _loc(better: Callable[[Any, Any], Any]) -> tuple[Callable[..., Any], Callable[[Any, Any], Any]]:
    """MINLOC/MAXLOC on (value, index) pairs: the better value, the lower index on ties."""

    def on_arrays(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        take = better(a["v"], b["v"]) | ((a["v"] == b["v"]) & (a["i"] < b["i"]))
        return np.where(take, a, b)

    def on_objects(u: Any, v: Any) -> Any:
        if better(u[0], v[0]):
            return u
        if better(v[0], u[0]):
            return v
        return u if u[1] <= v[1] else v

    return on_arrays, on_objects


def _op(name: str, ufunc: Any, pyop: Callable[[Any, Any], Any]) -> Op:
    return Op._of(_OpObj(name, ufunc, pyop))


OP_NULL = Op()
SUM = _op("MPI_SUM", np.add, operator.add)
PROD = _op("MPI_PROD", np.multiply, operator.mul)
MAX = _op("MPI_MAX", np.maximum, lambda a, b: a if a >= b else b)
MIN = _op("MPI_MIN", np.minimum, lambda a, b: a if a <= b else b)
LAND = _op("MPI_LAND", np.logical_and, lambda a, b: bool(a) and bool(b))
LOR = _op("MPI_LOR", np.logical_or, lambda a, b: bool(a) or bool(b))
LXOR = _op("MPI_LXOR", np.logical_xor, lambda a, b: bool(a) != bool(b))
BAND = _op("MPI_BAND", np.bitwise_and, operator.and_)
BOR = _op("MPI_BOR", np.bitwise_or, operator.or_)
BXOR = _op("MPI_BXOR", np.bitwise_xor, operator.xor)
MINLOC = _op("MPI_MINLOC", *_loc(operator.lt))
MAXLOC = _op("MPI_MAXLOC", *_loc(operator.gt))
REPLACE = _op("MPI_REPLACE", lambda a, b: a, lambda a, b: b)
NO_OP = _op("MPI_NO_OP", lambda a, b: b, lambda a, b: a)
