"""Communicators: ``Comm`` (point-to-point and collectives), ``Intracomm``
(and the topologies it creates, :mod:`cellsim.mpi._topo`), making new
communicators (``Dup``, ``Split``, ``Create``...), comparing them, their
names, attributes, hints and error handlers; ``COMM_WORLD``, ``COMM_SELF``
and ``COMM_NULL``.

A new communicator gets a fresh context id, agreed on by its ranks (an
allreduce of their next free ids); ``Create_group``, which only the group's
ranks call, agrees within the group on a context set apart for it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _types as T
from ._coll import Coll, leftover_text
from ._collectives import Collectives
from ._commbase import CommState
from ._errors import ERRORS_RETURN, Errhandler, MPIAbort
from ._group import Group
from ._info import INFO_NULL, Info
from ._p2p import PointToPoint
from ._request import Request, _Comm
from ._runtime import BufRef, Rank, api, current_rank
from ._unsupported import CommUnsupported

__all__ = [
    "COMM_NULL",
    "COMM_SELF",
    "COMM_WORLD",
    "Comm",
    "CommState",
    "Intercomm",
    "Intracomm",
    "finalize_checks",
]

BOOTSTRAP_CTX = 0xFFF0
"""The context ``Create_group`` agrees in (its ranks only; the collectives use + 1)."""
MAX_CTX = 0xFFE0

_keyvals = itertools.count(0x100)
_FORTRAN: list[tuple[type, Any]] = []


class Comm(PointToPoint, Collectives, CommUnsupported):  # type: ignore[valid-type, misc]
    """A communicator."""

    __slots__ = ()

    # -- basics --

    def Get_rank(self) -> int:
        """This rank's number in the communicator."""
        return self._s().rank

    def Get_size(self) -> int:
        """How many ranks the communicator has."""
        return self._s().size

    @property
    def rank(self) -> int:
        return self.Get_rank()

    @property
    def size(self) -> int:
        return self.Get_size()

    def Get_group(self) -> Group:
        """The group of the communicator's ranks."""
        return Group._of(self._s().group)

    @property
    def group(self) -> Group:
        return self.Get_group()

    def Get_name(self) -> str:
        """``MPI_COMM_WORLD``..."""
        return self._s().name

    def Set_name(self, name: str) -> None:
        self._s().name = str(name)

    @property
    def name(self) -> str:
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    def Get_topology(self) -> int:
        """``CART``, ``GRAPH``, ``DIST_GRAPH`` or ``UNDEFINED``."""
        topo = self._s().topo
        return T.UNDEFINED if topo is None else topo.kind

    @property
    def topology(self) -> int:
        return self.Get_topology()

    @property
    def is_topo(self) -> bool:
        return self.Get_topology() != T.UNDEFINED

    def Is_inter(self) -> bool:
        """False: intracommunicators only."""
        self._s()
        return False

    def Is_intra(self) -> bool:
        """True."""
        self._s()
        return True

    @property
    def is_inter(self) -> bool:
        return self.Is_inter()

    @property
    def is_intra(self) -> bool:
        return self.Is_intra()

    @classmethod
    def Compare(cls, comm1: Comm, comm2: Comm) -> int:
        """``IDENT`` (the same communicator), ``CONGRUENT`` (same ranks in the
        same order), ``SIMILAR`` (same ranks) or ``UNEQUAL``."""
        a, b = comm1._s(), comm2._s()
        if a is b:
            return T.IDENT
        if a.group == b.group:
            return T.CONGRUENT
        return T.SIMILAR if sorted(a.group) == sorted(b.group) else T.UNEQUAL

    # -- new communicators --

    def _new_context(self, c: Coll, r: Rank, count: int) -> int:
        """Agrees on ``count`` fresh context ids (an allreduce of the ranks' next free ids)."""
        n = r.temp(8)
        try:
            assert n.shadow is not None
            n.shadow[:8] = np.array([r.next_ctx], dtype=np.int64).view(np.uint8)
            c.allreduce(BufRef(n.ea, 8, T.LONG, 1), T.MAX, T.LONG)
            base = int(np.frombuffer(bytes(n.shadow[:8]), np.int64)[0])
        finally:
            n.release()
        r.next_ctx = base + count
        if 2 * (base + count) >= MAX_CTX:
            raise T.Exception(T.ERR_COMM, "too many communicators (context ids are 16-bit)")
        return base

    def _split(self, kind: str, color: int, key: int) -> CommState | None:
        """The state of this rank's new communicator of ``color`` (ranked by
        ``(key, old rank)``), or None for ``UNDEFINED``."""
        r, st, c = self._coll(kind)
        info = r.temp(16 * st.size)
        try:
            assert info.shadow is not None
            mine = np.array([int(color), int(key)], dtype=np.int64)
            info.shadow[16 * st.rank : 16 * st.rank + 16] = mine.view(np.uint8)
            c.allgatherv(info, [16 * i for i in range(st.size)], [16] * st.size)
            table = np.frombuffer(bytes(info.shadow[: 16 * st.size]), np.int64).reshape(st.size, 2)
        finally:
            info.release()
        colors = sorted({int(x) for x in table[:, 0] if int(x) != T.UNDEFINED})
        base = self._new_context(c, r, max(1, len(colors)))
        if int(color) == T.UNDEFINED:
            return None
        members = sorted((int(table[i, 1]), i) for i in range(st.size) if int(table[i, 0]) == int(color))
        group = [st.group[i] for _, i in members]
        ctx = 2 * (base + colors.index(int(color)))
        return CommState(ctx, group, group.index(r.rank), f"{st.name}.{kind}({color})")

    def _with_members(self, kind: str, members: Sequence[int]) -> CommState | None:
        """A new communicator of the world ranks ``members`` (in order), made
        by every rank of this one; None for the ranks not in it."""
        r, st, c = self._coll(kind)
        base = self._new_context(c, r, 1)
        if r.rank not in members:
            return None
        return CommState(2 * base, list(members), list(members).index(r.rank), f"{st.name}.{kind}()")

    @api
    def Split(self, color: int = 0, key: int = 0) -> Comm:
        """New communicators, one per ``color``, ranked by ``(key, old rank)``;
        ``color=UNDEFINED`` gives ``COMM_NULL``."""
        return Intracomm._of(self._split("Split", color, key))

    @api
    def Split_type(self, split_type: int, key: int = 0, info: Info = INFO_NULL) -> Comm:
        """``COMM_TYPE_SHARED``: the ranks that share memory (all of them: one
        machine); ``UNDEFINED`` gives ``COMM_NULL``."""
        color = T.UNDEFINED if split_type == T.UNDEFINED else 0
        return Intracomm._of(self._split("Split_type", color, key))

    @api
    def Dup(self, info: Info | None = None) -> Comm:
        """A communicator with the same ranks and a new context."""
        st = self._s()
        new = self._with_members("Dup", st.group)
        assert new is not None
        new.topo, new.attrs, new.name = st.topo, dict(st.attrs), f"{st.name}.Dup()"
        return type(self)._of(new)

    Clone = Dup

    def Dup_with_info(self, info: Info) -> Comm:
        """``Dup`` (the hints are kept)."""
        return self.Dup(info)

    def Idup(self) -> tuple[Comm, Request]:
        """``Dup``, with a request complete at once."""
        return self.Dup(), Request._of(_Comm(None, None))

    @api
    def Create(self, group: Group) -> Comm:
        """A communicator of ``group``'s ranks (every rank of this one calls
        it; the others get ``COMM_NULL``)."""
        return Intracomm._of(self._with_members("Create", group._members))

    @api
    def Create_group(self, group: Group, tag: int = 0) -> Comm:
        """A communicator of ``group``'s ranks, made by them alone."""
        r = current_rank("Create_group")
        members = group._members
        if r.rank not in members:
            raise T.Exception(T.ERR_GROUP, "Create_group: the calling rank is not in the group")
        boot = CommState(BOOTSTRAP_CTX, list(members), members.index(r.rank), "Create_group")
        r.coll_seq[BOOTSTRAP_CTX + 1] = 0  # every call starts afresh: its ranks alone agree
        base = self._new_context(Coll(r, boot, "Create_group"), r, 1)
        st = self._s()
        return Intracomm._of(
            CommState(2 * base, list(members), members.index(r.rank), f"{st.name}.Create_group()")
        )

    def Free(self) -> None:
        """Frees the communicator (the handle becomes ``COMM_NULL``)."""
        if isinstance(self._h, str):
            raise T.Exception(T.ERR_COMM, f"MPI_Comm_free: {self._h} cannot be freed")
        self._s()
        self._h = None

    def Disconnect(self) -> None:
        """``Free``."""
        self.Free()

    def Abort(self, errorcode: int = 0) -> None:
        """Stops every rank; mpirun ends with ``errorcode`` as its exit status."""
        st = self._state()
        raise MPIAbort(int(errorcode), st.name if st is not None else "MPI_COMM_NULL")

    @classmethod
    def Get_parent(cls) -> Comm:
        """``COMM_NULL``: ranks are not spawned (``Spawn`` is not supported)."""
        return COMM_NULL

    # -- attributes, hints, error handlers --

    @classmethod
    def Create_keyval(
        cls,
        copy_fn: Callable[..., Any] | None = None,
        delete_fn: Callable[..., Any] | None = None,
        nopython: bool = False,
    ) -> int:
        """A new attribute key."""
        return next(_keyvals)

    @classmethod
    def Free_keyval(cls, keyval: int) -> int:
        return T.KEYVAL_INVALID

    def Get_attr(self, keyval: int) -> Any:
        """An attribute: ``TAG_UB``, ``UNIVERSE_SIZE``... or one set with ``Set_attr`` (None if unset)."""
        st = self._s()
        predefined = {
            T.TAG_UB: T.MAX_TAG,
            T.HOST: T.PROC_NULL,
            T.IO: T.ANY_SOURCE,
            T.WTIME_IS_GLOBAL: False,
            T.UNIVERSE_SIZE: current_rank("Get_attr").size,
            T.APPNUM: 0,
            T.LASTUSEDCODE: T.ERR_LASTCODE,
        }
        return predefined[keyval] if keyval in predefined else st.attrs.get(keyval)

    def Set_attr(self, keyval: int, attrval: Any) -> None:
        self._s().attrs[int(keyval)] = attrval

    def Delete_attr(self, keyval: int) -> None:
        self._s().attrs.pop(int(keyval), None)

    def Get_info(self) -> Info:
        """A copy of the hints."""
        info = Info.Create()
        info.update(self._s().info)
        return info

    def Set_info(self, info: Info) -> None:
        self._s().info = dict(info.items())

    def Get_errhandler(self) -> Errhandler:
        """``ERRORS_RETURN``: errors raise ``MPI.Exception``."""
        self._s()
        return Errhandler(ERRORS_RETURN)

    def Set_errhandler(self, errhandler: Errhandler) -> None:
        """Accepted; errors raise ``MPI.Exception`` whatever the handler."""
        self._s()

    def Call_errhandler(self, errorcode: int) -> None:
        """Raises ``MPI.Exception(errorcode)``."""
        raise T.Exception(int(errorcode), f"Call_errhandler on {self._s().name}")

    # -- Fortran handles --

    def py2f(self) -> int:
        """An integer handle (for ``f2py``)."""
        for i, (cls, h) in enumerate(_FORTRAN):
            if cls is type(self) and h is self._h:
                return i
        _FORTRAN.append((type(self), self._h))
        return len(_FORTRAN) - 1

    @classmethod
    def f2py(cls, arg: int) -> Comm:
        kind, h = _FORTRAN[int(arg)]
        return kind._of(h)  # type: ignore[no-any-return, attr-defined]


class Intracomm(Comm):
    """An intracommunicator (every communicator here); it makes the topologies."""

    __slots__ = ()

    def Create_cart(
        self, dims: Sequence[int], periods: Sequence[bool] | None = None, reorder: bool = False
    ) -> Any:
        """A Cartesian grid of ``dims`` over the first ranks (the others get ``COMM_NULL``)."""
        from ._topo import create_cart

        return create_cart(self, dims, periods)

    def Create_graph(self, index: Sequence[int], edges: Sequence[int], reorder: bool = False) -> Any:
        """A graph (``index``: cumulative degrees, with or without a leading 0)."""
        from ._topo import create_graph

        return create_graph(self, index, edges)

    def Create_dist_graph_adjacent(
        self,
        sources: Sequence[int] | None,
        destinations: Sequence[int] | None,
        sourceweights: Any = None,
        destweights: Any = None,
        info: Info = INFO_NULL,
        reorder: bool = False,
    ) -> Any:
        """A distributed graph: this rank's in- and out-neighbours."""
        from ._topo import create_dist_graph_adjacent

        return create_dist_graph_adjacent(self, sources, destinations, sourceweights, destweights)

    def Create_dist_graph(
        self,
        sources: Sequence[int],
        degrees: Sequence[int],
        destinations: Sequence[int],
        weights: Any = None,
        info: Info = INFO_NULL,
        reorder: bool = False,
    ) -> Any:
        """A distributed graph from edges any rank may give."""
        from ._topo import create_dist_graph

        return create_dist_graph(self, sources, degrees, destinations, weights)

    def Cart_map(self, dims: Sequence[int], periods: Sequence[bool] | None = None) -> int:
        """This rank's rank in a Cartesian grid of ``dims`` (no reordering: its own, or ``UNDEFINED``)."""
        n = int(np.prod([int(d) for d in dims], dtype=np.int64))
        me = self.Get_rank()
        return me if me < n else T.UNDEFINED

    def Graph_map(self, index: Sequence[int], edges: Sequence[int]) -> int:
        """This rank's rank in a graph (no reordering)."""
        from ._topo import graph_index

        n = len(graph_index(index, edges))
        me = self.Get_rank()
        return me if me < n else T.UNDEFINED


class Intercomm(Comm):
    """Intercommunicators are not supported: ``MPI.Intercomm()`` is ``COMM_NULL``
    and nothing makes another (``Create_intercomm`` raises ``NotImplementedError``)."""

    __slots__ = ()


COMM_WORLD = Intracomm._of("COMM_WORLD")
COMM_SELF = Intracomm._of("COMM_SELF")
COMM_NULL = Comm()


def finalize_checks(r: Rank) -> None:
    """At ``Finalize``: collective messages nobody received mean the ranks
    called different collectives."""
    assert r.proto is not None
    left = [m for m in r.proto.leftovers() if m.ctx % 2 == 1]
    if left:
        m = left[0]
        raise T.Exception(
            T.ERR_OTHER,
            f"mismatched collective calls: at MPI_Finalize rank {r.rank} has not received the message rank "
            f"{m.src} sent for its {leftover_text(m.tag)} (communicator context {m.ctx // 2})",
        )
