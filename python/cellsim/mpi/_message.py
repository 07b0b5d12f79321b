"""Buffer specifications, as mpi4py reads them, and where their bytes go on
the simulated chip.

A message is a buffer (a numpy array or anything with the buffer protocol)
or a list: ``[buf, datatype]``, ``[buf, count, datatype]``, ``[buf, (count,
displ), datatype]``, ``[buf, count, displ, datatype]``; the vector
collectives take ``[buf, counts, displs, datatype]`` or ``[buf, (counts,
displs), datatype]``, ``Alltoallw`` ``[buf, (counts, displs), datatypes]``
(displacements in bytes). ``None`` as the buffer is no buffer: ``[None,
"B"]`` is a message of zero bytes; ``BOTTOM`` is address zero, for a
datatype whose displacements are absolute host addresses
(``MPI.Get_address``). A datatype is a
:class:`~cellsim.mpi.Datatype` or a type character (``"d"``); without one
it comes from the buffer's format. Counts and displacements count
instances of the datatype (its extent apart); the count left out is what
the buffer holds (shared out among the ranks in a collective).

:func:`place` and :func:`place_vector` give the simulated buffer a
protocol moves: the host bytes placed in main memory (or the simulated
memory the buffer already is), packed by the SPE first for a
non-contiguous datatype (:mod:`cellsim.mpi._dmalist`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..machine import EaBuffer, LsBuffer
from . import _types as T
from ._dmalist import PackedRef
from ._foreign import exported, host_memory
from ._runtime import BufRef, Rank

__all__ = ["Message", "Vector", "parse", "parse_vector", "parse_w", "place", "place_bytes", "place_vector"]

_EMPTY = np.zeros(0, np.uint8)


def as_bytes(obj: Any) -> tuple[np.ndarray, T.Datatype | None, bool]:
    """A buffer as flat bytes (memory order), the datatype of its format, and whether it is writable."""
    if obj is None or obj is T.BOTTOM:
        return _EMPTY, None, True
    if isinstance(obj, EaBuffer | LsBuffer):
        return obj.array(np.uint8), T.BYTE, True
    foreign = exported(obj)
    if isinstance(obj, np.ndarray):
        arr = obj
    elif foreign is not None:
        arr, writable = foreign
        return (arr.view(np.uint8) if arr.size else _EMPTY), _format_type(arr.dtype), writable
    else:
        try:
            mv = memoryview(obj)
        except TypeError:
            raise TypeError(
                f"message: {type(obj).__name__} is not a buffer (use a numpy array, or a list "
                "[buffer, datatype])"
            ) from None
        arr = np.frombuffer(mv.cast("B") if mv.ndim else mv, np.uint8) if mv.nbytes else _EMPTY
        fmt = mv.format
        dt = _format_type(fmt)
        return (arr if mv.nbytes else _EMPTY), dt, not mv.readonly
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        raise T.Exception(
            T.ERR_BUFFER,
            "the buffer is not contiguous (pass a contiguous numpy array, or a derived datatype)",
        )
    raw = arr.reshape(-1, order="A").view(np.uint8) if arr.size else _EMPTY
    return raw, _format_type(arr.dtype), bool(arr.flags.writeable)


def _format_type(fmt: Any) -> T.Datatype | None:
    try:
        return T.datatype_of(fmt)
    except T.Exception:
        return None


def datatype(x: Any) -> T.Datatype:
    """A datatype argument: a Datatype or a type character."""
    if isinstance(x, T.Datatype):
        if not x:
            raise T.Exception(T.ERR_TYPE, "the datatype is MPI_DATATYPE_NULL")
        return x
    if isinstance(x, str):
        return T.datatype_of(x)
    raise T.Exception(T.ERR_TYPE, f"{x!r} is not an MPI datatype")


def _is_datatype(x: Any) -> bool:
    return isinstance(x, T.Datatype | str)


def _extent(dt: T.Datatype, what: str) -> int:
    ext = dt.extent
    if ext <= 0:
        raise ValueError(f"message: cannot {what}, datatype extent {ext} (lb:{dt.lb}, ub:{dt.ub})")
    return ext


@dataclass
class Message:
    """A parsed message: the bytes from its displacement on, the datatype,
    the count (per rank in a collective) and whether the buffer is writable."""

    raw: np.ndarray
    datatype: T.Datatype
    count: int
    writable: bool
    bottom: bool = False
    """The buffer is ``BOTTOM``: the datatype's displacements are host addresses."""

    @property
    def nbytes(self) -> int:
        """Packed bytes of the message."""
        return self.count * self.datatype.size


def _split(spec: Any) -> tuple[Any, Any, Any, Any]:
    """``(buf, count, displ, datatype)`` of a message spec (mpi4py's rules)."""
    if not isinstance(spec, list | tuple):
        return spec, None, None, None
    if len(spec) == 2:
        buf, count = spec
        if _is_datatype(count):
            return buf, None, None, count
        if isinstance(count, list | tuple):
            return buf, count[0], count[1], None
        return buf, count, None, None
    if len(spec) == 3:
        buf, count, dt = spec
        if isinstance(count, list | tuple):
            return buf, count[0], count[1], dt
        return buf, count, None, dt
    if len(spec) == 4:
        return tuple(spec)  # type: ignore[return-value]
    raise ValueError(f"message: expecting a buffer or a list of 2 to 4 items, not {len(spec)} items")


def _typed(buf: Any, dt_arg: Any) -> tuple[np.ndarray, T.Datatype, bool]:
    raw, natural, w = as_bytes(buf)
    if dt_arg is not None:
        return raw, datatype(dt_arg), w
    if natural is None:
        if buf is None or buf is T.BOTTOM:
            raise ValueError("message: a buffer given as None needs a datatype, as in [None, 'B']")
        raise T.Exception(T.ERR_TYPE, "no MPI datatype for the buffer's format; give one: [buf, datatype]")
    return raw, natural, w


def parse(spec: Any, blocks: int = 0) -> Message:
    """A message; ``blocks`` > 1: the buffer holds that many blocks (a collective's share per rank)."""
    buf, count, displ, dt_arg = _split(spec)
    raw, dt, w = _typed(buf, dt_arg)
    if displ is not None and int(displ):
        d = int(displ)
        if d < 0:
            raise ValueError(f"message: negative displacement {d}")
        off = d * _extent(dt, "handle displacement")
        if off > raw.size:
            raise ValueError(f"message: displacement {d} out of bounds (the buffer holds {raw.size} bytes)")
        raw = raw[off:]
    if count is not None:
        n = int(count)
        if n < 0:
            raise ValueError(f"message: negative count {n}")
        if n > 0 and buf is None:
            raise ValueError(f"message: buffer is None but count is {n}")
    elif raw.size:
        ext = _extent(dt, "infer count")
        if raw.size % ext:
            raise ValueError(
                f"message: cannot infer count, buffer length {raw.size} is not a multiple of datatype "
                f"extent {ext}"
            )
        n = raw.size // ext
        if blocks > 1:
            if n % blocks:
                raise ValueError(
                    f"message: cannot infer count, {n} entries are not a multiple of {blocks} blocks"
                )
            n //= blocks
    else:
        n = 0
    return Message(raw, dt, n, w, buf is T.BOTTOM)


@dataclass
class Vector:
    """A vector message: counts and displacements (in extents; bytes for ``Alltoallw``) per block."""

    raw: np.ndarray
    datatypes: list[T.Datatype]
    counts: list[int]
    displs: list[int]
    writable: bool
    bytes_displs: bool = False
    bottom: bool = False


def _ints(v: Any, blocks: int, what: str) -> list[int]:
    out = [int(x) for x in v]
    if len(out) != blocks:
        raise ValueError(f"message: {len(out)} {what} for {blocks} blocks (one per rank)")
    return out


def parse_vector(spec: Any, blocks: int) -> Vector:
    """A vector message of ``blocks`` blocks (mpi4py's rules for counts and displacements)."""
    counts: Any = None
    displs: Any = None
    dt_arg: Any = None
    if isinstance(spec, list | tuple):
        if len(spec) == 2:
            buf, counts = spec
            if _is_datatype(counts):
                counts, dt_arg = None, counts
            elif isinstance(counts, tuple):
                counts, displs = counts
        elif len(spec) == 3:
            buf, counts, dt_arg = spec
            if isinstance(counts, tuple):
                counts, displs = counts
        elif len(spec) == 4:
            buf, counts, displs, dt_arg = spec
        else:
            raise ValueError(f"message: expecting 2 to 4 items, not {len(spec)}")
    else:
        buf = spec
    raw, dt, w = _typed(buf, dt_arg)
    if counts is None:
        total = raw.size // _extent(dt, "infer count") if raw.size else 0
        cs = [total // blocks + (total % blocks > i) for i in range(blocks)]
    elif isinstance(counts, int | np.integer):
        cs = [int(counts)] * blocks
    else:
        cs = _ints(counts, blocks, "counts")
    if displs is None:
        ds = [sum(cs[:i]) for i in range(blocks)]
    elif isinstance(displs, int | np.integer):
        ds = [int(displs) * i for i in range(blocks)]
    else:
        ds = _ints(displs, blocks, "displacements")
    return Vector(raw, [dt] * blocks, cs, ds, w, bottom=buf is T.BOTTOM)


def parse_w(spec: Any, blocks: int) -> Vector:
    """An ``Alltoallw`` message: ``[buf, (counts, displs), datatypes]`` (displacements in bytes)."""
    if not isinstance(spec, list | tuple) or len(spec) not in (2, 3, 4):
        raise ValueError("message: expecting [buf, (counts, displs), datatypes]")
    if len(spec) == 2:
        buf, types = spec
        counts, displs = [1] * blocks, [0] * blocks
    elif len(spec) == 3:
        buf, (counts, displs), types = spec
    else:
        buf, counts, displs, types = spec
    raw, _, w = as_bytes(buf)
    dts = [datatype(t) for t in (types if isinstance(types, list | tuple) else [types] * blocks)]
    if len(dts) != blocks:
        raise ValueError(f"message: {len(dts)} datatypes for {blocks} blocks")
    cs, ds = _ints(counts, blocks, "counts"), _ints(displs, blocks, "displacements")
    return Vector(raw, dts, cs, ds, w, True, buf is T.BOTTOM)


# -- where the bytes go -----------------------------------------------------------------------------


def place_bytes(r: Rank, raw: np.ndarray, nbytes: int, writable: bool, w: bool) -> BufRef:
    """The first ``nbytes`` of a buffer as they are (``w``: whether the host buffer is writable)."""
    if nbytes > raw.size:
        raise T.Exception(T.ERR_BUFFER, f"the buffer holds {raw.size} bytes but the message needs {nbytes}")
    ref = r.bufref(raw, T.BYTE, nbytes, writable)
    ref.readonly = writable and not w
    if ref.readonly and ref.host is None:
        raise T.Exception(T.ERR_BUFFER, "the receive buffer is read-only")
    return ref


def _absolute(seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The host memory that blocks at absolute addresses span, and the blocks within it."""
    if not len(seg):
        return _EMPTY, seg
    lo, hi = int(seg[:, 0].min()), int((seg[:, 0] + seg[:, 1]).max())
    return host_memory(lo, hi - lo), seg - np.array([lo, 0], np.int64)


def _packed(
    r: Rank,
    raw: np.ndarray,
    seg: np.ndarray,
    writable: bool,
    w: bool,
    dt: T.Datatype,
    count: int,
    bottom: bool,
) -> BufRef:
    """A message of the blocks ``seg`` of a buffer (``bottom``: of host memory), moved packed."""
    if bottom:
        raw, seg = _absolute(seg)
    if len(seg) and int(seg[:, 0].min()) < 0:
        raise T.Exception(T.ERR_BUFFER, "the datatype reaches before the start of the buffer")
    end = int((seg[:, 0] + seg[:, 1]).max()) if len(seg) else 0
    return PackedRef.make(r, place_bytes(r, raw, end, writable, w), seg, dt, count)


def place(r: Rank, m: Message, writable: bool) -> BufRef:
    """The simulated buffer of a message (``writable``: it is received into)."""
    dt = m.datatype
    if dt.contiguous and not m.bottom:
        ref = place_bytes(r, m.raw, m.count * dt.size, writable, m.writable)
        ref.datatype, ref.count = dt, m.count
        return ref
    return _packed(r, m.raw, dt.typemap.tiled(m.count), writable, m.writable, dt, m.count, m.bottom)


def place_vector(r: Rank, v: Vector, writable: bool) -> tuple[BufRef, list[int], list[int]]:
    """The simulated buffer of a vector message and each block's byte offset and size in it."""
    dts = v.datatypes
    unit = [1 if v.bytes_displs else dt.extent for dt in dts]
    sizes = [c * dt.size for c, dt in zip(v.counts, dts, strict=True)]
    if all(dt.contiguous for dt in dts) and not v.bottom:
        offsets = [d * u for d, u in zip(v.displs, unit, strict=True)]
        if min(offsets, default=0) < 0:
            raise T.Exception(T.ERR_BUFFER, f"negative displacements {v.displs}")
        end = max((o + s for o, s in zip(offsets, sizes, strict=True) if s), default=0)
        return place_bytes(r, v.raw, end, writable, v.writable), offsets, sizes
    parts = [dt.typemap.tiled(c, d * u) for dt, c, d, u in zip(dts, v.counts, v.displs, unit, strict=True)]
    seg = np.concatenate(parts) if parts else np.zeros((0, 2), np.int64)
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    return _packed(r, v.raw, seg, writable, v.writable, T.BYTE, sum(sizes), v.bottom), offsets, sizes
