"""Process groups: ordered sets of world ranks, with mpi4py's handle
semantics (``MPI.Group()`` is ``GROUP_NULL``, ``Free`` makes a handle null).

A group is local: making one never communicates. ``Comm.Create`` and
``Comm.Create_group`` turn one into a communicator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _types as T
from ._handle import Handle
from ._runtime import current_rank

__all__ = ["GROUP_EMPTY", "GROUP_NULL", "Group"]


class _GroupObj:
    """The MPI object: world ranks in group order."""

    def __init__(self, members: Sequence[int]) -> None:
        self.members = [int(m) for m in members]


def _me() -> int:
    try:
        return current_rank().rank
    except T.Exception:
        return -1


class Group(Handle):
    """A group handle."""

    __slots__ = ()
    _h: _GroupObj | None

    @classmethod
    def _of(cls, members: Sequence[int]) -> Group:  # type: ignore[override]
        return super()._of(_GroupObj(members))

    @property
    def _members(self) -> list[int]:
        if self._h is None:
            raise T.Exception(T.ERR_GROUP, "the group is MPI_GROUP_NULL")
        return self._h.members

    def __repr__(self) -> str:
        return "<cellsim.mpi.Group null>" if self._h is None else f"<cellsim.mpi.Group {self._h.members}>"

    def Get_size(self) -> int:
        """How many processes the group has."""
        return len(self._members)

    @property
    def size(self) -> int:
        return self.Get_size()

    def Get_rank(self) -> int:
        """This process's rank in the group (``UNDEFINED`` if not in it)."""
        m = self._members
        me = _me()
        return m.index(me) if me in m else T.UNDEFINED

    @property
    def rank(self) -> int:
        return self.Get_rank()

    def Translate_ranks(self, ranks: Sequence[int] | None = None, group: Group | None = None) -> list[int]:
        """The ranks in ``group`` of the processes with ``ranks`` in this one
        (``UNDEFINED`` where absent; ``PROC_NULL`` stays); without ``group``, their world ranks."""
        m = self._members
        ranks = list(range(len(m))) if ranks is None else [int(x) for x in ranks]
        other = group._members if group is not None else None
        out = []
        for x in ranks:
            if x == T.PROC_NULL:
                out.append(T.PROC_NULL)
                continue
            if not 0 <= x < len(m):
                raise T.Exception(T.ERR_RANK, f"Translate_ranks: rank {x} is not in a group of {len(m)}")
            w = m[x]
            out.append(w if other is None else (other.index(w) if w in other else T.UNDEFINED))
        return out

    @classmethod
    def Compare(cls, group1: Group, group2: Group) -> int:
        """``IDENT`` (same members, same order), ``SIMILAR`` (same members) or ``UNEQUAL``."""
        a, b = group1._members, group2._members
        if a == b:
            return T.IDENT
        return T.SIMILAR if sorted(a) == sorted(b) else T.UNEQUAL

    def Dup(self) -> Group:
        """A new handle to an identical group."""
        return Group._of(self._members)

    def Free(self) -> None:
        """Frees the group (the handle becomes ``GROUP_NULL``)."""
        self._members  # noqa: B018  (a null group is an error)
        if self is not GROUP_EMPTY:  # the constant stays usable, as in mpi4py
            self._h = None

    # -- set operations --

    @classmethod
    def Union(cls, group1: Group, group2: Group) -> Group:
        """The members of ``group1``, then those of ``group2`` not in it."""
        a = group1._members
        return _group(a + [x for x in group2._members if x not in a])

    @classmethod
    def Intersection(cls, group1: Group, group2: Group) -> Group:
        """The members of ``group1`` that are in ``group2`` (in ``group1``'s order)."""
        b = set(group2._members)
        return _group([x for x in group1._members if x in b])

    Intersect = Intersection

    @classmethod
    def Difference(cls, group1: Group, group2: Group) -> Group:
        """The members of ``group1`` not in ``group2``."""
        b = set(group2._members)
        return _group([x for x in group1._members if x not in b])

    def Incl(self, ranks: Sequence[int]) -> Group:
        """The processes with ``ranks``, in that order."""
        m = self._members
        return _group([m[self._check(x, "Incl")] for x in ranks])

    def Excl(self, ranks: Sequence[int]) -> Group:
        """Every process but those with ``ranks``."""
        out = {self._check(x, "Excl") for x in ranks}
        return _group([w for i, w in enumerate(self._members) if i not in out])

    def Range_incl(self, ranks: Sequence[tuple[int, int, int]]) -> Group:
        """The processes of the ranges ``(first, last, stride)``, in order."""
        return self.Incl(_ranges(ranks))

    def Range_excl(self, ranks: Sequence[tuple[int, int, int]]) -> Group:
        """Every process but those of the ranges."""
        return self.Excl(_ranges(ranks))

    def _check(self, x: Any, call: str) -> int:
        n = len(self._members)
        if not 0 <= int(x) < n:
            raise T.Exception(T.ERR_RANK, f"{call}: rank {x} is not in a group of {n}")
        return int(x)


def _group(members: list[int]) -> Group:
    return Group._of(members)


def _ranges(ranks: Sequence[tuple[int, int, int]]) -> list[int]:
    out: list[int] = []
    for first, last, stride in ranks:
        if stride == 0:
            raise T.Exception(T.ERR_ARG, "a range's stride is 0")
        out += list(range(first, last + (1 if stride > 0 else -1), stride))
    return out


GROUP_NULL = Group()
GROUP_EMPTY = Group._of([])
