"""Collective calls of a communicator: with buffers (any datatype: a
non-contiguous one is packed and unpacked by the SPE around the
collective) and with Python objects. The algorithms are
:mod:`cellsim.mpi._coll`'s.

Reductions combine elements of one basic type: a named datatype (the
value-index pairs of ``MINLOC``/``MAXLOC`` included, combined in their C
layout) or a derived datatype built from one basic type (packed first).
``Reduce_scatter`` and ``Reduce_scatter_block`` reduce to rank 0 and
scatter the result; ``Scan`` and ``Exscan`` are a chain (``kumar``) or
recursive doubling (``direct``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce as fold
from typing import Any

import numpy as np

from . import _types as T
from ._coll import Coll
from ._commbase import CommBase
from ._datatype import Datatype
from ._message import Message, Vector, parse, parse_vector, parse_w, place, place_bytes, place_vector
from ._p2p import object_payload
from ._pickle import pickle
from ._protocol import Req
from ._runtime import BufRef, Rank, api

__all__ = ["Collectives"]


def _blocks(m: Message, p: int) -> Vector:
    """A message of ``p`` equal blocks (one per rank) as a vector message."""
    return Vector(m.raw, [m.datatype] * p, [m.count] * p, [i * m.count for i in range(p)], m.writable)


def _release(*refs: BufRef | None) -> None:
    for x in refs:
        if x is not None:
            x.release()


def _unpickle(q: Req) -> Any:
    """The object a collective receive got."""
    assert q.ref is not None and q.ref.shadow is not None
    value = pickle.loads(bytes(q.ref.shadow[: q.nbytes]))
    q.ref.release()
    return value


def _reduction_ref(r: Rank, m: Message, writable: bool) -> tuple[BufRef, Datatype]:
    """A reduction's buffer and the basic type its elements are combined as."""
    dt = m.datatype
    if dt.is_named:
        return place_bytes(r, m.raw, m.count * dt.extent, writable, m.writable), dt
    base = dt.typemap.homogeneous()
    if base is None:
        raise T.Exception(T.ERR_OP, f"a reduction needs a datatype of one basic type, not {dt!r}")
    return place(r, m, writable), Datatype._of(base)


def _fold(op: T.Op, items: Sequence[Any]) -> Any:
    return fold(op, items[1:], items[0])


class Collectives(CommBase):
    """The collective calls of a communicator."""

    __slots__ = ()

    @api
    def Barrier(self) -> None:
        """Waits until every rank of the communicator has called it."""
        _, _, c = self._coll("Barrier")
        c.barrier()

    @api
    def Bcast(self, buf: Any, root: int = 0) -> None:
        """The root's buffer to every rank."""
        r, st, c = self._coll("Bcast", root)
        here = st.rank == root
        ref = place(r, parse(buf), writable=not here)
        try:
            if here:
                ref.sync_in()
            c.bcast(ref, root)
            if not here:
                ref.sync_out(ref.nbytes)
        finally:
            ref.release()

    # -- gather, scatter, allgather, alltoall --

    def _send_part(self, r: Rank, sendbuf: Any, need: int | None, kind: str) -> BufRef:
        """This rank's block (``need``: the bytes the receive buffer has for it)."""
        ref = place(r, parse(sendbuf), writable=False)
        if need is not None and ref.nbytes != need:
            ref.release()
            raise T.Exception(
                T.ERR_TRUNCATE,
                f"{kind}: this rank sends {ref.nbytes} bytes but its block of the receive "
                f"buffer holds {need}",
            )
        ref.sync_in()
        return ref

    def _gather(self, kind: str, sendbuf: Any, recvbuf: Any, root: int, v: bool) -> None:
        r, st, c = self._coll(kind, root)
        p, here = st.size, st.rank == root
        rref = sref = None
        offsets: list[int] = []
        sizes: list[int] = []
        inplace = sendbuf is T.IN_PLACE
        if inplace and not here:
            raise T.Exception(T.ERR_BUFFER, f"{kind}: IN_PLACE is for the root only")
        try:
            if here:
                rv = parse_vector(recvbuf, p) if v else _blocks(parse(recvbuf, p), p)
                rref, offsets, sizes = place_vector(r, rv, writable=True)
            if not inplace:
                sref = self._send_part(r, sendbuf, sizes[st.rank] if here else None, kind)
            if rref is not None:
                (rref.sync_in if inplace else rref.keep)()
            c.gatherv(sref, rref, offsets, sizes, root)
            if rref is not None:
                rref.sync_out(rref.nbytes)
        finally:
            _release(rref, sref)

    @api
    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Every rank's buffer, in rank order, into the root's ``recvbuf``."""
        self._gather("Gather", sendbuf, recvbuf, root, False)

    @api
    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Gather with per-rank counts and displacements at the root."""
        self._gather("Gatherv", sendbuf, recvbuf, root, True)

    def _scatter(self, kind: str, sendbuf: Any, recvbuf: Any, root: int, v: bool) -> None:
        r, st, c = self._coll(kind, root)
        p, here = st.size, st.rank == root
        sref = rref = None
        offsets: list[int] = []
        sizes: list[int] = []
        if recvbuf is T.IN_PLACE and not here:
            raise T.Exception(T.ERR_BUFFER, f"{kind}: IN_PLACE is for the root only")
        try:
            if here:
                sv = parse_vector(sendbuf, p) if v else _blocks(parse(sendbuf, p), p)
                sref, offsets, sizes = place_vector(r, sv, writable=False)
                sref.sync_in()
            if recvbuf is not T.IN_PLACE:
                rref = place(r, parse(recvbuf), writable=True)
            c.scatterv(sref, rref, offsets, sizes, root)
            if rref is not None:
                rref.sync_out(rref.nbytes)
        finally:
            _release(rref, sref)

    @api
    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Block ``i`` of the root's ``sendbuf`` to rank ``i``."""
        self._scatter("Scatter", sendbuf, recvbuf, root, False)

    @api
    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Scatter with per-rank counts and displacements at the root."""
        self._scatter("Scatterv", sendbuf, recvbuf, root, True)

    def _allgather(self, kind: str, sendbuf: Any, recvbuf: Any, v: bool) -> None:
        r, st, c = self._coll(kind)
        p = st.size
        rv = parse_vector(recvbuf, p) if v else _blocks(parse(recvbuf, p), p)
        rref, offsets, sizes = place_vector(r, rv, writable=True)
        sref = None
        try:
            if sendbuf is T.IN_PLACE:
                rref.sync_in()
            else:
                sref = self._send_part(r, sendbuf, sizes[st.rank], kind)
                rref.keep()
                me = st.rank
                c.copy(sref, BufRef(rref.ea + offsets[me], sizes[me], T.BYTE, sizes[me]))
            c.allgatherv(rref, offsets, sizes)
            rref.sync_out(rref.nbytes)
        finally:
            _release(rref, sref)

    @api
    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        """Every rank's buffer, in rank order, into every rank's ``recvbuf``."""
        self._allgather("Allgather", sendbuf, recvbuf, False)

    @api
    def Allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        """Allgather with per-rank counts and displacements."""
        self._allgather("Allgatherv", sendbuf, recvbuf, True)

    def _alltoall(self, kind: str, sendbuf: Any, recvbuf: Any, sv: Vector | None, rv: Vector) -> None:
        r, _, c = self._coll(kind)
        sref = None
        # (the send buffer is placed first, the receive buffer next: where they land in the
        # heap is where their pages are first touched)
        placed = None if sv is None else place_vector(r, sv, writable=False)
        try:
            rref, roff, rsz = place_vector(r, rv, writable=True)
        except BaseException:
            _release(placed[0] if placed else None)
            raise
        try:
            if placed is None:  # IN_PLACE: the receive buffer holds what is sent
                rref.sync_in()
                sref = r.temp(rref.nbytes)
                c.copy(rref, sref)
                soff, ssz = roff, rsz
            else:
                sref, soff, ssz = placed
                sref.sync_in()
                rref.keep()
            c.alltoallv(sref, soff, ssz, rref, roff, rsz)
            rref.sync_out(rref.nbytes)
        finally:
            _release(rref, sref)

    @api
    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        """Block ``i`` of every rank's ``sendbuf`` to rank ``i``."""
        p = self._s().size
        sv = None if sendbuf is T.IN_PLACE else _blocks(parse(sendbuf, p), p)
        self._alltoall("Alltoall", sendbuf, recvbuf, sv, _blocks(parse(recvbuf, p), p))

    @api
    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        """Alltoall with per-rank counts and displacements."""
        p = self._s().size
        sv = None if sendbuf is T.IN_PLACE else parse_vector(sendbuf, p)
        self._alltoall("Alltoallv", sendbuf, recvbuf, sv, parse_vector(recvbuf, p))

    @api
    def Alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:
        """Alltoall with a datatype per block and displacements in bytes."""
        p = self._s().size
        sv = None if sendbuf is T.IN_PLACE else parse_w(sendbuf, p)
        self._alltoall("Alltoallw", sendbuf, recvbuf, sv, parse_w(recvbuf, p))

    # -- reductions --

    def _reduction_in(
        self, r: Rank, sendbuf: Any, recvbuf: Any, here: bool, kind: str
    ) -> tuple[BufRef, BufRef | None, Datatype]:
        """The contribution (filled) and, where the result goes, the result buffer."""
        if sendbuf is T.IN_PLACE:
            if not here:
                raise T.Exception(T.ERR_BUFFER, f"{kind}: IN_PLACE is for the root only")
            both, dt = _reduction_ref(r, parse(recvbuf), writable=True)
            both.sync_in()
            return both, both, dt
        sm = parse(sendbuf)
        src, dt = _reduction_ref(r, sm, writable=False)
        out: BufRef | None = None
        try:
            if here:
                rm = parse(recvbuf)
                if rm.count != sm.count:
                    raise ValueError(
                        f"{kind}: mismatch in send count {sm.count} and receive count {rm.count}"
                    )
                out, _ = _reduction_ref(r, rm, writable=True)
            src.sync_in()
        except BaseException:
            _release(src, out)
            raise
        return src, out, dt

    @api
    def Reduce(self, sendbuf: Any, recvbuf: Any, op: T.Op = T.SUM, root: int = 0) -> None:
        """Combines every rank's buffer with ``op`` into the root's ``recvbuf``."""
        r, st, c = self._coll("Reduce", root)
        src, out, dt = self._reduction_in(r, sendbuf, recvbuf, st.rank == root, "Reduce")
        acc = r.temp(src.nbytes)
        try:
            c.copy(src, acc)
            c.reduce(src, acc, op, dt, root)
            if out is not None:
                c.copy(acc, out)
                out.sync_out(src.nbytes)
        finally:
            _release(acc, src, out if out is not src else None)

    def _all_reduction(self, kind: str, sendbuf: Any, recvbuf: Any, op: T.Op, scan: str = "") -> None:
        r, _, c = self._coll(kind)
        src, out, dt = self._reduction_in(r, sendbuf, recvbuf, True, kind)
        assert out is not None
        try:
            if out is not src:
                c.copy(src, out)
            view = BufRef(out.ea, src.nbytes, dt, src.nbytes // max(1, dt.dtype.itemsize))
            if not scan:
                c.allreduce(view, op, dt)
            elif not c.scan(view, op, dt, exclusive=scan == "exclusive"):
                return  # rank 0 of an Exscan: its buffer is left as it was
            out.sync_out(src.nbytes)
        finally:
            _release(src, out if out is not src else None)

    @api
    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: T.Op = T.SUM) -> None:
        """Combines every rank's buffer with ``op``; the result everywhere."""
        self._all_reduction("Allreduce", sendbuf, recvbuf, op)

    @api
    def Scan(self, sendbuf: Any, recvbuf: Any, op: T.Op = T.SUM) -> None:
        """Rank ``r`` gets the combination of ranks 0..r's buffers."""
        self._all_reduction("Scan", sendbuf, recvbuf, op, "inclusive")

    @api
    def Exscan(self, sendbuf: Any, recvbuf: Any, op: T.Op = T.SUM) -> None:
        """Rank ``r`` gets the combination of ranks 0..r-1's buffers (rank 0's is left as it was)."""
        self._all_reduction("Exscan", sendbuf, recvbuf, op, "exclusive")

    def _reduce_scatter(
        self, kind: str, sendbuf: Any, recvbuf: Any, counts: Sequence[int] | None, op: T.Op
    ) -> None:
        r, st, c = self._coll(kind)
        p, me = st.size, st.rank
        inplace = sendbuf is T.IN_PLACE
        rm = parse(recvbuf, p if inplace and counts is None else 0)
        if counts is None:
            counts = [rm.count] * p if kind == "Reduce_scatter_block" else self._counts(c, r, rm.count)
        counts = [int(x) for x in counts]
        if len(counts) != p:
            raise ValueError(f"{kind}: {len(counts)} receive counts for {p} ranks")
        mine = Message(rm.raw, rm.datatype, counts[me], rm.writable)
        out, dt = _reduction_ref(r, mine, writable=True)
        whole = Message(rm.raw, rm.datatype, sum(counts), rm.writable) if inplace else parse(sendbuf)
        if whole.count != sum(counts):
            out.release()
            raise ValueError(
                f"{kind}: the send count {whole.count} is not the sum of the counts {sum(counts)}"
            )
        src, _ = _reduction_ref(r, whole, writable=False)
        size = rm.datatype.extent if rm.datatype.is_named else rm.datatype.size
        acc = r.temp(src.nbytes)
        try:
            src.sync_in()
            c.copy(src, acc)
            c.reduce(src, acc, op, dt, 0)
            sizes = [n * size for n in counts]
            c.scatterv(acc if me == 0 else None, out, [sum(sizes[:i]) for i in range(p)], sizes, 0)
            out.sync_out(out.nbytes)
        finally:
            _release(acc, src, out)

    def _counts(self, c: Coll, r: Rank, mine: int) -> list[int]:
        """Every rank's count (an allgather of 8-byte integers)."""
        t = r.temp(8 * c.p)
        try:
            assert t.shadow is not None
            t.shadow[8 * c.me : 8 * c.me + 8] = np.array([mine], np.int64).view(np.uint8)
            c.allgatherv(t, [8 * i for i in range(c.p)], [8] * c.p)
            return [int(x) for x in np.frombuffer(bytes(t.shadow[: 8 * c.p]), np.int64)]
        finally:
            t.release()

    @api
    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: T.Op = T.SUM) -> None:
        """Combines every rank's buffer; rank ``i`` gets block ``i`` of the result."""
        self._reduce_scatter("Reduce_scatter_block", sendbuf, recvbuf, None, op)

    @api
    def Reduce_scatter(
        self, sendbuf: Any, recvbuf: Any, recvcounts: Sequence[int] | None = None, op: T.Op = T.SUM
    ) -> None:
        """Combines every rank's buffer; rank ``i`` gets ``recvcounts[i]`` elements of the result."""
        self._reduce_scatter("Reduce_scatter", sendbuf, recvbuf, recvcounts, op)

    # -- Python objects --

    def _obj_bcast(self, c: Coll, obj: Any, root: int) -> Any:
        r = c.rank
        ref = object_payload(obj)(r) if c.me == root else None
        sz = r.temp(8)
        try:
            assert sz.shadow is not None
            n = ref.nbytes if ref is not None else 0
            sz.shadow[:8] = np.array([n], dtype=">u8").view(np.uint8)
            c.bcast(sz, root)
            n = int(np.frombuffer(bytes(sz.shadow[:8]), ">u8")[0])
            if ref is None:
                ref = r.temp(n)
            c.bcast(ref, root)
            assert ref.shadow is not None
            return obj if c.me == root else pickle.loads(bytes(ref.shadow[:n]))
        finally:
            _release(sz, ref)

    def _obj_gather(self, c: Coll, obj: Any, root: int) -> list[Any] | None:
        r = c.rank
        if c.me != root:
            ref = object_payload(obj)(r)
            try:
                c.send(ref, root)
            finally:
                ref.release()
            return None
        out: list[Any] = [None] * c.p
        out[root] = obj
        for i in range(c.p):
            if i != root:
                out[i] = _unpickle(c.recv(None, i, alloc=True))
        return out

    @api
    def barrier(self) -> None:
        """``Barrier``."""
        _, _, c = self._coll("barrier")
        c.barrier()

    @api
    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        """The root's object to every rank."""
        _, _, c = self._coll("bcast", root)
        return self._obj_bcast(c, obj, int(root))

    @api
    def gather(self, sendobj: Any, root: int = 0) -> list[Any] | None:
        """Every rank's object, as a list at the root."""
        _, _, c = self._coll("gather", root)
        return self._obj_gather(c, sendobj, int(root))

    @api
    def scatter(self, sendobj: Sequence[Any] | None = None, root: int = 0) -> Any:
        """Item ``i`` of the root's sequence to rank ``i``."""
        r, st, c = self._coll("scatter", root)
        if st.rank != root:
            return _unpickle(c.recv(None, int(root), alloc=True))
        if sendobj is None or len(sendobj) != st.size:
            raise T.Exception(T.ERR_COUNT, f"scatter needs a sequence of {st.size} items at the root")
        for i in range(st.size):
            if i != root:
                ref = object_payload(sendobj[i])(r)
                try:
                    c.send(ref, i)
                finally:
                    ref.release()
        return sendobj[root]

    @api
    def allgather(self, sendobj: Any) -> list[Any]:
        """Every rank's object, as a list everywhere."""
        _, _, c = self._coll("allgather")
        return self._obj_bcast(c, self._obj_gather(c, sendobj, 0), 0)

    @api
    def alltoall(self, sendobj: Sequence[Any]) -> list[Any]:
        """Item ``i`` of every rank's sequence to rank ``i``."""
        r, st, c = self._coll("alltoall")
        p, me = st.size, st.rank
        if sendobj is None or len(sendobj) != p:
            raise T.Exception(T.ERR_COUNT, f"alltoall needs a sequence of {p} items")
        refs = {i: object_payload(sendobj[i])(r) for i in range(p) if i != me}
        try:
            recvs = {i: c.irecv(None, i, alloc=True) for i in range(p) if i != me}
            sends = [c.isend(refs[i], i) for i in refs]
            c.wait(*sends, *recvs.values())
            return [sendobj[i] if i == me else _unpickle(recvs[i]) for i in range(p)]
        finally:
            _release(*refs.values())

    @api
    def reduce(self, sendobj: Any, op: T.Op = T.SUM, root: int = 0) -> Any:
        """Folds every rank's object with ``op`` (in rank order) at the root."""
        _, _, c = self._coll("reduce", root)
        items = self._obj_gather(c, sendobj, int(root))
        return None if items is None else _fold(op, items)

    @api
    def allreduce(self, sendobj: Any, op: T.Op = T.SUM) -> Any:
        """Folds every rank's object with ``op``; the result everywhere."""
        _, _, c = self._coll("allreduce")
        items = self._obj_gather(c, sendobj, 0)
        return self._obj_bcast(c, None if items is None else _fold(op, items), 0)

    def _obj_scan(self, kind: str, sendobj: Any, op: T.Op, exclusive: bool) -> Any:
        _, st, c = self._coll(kind)
        items = self._obj_bcast(c, self._obj_gather(c, sendobj, 0), 0)
        upto = items[: st.rank] if exclusive else items[: st.rank + 1]
        return _fold(op, upto) if upto else None

    @api
    def scan(self, sendobj: Any, op: T.Op = T.SUM) -> Any:
        """Rank ``r`` gets the fold of ranks 0..r's objects."""
        return self._obj_scan("scan", sendobj, op, exclusive=False)

    @api
    def exscan(self, sendobj: Any, op: T.Op = T.SUM) -> Any:
        """Rank ``r`` gets the fold of ranks 0..r-1's objects (None at rank 0)."""
        return self._obj_scan("exscan", sendobj, op, exclusive=True)
