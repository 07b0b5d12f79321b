"""MPI datatypes: the named ones (with the numpy dtype a buffer of them
holds) and the derived ones (``Create_vector``, ``Create_struct``...), with
mpi4py's handle semantics and its introspection (envelope, contents,
``decode``).

A :class:`Datatype` is a *handle*: ``MPI.Datatype(t)`` refers to the same
MPI object as ``t`` (they compare equal), ``Free`` makes the handle null.
The object holds the :class:`~cellsim.mpi._typemap.Typemap` (where the
bytes lie) and how it was built. Contiguous datatypes move as plain bytes;
the others are gathered and scattered with DMA lists
(:mod:`cellsim.mpi._dmalist`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _typemap as TM
from ._errors import ERR_ARG, ERR_BUFFER, ERR_TYPE, Exception
from ._handle import Handle
from ._typemap import byte_index
from ._unsupported import raising

__all__ = [
    "AINT",
    "BOOL",
    "BYTE",
    "CHAR",
    "CHARACTER",
    "COMBINER_CONTIGUOUS",
    "COMBINER_DARRAY",
    "COMBINER_DUP",
    "COMBINER_F90_COMPLEX",
    "COMBINER_F90_INTEGER",
    "COMBINER_F90_REAL",
    "COMBINER_HINDEXED",
    "COMBINER_HINDEXED_BLOCK",
    "COMBINER_HVECTOR",
    "COMBINER_INDEXED",
    "COMBINER_INDEXED_BLOCK",
    "COMBINER_NAMED",
    "COMBINER_RESIZED",
    "COMBINER_STRUCT",
    "COMBINER_SUBARRAY",
    "COMBINER_VECTOR",
    "COMPLEX",
    "COMPLEX4",
    "COMPLEX8",
    "COMPLEX16",
    "COMPLEX32",
    "COUNT",
    "CXX_BOOL",
    "CXX_DOUBLE_COMPLEX",
    "CXX_FLOAT_COMPLEX",
    "CXX_LONG_DOUBLE_COMPLEX",
    "C_BOOL",
    "C_COMPLEX",
    "C_DOUBLE_COMPLEX",
    "C_FLOAT_COMPLEX",
    "C_LONG_DOUBLE_COMPLEX",
    "DATATYPE_NULL",
    "DISTRIBUTE_BLOCK",
    "DISTRIBUTE_CYCLIC",
    "DISTRIBUTE_DFLT_DARG",
    "DISTRIBUTE_NONE",
    "DOUBLE",
    "DOUBLE_COMPLEX",
    "DOUBLE_INT",
    "DOUBLE_PRECISION",
    "FLOAT",
    "FLOAT_COMPLEX",
    "FLOAT_INT",
    "INT",
    "INT8_T",
    "INT16_T",
    "INT32_T",
    "INT64_T",
    "INTEGER",
    "INTEGER1",
    "INTEGER2",
    "INTEGER4",
    "INTEGER8",
    "INTEGER16",
    "INT_INT",
    "LB",
    "LOGICAL",
    "LOGICAL1",
    "LOGICAL2",
    "LOGICAL4",
    "LOGICAL8",
    "LONG",
    "LONG_DOUBLE",
    "LONG_DOUBLE_INT",
    "LONG_INT",
    "LONG_LONG",
    "OFFSET",
    "ORDER_C",
    "ORDER_F",
    "ORDER_FORTRAN",
    "PACKED",
    "REAL",
    "REAL2",
    "REAL4",
    "REAL8",
    "REAL16",
    "SHORT",
    "SHORT_INT",
    "SIGNED_CHAR",
    "SIGNED_INT",
    "SIGNED_LONG",
    "SIGNED_LONG_LONG",
    "SIGNED_SHORT",
    "TWOINT",
    "TYPECLASS_COMPLEX",
    "TYPECLASS_INTEGER",
    "TYPECLASS_REAL",
    "UB",
    "UINT8_T",
    "UINT16_T",
    "UINT32_T",
    "UINT64_T",
    "UNSIGNED",
    "UNSIGNED_CHAR",
    "UNSIGNED_INT",
    "UNSIGNED_LONG",
    "UNSIGNED_LONG_LONG",
    "UNSIGNED_LONG_LONG_INT",
    "UNSIGNED_SHORT",
    "WCHAR",
    "Datatype",
    "datatype_by_code",
    "datatype_of",
]

# MPICH's values, as mpi4py built against MPICH shows them
COMBINER_NAMED, COMBINER_DUP, COMBINER_CONTIGUOUS, COMBINER_VECTOR = 1, 2, 3, 4
COMBINER_HVECTOR, COMBINER_INDEXED, COMBINER_HINDEXED, COMBINER_INDEXED_BLOCK = 6, 7, 9, 10
COMBINER_STRUCT, COMBINER_SUBARRAY, COMBINER_DARRAY = 12, 13, 14
COMBINER_F90_REAL, COMBINER_F90_COMPLEX, COMBINER_F90_INTEGER = 15, 16, 17
COMBINER_RESIZED, COMBINER_HINDEXED_BLOCK = 18, 19
TYPECLASS_REAL, TYPECLASS_INTEGER, TYPECLASS_COMPLEX = 1, 2, 3
ORDER_C = TM.ORDER_C
ORDER_FORTRAN = ORDER_F = TM.ORDER_FORTRAN
DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC, DISTRIBUTE_NONE = (
    TM.DISTRIBUTE_BLOCK,
    TM.DISTRIBUTE_CYCLIC,
    TM.DISTRIBUTE_NONE,
)
DISTRIBUTE_DFLT_DARG = TM.DISTRIBUTE_DFLT_DARG

_F90 = (COMBINER_F90_INTEGER, COMBINER_F90_REAL, COMBINER_F90_COMPLEX)
EXTERNAL32 = "the external32 representation is not supported by cellsim.mpi (Pack and Unpack are)"


class _Type:
    """The MPI object behind datatype handles."""

    def __init__(
        self,
        name: str,
        typemap: TM.Typemap | None,
        dtype: Any = np.uint8,
        code: int = 0,
        combiner: int = COMBINER_NAMED,
        contents: tuple[list[int], list[int], list[Any]] = ([], [], []),
    ) -> None:
        self.name = name
        self.typemap = typemap if typemap is not None else TM.basic(self, np.dtype(dtype).itemsize)
        self.dtype = np.dtype(dtype)
        self.code = code
        self.combiner = combiner
        self.contents = contents
        self.committed = combiner == COMBINER_NAMED

    @property
    def size(self) -> int:
        return self.typemap.size


class Datatype(Handle):
    """An MPI datatype handle (``MPI.DOUBLE``, or a derived datatype)."""

    __slots__ = ()
    _h: _Type | None

    @property
    def _obj(self) -> _Type:
        t = self._h
        if t is None:
            raise Exception(ERR_TYPE, "the datatype is MPI_DATATYPE_NULL")
        return t

    def __repr__(self) -> str:
        return f"<cellsim.mpi.Datatype {self._h.name if self._h else 'MPI_DATATYPE_NULL'}>"

    # -- what the library uses --

    @property
    def typemap(self) -> TM.Typemap:
        """Where the bytes of one instance lie."""
        return self._obj.typemap

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of one element (named types; derived ones: of their basic type, or bytes)."""
        t = self._obj
        if t.combiner == COMBINER_NAMED:
            return t.dtype
        base = t.typemap.homogeneous()
        return base.dtype if base is not None else np.dtype(np.uint8)

    @property
    def code(self) -> int:
        """The one-byte code carried in the message metadata."""
        t = self._obj
        base = t.typemap.homogeneous()
        return t.code or (base.code if base is not None else BYTE.code)

    @property
    def contiguous(self) -> bool:
        """Whether consecutive instances are plain consecutive bytes."""
        return self._obj.typemap.contiguous

    # -- accessors --

    def Get_size(self) -> int:
        """Bytes of data in one instance."""
        return self._obj.typemap.size

    @property
    def size(self) -> int:
        return self._obj.typemap.size

    def Get_extent(self) -> tuple[int, int]:
        """``(lb, extent)``."""
        tm = self._obj.typemap
        return tm.lb, tm.extent

    @property
    def extent(self) -> int:
        return self._obj.typemap.extent

    @property
    def lb(self) -> int:
        return self._obj.typemap.lb

    @property
    def ub(self) -> int:
        return self._obj.typemap.ub

    def Get_true_extent(self) -> tuple[int, int]:
        """``(true lb, true extent)``: the bounds of the data itself."""
        tm = self._obj.typemap
        return tm.true_lb, tm.true_ub - tm.true_lb

    @property
    def true_lb(self) -> int:
        return self._obj.typemap.true_lb

    @property
    def true_ub(self) -> int:
        return self._obj.typemap.true_ub

    @property
    def true_extent(self) -> int:
        tm = self._obj.typemap
        return tm.true_ub - tm.true_lb

    def Get_name(self) -> str:
        """``MPI_DOUBLE``...; derived types: what ``Set_name`` set, else ``""``."""
        return self._obj.name

    def Set_name(self, name: str) -> None:
        self._obj.name = str(name)

    @property
    def name(self) -> str:
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    # -- constructors --

    def _derived(self, combiner: int, typemap: TM.Typemap, ints: list[int], addrs: list[int]) -> Datatype:
        return Datatype._of(_Type("", typemap, combiner=combiner, contents=(ints, addrs, [Datatype(self)])))

    def Dup(self) -> Datatype:
        """A new datatype with the same typemap."""
        return self._derived(COMBINER_DUP, self._obj.typemap, [], [])

    Create_dup = Dup

    def Create_contiguous(self, count: int) -> Datatype:
        """``count`` consecutive instances."""
        c = _nonneg(count, "count")
        return self._derived(COMBINER_CONTIGUOUS, TM.blocks([(0, c, self.typemap)]), [c], [])

    def Create_vector(self, count: int, blocklength: int, stride: int) -> Datatype:
        """``count`` blocks of ``blocklength`` instances, ``stride`` instances apart."""
        c, b = _nonneg(count, "count"), _nonneg(blocklength, "blocklength")
        tm = self.typemap
        items = [(i * int(stride) * tm.extent, b, tm) for i in range(c)]
        return self._derived(COMBINER_VECTOR, TM.blocks(items), [c, b, int(stride)], [])

    def Create_hvector(self, count: int, blocklength: int, stride: int) -> Datatype:
        """``Create_vector`` with the stride in bytes."""
        c, b = _nonneg(count, "count"), _nonneg(blocklength, "blocklength")
        items = [(i * int(stride), b, self.typemap) for i in range(c)]
        return self._derived(COMBINER_HVECTOR, TM.blocks(items), [c, b], [int(stride)])

    def Create_indexed(self, blocklengths: Sequence[int], displacements: Sequence[int]) -> Datatype:
        """Blocks of ``blocklengths[i]`` instances at ``displacements[i]`` instances."""
        bl, dp = _pairs(blocklengths, displacements)
        tm = self.typemap
        items = [(d * tm.extent, b, tm) for b, d in zip(bl, dp, strict=True)]
        return self._derived(COMBINER_INDEXED, TM.blocks(items), [len(bl), *bl, *dp], [])

    def Create_hindexed(self, blocklengths: Sequence[int], displacements: Sequence[int]) -> Datatype:
        """``Create_indexed`` with displacements in bytes."""
        bl, dp = _pairs(blocklengths, displacements)
        items = [(d, b, self.typemap) for b, d in zip(bl, dp, strict=True)]
        return self._derived(COMBINER_HINDEXED, TM.blocks(items), [len(bl), *bl], dp)

    def Create_indexed_block(self, blocklength: int, displacements: Sequence[int]) -> Datatype:
        """Blocks of one length at ``displacements`` (in instances)."""
        b, dp = _nonneg(blocklength, "blocklength"), [int(d) for d in displacements]
        tm = self.typemap
        items = [(d * tm.extent, b, tm) for d in dp]
        return self._derived(COMBINER_INDEXED_BLOCK, TM.blocks(items), [len(dp), b, *dp], [])

    def Create_hindexed_block(self, blocklength: int, displacements: Sequence[int]) -> Datatype:
        """Blocks of one length at ``displacements`` in bytes."""
        b, dp = _nonneg(blocklength, "blocklength"), [int(d) for d in displacements]
        items = [(d, b, self.typemap) for d in dp]
        return self._derived(COMBINER_HINDEXED_BLOCK, TM.blocks(items), [len(dp), b], dp)

    @classmethod
    def Create_struct(
        cls, blocklengths: Sequence[int], displacements: Sequence[int], datatypes: Sequence[Datatype]
    ) -> Datatype:
        """Blocks of different datatypes at byte displacements (the extent padded to
        the strictest alignment of the basic types, as MPICH does)."""
        bl, dp = _pairs(blocklengths, displacements)
        types = list(datatypes)
        if len(types) != len(bl):
            raise ValueError(f"Create_struct: {len(bl)} block lengths but {len(types)} datatypes")
        items = [(d, b, t.typemap) for b, d, t in zip(bl, dp, types, strict=True)]
        tm = TM.blocks(items, struct=True)
        contents = ([len(bl), *bl], dp, [Datatype(t) for t in types])
        return Datatype._of(_Type("", tm, combiner=COMBINER_STRUCT, contents=contents))

    def Create_subarray(
        self, sizes: Sequence[int], subsizes: Sequence[int], starts: Sequence[int], order: int = ORDER_C
    ) -> Datatype:
        """The block ``subsizes`` at ``starts`` of an array of ``sizes`` (extent: the whole array)."""
        sz, sub, st = ([int(x) for x in v] for v in (sizes, subsizes, starts))
        if not len(sz) == len(sub) == len(st) or any(
            not (s >= 0 and n >= 0 and s + n <= z) for z, n, s in zip(sz, sub, st, strict=True)
        ):
            raise Exception(ERR_ARG, f"Create_subarray: subsizes {sub} at starts {st} do not fit sizes {sz}")
        tm = TM.subarray(self.typemap, sz, sub, st, _order(order))
        return self._derived(COMBINER_SUBARRAY, tm, [len(sz), *sz, *sub, *st, int(order)], [])

    def Create_darray(
        self,
        size: int,
        rank: int,
        gsizes: Sequence[int],
        distribs: Sequence[int],
        dargs: Sequence[int],
        psizes: Sequence[int],
        order: int = ORDER_C,
    ) -> Datatype:
        """Process ``rank``'s part of an HPF-style distributed array."""
        g, dist, da, ps = ([int(x) for x in v] for v in (gsizes, distribs, dargs, psizes))
        if int(np.prod(ps)) != int(size) or not 0 <= int(rank) < int(size):
            raise Exception(
                ERR_ARG, f"Create_darray: psizes {ps} do not make {size} processes with rank {rank}"
            )
        tm = TM.darray(self.typemap, int(size), int(rank), g, dist, da, ps, _order(order))
        n = len(g)
        return self._derived(
            COMBINER_DARRAY, tm, [int(size), int(rank), n, *g, *dist, *da, *ps, int(order)], []
        )

    def Create_resized(self, lb: int, extent: int) -> Datatype:
        """The same data with new bounds ``[lb, lb + extent)``."""
        tm = TM.resized(self.typemap, int(lb), int(extent))
        return self._derived(COMBINER_RESIZED, tm, [], [int(lb), int(extent)])

    Resized = Create_resized

    @classmethod
    def Create_f90_integer(cls, r: int) -> Datatype:
        """The Fortran 90 integer kind with at least ``r`` decimal digits."""
        for digits, t in ((2, INT8_T), (4, INT16_T), (9, INT32_T), (18, INT64_T)):
            if int(r) <= digits:
                return _f90(t, COMBINER_F90_INTEGER, [int(r)])
        raise Exception(ERR_ARG, f"Create_f90_integer({r}): no integer kind has {r} digits")

    @classmethod
    def Create_f90_real(cls, p: int, r: int) -> Datatype:
        """The Fortran 90 real kind with precision ``p`` and range ``r``."""
        t = FLOAT if int(p) <= 6 and int(r) <= 37 else DOUBLE if int(p) <= 15 and int(r) <= 307 else None
        if t is None:
            raise Exception(ERR_ARG, f"Create_f90_real({p}, {r}): no real kind that precise")
        return _f90(t, COMBINER_F90_REAL, [int(p), int(r)])

    @classmethod
    def Create_f90_complex(cls, p: int, r: int) -> Datatype:
        """The Fortran 90 complex kind with precision ``p`` and range ``r``."""
        real = cls.Create_f90_real(p, r)
        t = C_FLOAT_COMPLEX if real.size == 4 else C_DOUBLE_COMPLEX
        return _f90(t, COMBINER_F90_COMPLEX, [int(p), int(r)])

    @classmethod
    def Match_size(cls, typeclass: int, size: int) -> Datatype:
        """The named type of a class (``TYPECLASS_INTEGER``...) with ``size`` bytes."""
        kinds = {
            TYPECLASS_INTEGER: (INT8_T, INT16_T, INT32_T, INT64_T),
            TYPECLASS_REAL: (FLOAT, DOUBLE, LONG_DOUBLE),
            TYPECLASS_COMPLEX: (C_FLOAT_COMPLEX, C_DOUBLE_COMPLEX, C_LONG_DOUBLE_COMPLEX),
        }
        for t in kinds.get(int(typeclass), ()):
            if t.size == int(size):
                return t
        raise Exception(ERR_ARG, f"Match_size({typeclass}, {size}): no such named type")

    def Commit(self) -> Datatype:
        """Makes the datatype usable in communication."""
        self._obj.committed = True
        return self

    def Free(self) -> None:
        """Frees a derived datatype (the handle becomes ``DATATYPE_NULL``)."""
        t = self._obj
        if t.combiner == COMBINER_NAMED or t.combiner in _F90:
            raise Exception(ERR_TYPE, f"MPI_Type_free: {t.name} is a predefined datatype")
        self._h = None

    # -- introspection --

    def Get_envelope(self) -> tuple[int, int, int, int]:
        """``(integers, addresses, datatypes, combiner)`` of how it was built."""
        t = self._obj
        i, a, d = t.contents
        if t.combiner in _F90:
            return len(i), 0, 0, t.combiner
        return len(i), len(a), len(d), t.combiner

    @property
    def envelope(self) -> tuple[int, int, int, int]:
        return self.Get_envelope()

    def Get_contents(self) -> tuple[list[int], list[int], list[Datatype]]:
        """The integers, addresses and datatypes it was built from."""
        t = self._obj
        if t.combiner == COMBINER_NAMED:
            raise Exception(ERR_TYPE, f"MPI_Type_get_contents: {t.name} is a named datatype")
        i, a, d = t.contents
        return list(i), list(a), ([] if t.combiner in _F90 else [Datatype(x) for x in d])

    @property
    def contents(self) -> tuple[list[int], list[int], list[Datatype]]:
        return self.Get_contents()

    @property
    def combiner(self) -> int:
        return self._obj.combiner

    @property
    def is_named(self) -> bool:
        return self._obj.combiner == COMBINER_NAMED

    @property
    def is_predefined(self) -> bool:
        return self._h is None or self._h.combiner == COMBINER_NAMED or self._h.combiner in _F90

    def decode(self) -> Any:
        """``self`` for a named type, else ``(old type, constructor name, keyword arguments)``."""
        t = self._obj
        if t.combiner == COMBINER_NAMED:
            return self
        i, a, d = t.contents
        return _DECODE[t.combiner](i, a, d)

    # -- packing: the SPU's local copies of MPI_Pack --

    def _packing(
        self, buf: Any, other: Any, position: int, call: str
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The byte offsets of the instances ``buf`` holds, its bytes, and the packed buffer's."""
        from ._message import as_bytes

        raw, _, _ = as_bytes(buf)
        packed, _, _ = as_bytes(other)
        tm = self._obj.typemap
        seg = tm.tiled(raw.size // tm.extent if tm.extent > 0 else 0)
        idx = byte_index(seg)
        if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= raw.size):
            raise Exception(
                ERR_BUFFER, f"{call}: {self!r} reaches outside the {raw.size} bytes of the buffer"
            )
        if not 0 <= int(position) <= packed.size - len(idx):
            raise Exception(
                ERR_ARG,
                f"{call}: {len(idx)} packed bytes at position {position} do not fit {packed.size} bytes",
            )
        _charge_copy(len(seg), len(idx))
        return idx, raw, packed

    def Pack(self, inbuf: Any, outbuf: Any, position: int, comm: Any = None) -> int:
        """Packs the instances ``inbuf`` holds into ``outbuf`` at ``position``; the position after them."""
        idx, raw, packed = self._packing(inbuf, outbuf, position, "Pack")
        packed[position : position + len(idx)] = raw[idx]
        return int(position) + len(idx)

    def Unpack(self, inbuf: Any, position: int, outbuf: Any, comm: Any = None) -> int:
        """Unpacks from ``inbuf`` at ``position`` the instances ``outbuf`` holds; the position after them."""
        idx, raw, packed = self._packing(outbuf, inbuf, position, "Unpack")
        raw[idx] = packed[position : position + len(idx)]
        return int(position) + len(idx)

    def Pack_size(self, count: int, comm: Any = None) -> int:
        """Bytes ``Pack`` needs for ``count`` instances."""
        return int(count) * self.size

    Pack_external = raising("Datatype.Pack_external", EXTERNAL32)
    Unpack_external = raising("Datatype.Unpack_external", EXTERNAL32)
    Pack_external_size = raising("Datatype.Pack_external_size", EXTERNAL32)

    def py2f(self) -> int:
        """A Fortran handle (an index; only for round trips through f2py)."""
        return _handle_index(self)

    @classmethod
    def f2py(cls, arg: int) -> Datatype:
        return _HANDLES[int(arg)]


def _charge_copy(blocks: int, nbytes: int) -> None:
    """In a rank, the SPU's copy of ``blocks`` blocks of ``nbytes`` in all."""
    from ._runtime import current_rank

    try:
        r = current_rank()
    except Exception:
        return
    r.charge(r.costs.piece * blocks + r.costs.copy_per_quadword * -(-nbytes // 16))


_HANDLES: list[Datatype] = []


def _handle_index(d: Datatype) -> int:
    for i, h in enumerate(_HANDLES):
        if h == d:
            return i
    _HANDLES.append(Datatype(d))
    return len(_HANDLES) - 1


def _nonneg(v: Any, what: str) -> int:
    n = int(v)
    if n < 0:
        raise Exception(ERR_ARG, f"{what} {n} is negative")
    return n


def _pairs(blocklengths: Sequence[int], displacements: Sequence[int]) -> tuple[list[int], list[int]]:
    bl = [_nonneg(b, "block length") for b in blocklengths]
    dp = [int(d) for d in displacements]
    if len(bl) != len(dp):
        raise ValueError(f"{len(bl)} block lengths but {len(dp)} displacements")
    return bl, dp


def _order(order: int) -> int:
    if int(order) not in (ORDER_C, ORDER_FORTRAN):
        raise Exception(ERR_ARG, f"order {order} is neither ORDER_C nor ORDER_FORTRAN")
    return int(order)


def _f90(t: Datatype, combiner: int, ints: list[int]) -> Datatype:
    base = t._obj
    return Datatype._of(_Type(base.name, base.typemap, base.dtype, base.code, combiner, (ints, [], [])))


def _old(d: list[Any]) -> Any:
    return d[0]


def _indexed(i: list[int]) -> dict[str, Any]:
    n = i[0]
    return {"blocklengths": i[1 : n + 1], "displacements": i[n + 1 : 2 * n + 1]}


_DECODE: dict[int, Any] = {
    COMBINER_DUP: lambda i, a, d: (_old(d), "DUP", {}),
    COMBINER_CONTIGUOUS: lambda i, a, d: (_old(d), "CONTIGUOUS", {"count": i[0]}),
    COMBINER_VECTOR: lambda i, a, d: (
        _old(d),
        "VECTOR",
        {"count": i[0], "blocklength": i[1], "stride": i[2]},
    ),
    COMBINER_HVECTOR: lambda i, a, d: (
        _old(d),
        "HVECTOR",
        {"count": i[0], "blocklength": i[1], "stride": a[0]},
    ),
    COMBINER_INDEXED: lambda i, a, d: (_old(d), "INDEXED", _indexed(i)),
    COMBINER_HINDEXED: lambda i, a, d: (
        _old(d),
        "HINDEXED",
        {"blocklengths": i[1 : i[0] + 1], "displacements": list(a)},
    ),
    COMBINER_INDEXED_BLOCK: lambda i, a, d: (
        _old(d),
        "INDEXED_BLOCK",
        {"blocklength": i[1], "displacements": i[2 : i[0] + 2]},
    ),
    COMBINER_HINDEXED_BLOCK: lambda i, a, d: (
        _old(d),
        "HINDEXED_BLOCK",
        {"blocklength": i[1], "displacements": list(a)},
    ),
    COMBINER_STRUCT: lambda i, a, d: (
        DATATYPE_NULL,
        "STRUCT",
        {"blocklengths": i[1 : i[0] + 1], "displacements": list(a), "datatypes": list(d)},
    ),
    COMBINER_SUBARRAY: lambda i, a, d: (
        _old(d),
        "SUBARRAY",
        {
            "sizes": i[1 : i[0] + 1],
            "subsizes": i[i[0] + 1 : 2 * i[0] + 1],
            "starts": i[2 * i[0] + 1 : 3 * i[0] + 1],
            "order": i[3 * i[0] + 1],
        },
    ),
    COMBINER_DARRAY: lambda i, a, d: (
        _old(d),
        "DARRAY",
        {
            "size": i[0],
            "rank": i[1],
            "gsizes": i[3 : i[2] + 3],
            "distribs": i[i[2] + 3 : 2 * i[2] + 3],
            "dargs": i[2 * i[2] + 3 : 3 * i[2] + 3],
            "psizes": i[3 * i[2] + 3 : 4 * i[2] + 3],
            "order": i[4 * i[2] + 3],
        },
    ),
    COMBINER_RESIZED: lambda i, a, d: (_old(d), "RESIZED", {"lb": a[0], "extent": a[1]}),
    COMBINER_F90_INTEGER: lambda i, a, d: (DATATYPE_NULL, "F90_INTEGER", {"r": i[0]}),
    COMBINER_F90_REAL: lambda i, a, d: (DATATYPE_NULL, "F90_REAL", {"p": i[0], "r": i[1]}),
    COMBINER_F90_COMPLEX: lambda i, a, d: (DATATYPE_NULL, "F90_COMPLEX", {"p": i[0], "r": i[1]}),
}


# -- the named datatypes ------------------------------------------------------------------------------

_NAMED: list[_Type] = []


def _named(name: str, dtype: Any, fields: Sequence[tuple[int, Datatype]] = ()) -> Datatype:
    t = _Type(name, None, dtype, len(_NAMED) + 1)
    if fields:
        t.typemap = TM.basic(t, 0, np.dtype(dtype).itemsize, [(o, f._obj) for o, f in fields])
    _NAMED.append(t)
    return Datatype._of(t)


DATATYPE_NULL: Datatype = Datatype()
# in this order (their metadata codes are their places)
BYTE = _named("MPI_BYTE", np.uint8)
CHAR = _named("MPI_CHAR", np.int8)
SIGNED_CHAR = _named("MPI_SIGNED_CHAR", np.int8)
UNSIGNED_CHAR = _named("MPI_UNSIGNED_CHAR", np.uint8)
SHORT = _named("MPI_SHORT", np.int16)
UNSIGNED_SHORT = _named("MPI_UNSIGNED_SHORT", np.uint16)
INT = _named("MPI_INT", np.int32)
UNSIGNED = _named("MPI_UNSIGNED", np.uint32)
LONG = _named("MPI_LONG", np.int64)
UNSIGNED_LONG = _named("MPI_UNSIGNED_LONG", np.uint64)
LONG_LONG = _named("MPI_LONG_LONG", np.int64)
UNSIGNED_LONG_LONG = _named("MPI_UNSIGNED_LONG_LONG", np.uint64)
FLOAT = _named("MPI_FLOAT", np.float32)
DOUBLE = _named("MPI_DOUBLE", np.float64)
C_BOOL = _named("MPI_C_BOOL", np.bool_)
INT8_T = _named("MPI_INT8_T", np.int8)
INT16_T = _named("MPI_INT16_T", np.int16)
INT32_T = _named("MPI_INT32_T", np.int32)
INT64_T = _named("MPI_INT64_T", np.int64)
UINT8_T = _named("MPI_UINT8_T", np.uint8)
UINT16_T = _named("MPI_UINT16_T", np.uint16)
UINT32_T = _named("MPI_UINT32_T", np.uint32)
UINT64_T = _named("MPI_UINT64_T", np.uint64)
C_FLOAT_COMPLEX = _named("MPI_C_FLOAT_COMPLEX", np.complex64)
C_DOUBLE_COMPLEX = _named("MPI_C_DOUBLE_COMPLEX", np.complex128)
LONG_DOUBLE = _named("MPI_LONG_DOUBLE", np.longdouble)
C_LONG_DOUBLE_COMPLEX = _named("MPI_C_LONG_DOUBLE_COMPLEX", np.clongdouble)
WCHAR = _named("MPI_WCHAR", np.dtype("U1"))
PACKED = _named("MPI_PACKED", np.uint8)
AINT = _named("MPI_AINT", np.int64)
OFFSET = _named("MPI_OFFSET", np.int64)
COUNT = _named("MPI_COUNT", np.int64)
# Fortran's types, as an MPI with Fortran support has them
CHARACTER = _named("MPI_CHARACTER", np.uint8)
LOGICAL = _named("MPI_LOGICAL", np.int32)
INTEGER = _named("MPI_INTEGER", np.int32)
REAL = _named("MPI_REAL", np.float32)
DOUBLE_PRECISION = _named("MPI_DOUBLE_PRECISION", np.float64)
COMPLEX = _named("MPI_COMPLEX", np.complex64)
DOUBLE_COMPLEX = _named("MPI_DOUBLE_COMPLEX", np.complex128)
LOGICAL1 = _named("MPI_LOGICAL1", np.int8)
LOGICAL2 = _named("MPI_LOGICAL2", np.int16)
LOGICAL4 = _named("MPI_LOGICAL4", np.int32)
LOGICAL8 = _named("MPI_LOGICAL8", np.int64)
INTEGER1 = _named("MPI_INTEGER1", np.int8)
INTEGER2 = _named("MPI_INTEGER2", np.int16)
INTEGER4 = _named("MPI_INTEGER4", np.int32)
INTEGER8 = _named("MPI_INTEGER8", np.int64)
REAL2 = _named("MPI_REAL2", np.float16)
REAL4 = _named("MPI_REAL4", np.float32)
REAL8 = _named("MPI_REAL8", np.float64)
COMPLEX8 = _named("MPI_COMPLEX8", np.complex64)
COMPLEX16 = _named("MPI_COMPLEX16", np.complex128)
# the value-index pairs of MINLOC and MAXLOC (C struct layout, padded)
SHORT_INT = _named("MPI_SHORT_INT", np.dtype([("v", "i2"), ("i", "i4")], align=True), [(0, SHORT), (4, INT)])
TWOINT = _named("MPI_2INT", np.dtype([("v", "i4"), ("i", "i4")], align=True), [(0, INT), (4, INT)])
LONG_INT = _named("MPI_LONG_INT", np.dtype([("v", "i8"), ("i", "i4")], align=True), [(0, LONG), (8, INT)])
FLOAT_INT = _named("MPI_FLOAT_INT", np.dtype([("v", "f4"), ("i", "i4")], align=True), [(0, FLOAT), (4, INT)])
DOUBLE_INT = _named(
    "MPI_DOUBLE_INT", np.dtype([("v", "f8"), ("i", "i4")], align=True), [(0, DOUBLE), (8, INT)]
)
LONG_DOUBLE_INT = _named(
    "MPI_LONG_DOUBLE_INT",
    np.dtype([("v", np.longdouble), ("i", "i4")], align=True),
    [(0, LONG_DOUBLE), (16, INT)],
)
# aliases, as in MPI
BOOL = C_BOOL
UNSIGNED_INT = UNSIGNED
C_COMPLEX = C_FLOAT_COMPLEX
FLOAT_COMPLEX = C_FLOAT_COMPLEX
INT_INT = TWOINT
SIGNED_SHORT = SHORT
SIGNED_INT = INT
SIGNED_LONG = LONG
SIGNED_LONG_LONG = LONG_LONG
UNSIGNED_LONG_LONG_INT = UNSIGNED_LONG_LONG
REAL16 = COMPLEX4 = COMPLEX32 = INTEGER16 = DATATYPE_NULL  # no such kinds on this host
LB = UB = DATATYPE_NULL  # removed in MPI-3
CXX_BOOL = C_BOOL
CXX_FLOAT_COMPLEX = C_FLOAT_COMPLEX
CXX_DOUBLE_COMPLEX = C_DOUBLE_COMPLEX
CXX_LONG_DOUBLE_COMPLEX = C_LONG_DOUBLE_COMPLEX

# buffer format characters -> datatypes (mpi4py's typemap)
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
    "n": LONG,
    "N": UNSIGNED_LONG,
    "p": LONG,
    "P": UNSIGNED_LONG,
    "f": FLOAT,
    "d": DOUBLE,
    "g": LONG_DOUBLE,
    "?": C_BOOL,
    "F": C_FLOAT_COMPLEX,
    "D": C_DOUBLE_COMPLEX,
    "G": C_LONG_DOUBLE_COMPLEX,
    "Zf": C_FLOAT_COMPLEX,
    "Zd": C_DOUBLE_COMPLEX,
    "Zg": C_LONG_DOUBLE_COMPLEX,
    "c": CHAR,
    "S": CHAR,
    "S1": CHAR,
    "s": CHAR,
    "1s": CHAR,
    "u": UNSIGNED_SHORT,
    "w": WCHAR,
    "U": WCHAR,
    "U1": WCHAR,
    "b1": C_BOOL,
    "i1": INT8_T,
    "i2": INT16_T,
    "i4": INT32_T,
    "i8": INT64_T,
    "u1": UINT8_T,
    "u2": UINT16_T,
    "u4": UINT32_T,
    "u8": UINT64_T,
    "f2": REAL2,
    "f4": FLOAT,
    "f8": DOUBLE,
    "c8": C_FLOAT_COMPLEX,
    "c16": C_DOUBLE_COMPLEX,
}


def datatype_of(spec: Any) -> Datatype:
    """The datatype of a numpy dtype, a buffer format or type character
    (``'d'``, ``'i4'``), or a Datatype itself."""
    if isinstance(spec, Datatype):
        return spec
    if isinstance(spec, str):
        key = spec.lstrip("<>=|@!")
        if key in _BY_CHAR:
            return _BY_CHAR[key]
    try:
        dt = np.dtype(spec)
    except TypeError:
        raise Exception(ERR_TYPE, f"{spec!r} is not an MPI datatype nor a numpy dtype") from None
    if dt.char in _BY_CHAR and dt.isnative and dt.kind != "V":
        return _BY_CHAR[dt.char]
    for t in _NAMED:
        if t.dtype == dt.newbyteorder("=") and dt.kind == t.dtype.kind and dt.fields is None:
            return Datatype._of(t)
    if dt.kind in "VSU":
        return BYTE
    raise Exception(ERR_TYPE, f"no MPI datatype for numpy dtype {dt}")


def datatype_by_code(code: int) -> Datatype:
    """The named datatype whose metadata code is ``code`` (``BYTE`` if unknown)."""
    return Datatype._of(_NAMED[code - 1]) if 1 <= code <= len(_NAMED) else BYTE


def named() -> dict[str, Datatype]:
    """Every named datatype constant of this module, by its mpi4py name."""
    return {k: v for k, v in globals().items() if isinstance(v, Datatype) and k.isupper()}
