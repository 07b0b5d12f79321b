"""What every communicator handle has: its state as one rank sees it (the
context, the group, this rank's place), mpi4py's handle semantics, and the
checks of ranks and tags that point-to-point and collective calls share.

``COMM_WORLD`` and ``COMM_SELF`` are handles to *the calling rank's*
communicator (every rank runs the same program, in one Python process); any
other handle holds its state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _types as T
from ._coll import Coll
from ._handle import Handle
from ._runtime import Rank, current_rank

__all__ = ["CommBase", "CommState", "source_text", "tag_text"]


@dataclass(eq=False)
class CommState:
    """A communicator as one rank sees it: its context (point-to-point; the
    collectives use ``ctx + 1``), its group (world ranks, by communicator
    rank), this rank's place in it and its name; a topology, attributes and
    hints if it has them."""

    ctx: int
    group: list[int]
    rank: int
    name: str
    topo: Any = None
    attrs: dict[int, Any] = field(default_factory=dict)
    info: dict[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.group)


def source_text(source: int) -> str:
    return "ANY_SOURCE" if source == T.ANY_SOURCE else str(source)


def tag_text(tag: int) -> str:
    return "ANY_TAG" if tag == T.ANY_TAG else str(tag)


class CommBase(Handle):
    """A communicator handle: ``_h`` is its state, ``"COMM_WORLD"`` /
    ``"COMM_SELF"`` (the calling rank's), or None (``COMM_NULL``)."""

    __slots__ = ()
    _h: CommState | str | None

    def _state(self) -> CommState | None:
        """The state, or None for ``COMM_NULL`` (the predefined ones: the calling rank's)."""
        h = self._h
        if not isinstance(h, str):
            return h
        r = current_rank(f"an {h} call")
        return r.world_comm if h == "COMM_WORLD" else r.self_comm

    def _s(self) -> CommState:
        st = self._state()
        if st is None:
            raise T.Exception(T.ERR_COMM, "the communicator is MPI_COMM_NULL")
        return st

    def _world_rank(self, st: CommState, r: Any, what: str, any_ok: bool = False) -> int:
        if any_ok and r == T.ANY_SOURCE:
            return T.ANY_SOURCE
        if not isinstance(r, int | np.integer) or not 0 <= int(r) < st.size:
            raise T.Exception(
                T.ERR_RANK, f"{what}: rank {r!r} does not exist in {st.name} (ranks 0..{st.size - 1})"
            )
        return st.group[int(r)]

    @staticmethod
    def _check_tag(tag: Any, what: str, any_ok: bool = False) -> int:
        if any_ok and tag == T.ANY_TAG:
            return int(tag)
        if not isinstance(tag, int | np.integer) or not 0 <= int(tag) <= T.MAX_TAG:
            raise T.Exception(T.ERR_TAG, f"{what}: tag {tag!r} is not in 0..{T.MAX_TAG}")
        return int(tag)

    def _coll(self, kind: str, root: Any = None) -> tuple[Rank, CommState, Coll]:
        """The rank, the state and a new collective call of ``kind``."""
        r = current_rank(kind)
        st = self._s()
        if root is not None and not (isinstance(root, int | np.integer) and 0 <= int(root) < st.size):
            raise T.Exception(T.ERR_ROOT, f"{kind}: root {root!r} does not exist in {st.name}")
        return r, st, Coll(r, st, kind, None if root is None else int(root))

    # -- handle semantics --

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CommBase):
            return NotImplemented
        if self._h is other._h:
            return True
        try:
            return self._state() is other._state()
        except T.Exception:
            return False

    def __repr__(self) -> str:
        h = self._h
        name = "MPI_COMM_NULL" if h is None else h if isinstance(h, str) else h.name
        return f"<cellsim.mpi.{type(self).__name__} {name}>"
