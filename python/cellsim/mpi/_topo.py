"""Process topologies: Cartesian grids, graphs and distributed graphs,
and ``Compute_dims``.

A topology is a communicator with a description; ranks are never
reordered (every SPE is as near to every other on the ring bus as the
placement makes it, and the placement is the machine's). Neighbour
collectives (MPI-3) are not offered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _types as T
from ._comm import Intracomm
from ._unsupported import MPI3, raising

__all__ = ["Cartcomm", "Compute_dims", "Distgraphcomm", "Graphcomm", "Topocomm"]


@dataclass
class Topology:
    """What a topology communicator knows: its kind and its neighbours (communicator ranks)."""

    kind: int
    dims: list[int] = field(default_factory=list)
    periods: list[int] = field(default_factory=list)
    index: list[int] = field(default_factory=list)
    edges: list[int] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    destinations: list[int] = field(default_factory=list)
    weights: tuple[list[int], list[int]] | None = None


def Compute_dims(nnodes: int, dims: int | Sequence[int]) -> list[int]:
    """A balanced grid of ``nnodes`` (``MPI_Dims_create``): the zero entries
    of ``dims`` (or ``dims`` zeros) filled, largest first."""
    out = [0] * dims if isinstance(dims, int) else [int(d) for d in dims]
    fixed = int(np.prod([d for d in out if d > 0], dtype=np.int64))
    free = [i for i, d in enumerate(out) if d == 0]
    if any(d < 0 for d in out) or nnodes % fixed:
        raise T.Exception(T.ERR_DIMS, f"Compute_dims({nnodes}, {out}): {nnodes} is not a multiple of {fixed}")
    if not free:
        if fixed != nnodes:
            raise T.Exception(T.ERR_DIMS, f"Compute_dims({nnodes}, {out}): the dimensions make {fixed}")
        return out
    left, factors, f = nnodes // fixed, [], 2
    while left > 1:
        while left % f == 0:
            factors.append(f)
            left //= f
        f += 1
    sizes = [1] * len(free)
    for f in sorted(factors, reverse=True):
        sizes[sizes.index(min(sizes))] *= f
    for i, s in zip(free, sorted(sizes, reverse=True), strict=True):
        out[i] = s
    return out


def _topo(comm: Any) -> Topology:
    topo = comm._s().topo
    if topo is None:
        raise T.Exception(T.ERR_TOPOLOGY, f"{comm._s().name} has no topology")
    return topo  # type: ignore[no-any-return]


class Topocomm(Intracomm):
    """A communicator with a topology: its neighbours."""

    __slots__ = ()

    def _edges(self) -> tuple[list[int], list[int]]:
        raise NotImplementedError

    @property
    def degrees(self) -> tuple[int, int]:
        i, o = self._edges()
        return len(i), len(o)

    @property
    def indegree(self) -> int:
        return self.degrees[0]

    @property
    def outdegree(self) -> int:
        return self.degrees[1]

    @property
    def inoutedges(self) -> tuple[list[int], list[int]]:
        return self._edges()

    @property
    def inedges(self) -> list[int]:
        return self._edges()[0]

    @property
    def outedges(self) -> list[int]:
        return self._edges()[1]

    Neighbor_allgather = raising("Topocomm.Neighbor_allgather", MPI3)
    Neighbor_allgatherv = raising("Topocomm.Neighbor_allgatherv", MPI3)
    Neighbor_alltoall = raising("Topocomm.Neighbor_alltoall", MPI3)
    Neighbor_alltoallv = raising("Topocomm.Neighbor_alltoallv", MPI3)
    Neighbor_alltoallw = raising("Topocomm.Neighbor_alltoallw", MPI3)
    neighbor_allgather = raising("Topocomm.neighbor_allgather", MPI3)
    neighbor_alltoall = raising("Topocomm.neighbor_alltoall", MPI3)


class Cartcomm(Topocomm):
    """A Cartesian grid (row-major ranks)."""

    __slots__ = ()

    def Get_dim(self) -> int:
        return len(_topo(self).dims)

    @property
    def dim(self) -> int:
        return self.Get_dim()

    ndim = dim

    def Get_topo(self) -> tuple[list[int], list[int], list[int]]:
        """``(dims, periods, coords)``."""
        t = _topo(self)
        return list(t.dims), list(t.periods), self.Get_coords(self.Get_rank())

    @property
    def topo(self) -> tuple[list[int], list[int], list[int]]:
        return self.Get_topo()

    @property
    def dims(self) -> list[int]:
        return list(_topo(self).dims)

    @property
    def periods(self) -> list[int]:
        return list(_topo(self).periods)

    @property
    def coords(self) -> list[int]:
        return self.Get_coords(self.Get_rank())

    def Get_cart_rank(self, coords: Sequence[int]) -> int:
        """The rank at ``coords`` (periodic dimensions wrap around)."""
        t = _topo(self)
        rank = 0
        for c, d, p in zip([int(x) for x in coords], t.dims, t.periods, strict=True):
            if p:
                c %= d
            elif not 0 <= c < d:
                raise T.Exception(T.ERR_ARG, f"Get_cart_rank: coordinate {c} is outside 0..{d - 1}")
            rank = rank * d + c
        return rank

    def Get_coords(self, rank: int) -> list[int]:
        """The coordinates of ``rank``."""
        t = _topo(self)
        if not 0 <= int(rank) < self.Get_size():
            raise T.Exception(T.ERR_RANK, f"Get_coords: rank {rank} is not in the grid")
        out, r = [], int(rank)
        for d in reversed(t.dims):
            out.append(r % d)
            r //= d
        return out[::-1]

    def Shift(self, direction: int, disp: int) -> tuple[int, int]:
        """``(source, dest)``: the ranks ``disp`` before and after this one
        along ``direction`` (``PROC_NULL`` past a non-periodic edge)."""
        t = _topo(self)
        me = self.coords

        def at(delta: int) -> int:
            c = list(me)
            c[direction] += delta
            if not t.periods[direction] and not 0 <= c[direction] < t.dims[direction]:
                return T.PROC_NULL
            return self.Get_cart_rank(c)

        return at(-int(disp)), at(int(disp))

    def Sub(self, remain_dims: Sequence[bool]) -> Cartcomm:
        """The sub-grids keeping the dimensions ``remain_dims`` says."""
        t = _topo(self)
        keep = [bool(x) for x in remain_dims]
        me = self.coords
        color = key = 0
        for c, d, k in zip(me, t.dims, keep, strict=True):
            if k:
                key = key * d + c
            else:
                color = color * d + c
        st = self._split("Sub", color, key)
        assert st is not None
        sub = [i for i, k in enumerate(keep) if k]
        st.topo = Topology(T.CART, [t.dims[i] for i in sub], [t.periods[i] for i in sub])
        return Cartcomm._of(st)

    def _edges(self) -> tuple[list[int], list[int]]:
        out: list[int] = []
        for i in range(self.Get_dim()):
            out += list(self.Shift(i, 1))
        return out, list(out)


class Graphcomm(Topocomm):
    """A general graph (the same for every rank)."""

    __slots__ = ()

    def Get_dims(self) -> tuple[int, int]:
        t = _topo(self)
        return len(t.index), len(t.edges)

    @property
    def dims(self) -> tuple[int, int]:
        return self.Get_dims()

    @property
    def nnodes(self) -> int:
        return self.Get_dims()[0]

    @property
    def nedges(self) -> int:
        return self.Get_dims()[1]

    def Get_topo(self) -> tuple[list[int], list[int]]:
        """``(index, edges)``."""
        t = _topo(self)
        return list(t.index), list(t.edges)

    @property
    def topo(self) -> tuple[list[int], list[int]]:
        return self.Get_topo()

    @property
    def index(self) -> list[int]:
        return list(_topo(self).index)

    @property
    def edges(self) -> list[int]:
        return list(_topo(self).edges)

    def Get_neighbors_count(self, rank: int) -> int:
        return len(self.Get_neighbors(rank))

    def Get_neighbors(self, rank: int) -> list[int]:
        """The neighbours of ``rank``."""
        t = _topo(self)
        lo = t.index[rank - 1] if rank > 0 else 0
        return list(t.edges[lo : t.index[rank]])

    @property
    def nneighbors(self) -> int:
        return self.Get_neighbors_count(self.Get_rank())

    @property
    def neighbors(self) -> list[int]:
        return self.Get_neighbors(self.Get_rank())

    def _edges(self) -> tuple[list[int], list[int]]:
        n = self.neighbors
        return n, list(n)


class Distgraphcomm(Topocomm):
    """A distributed graph: each rank knows its own neighbours."""

    __slots__ = ()

    def Get_dist_neighbors_count(self) -> tuple[int, int, bool]:
        """``(indegree, outdegree, weighted)``."""
        t = _topo(self)
        return len(t.sources), len(t.destinations), t.weights is not None

    def Get_dist_neighbors(self) -> tuple[list[int], list[int], tuple[list[int], list[int]] | None]:
        """``(sources, destinations, weights or None)``."""
        t = _topo(self)
        w = None if t.weights is None else (list(t.weights[0]), list(t.weights[1]))
        return list(t.sources), list(t.destinations), w

    def _edges(self) -> tuple[list[int], list[int]]:
        t = _topo(self)
        return list(t.sources), list(t.destinations)


# -- creation (the Intracomm methods) -----------------------------------------------------------------


def graph_index(index: Sequence[int], edges: Sequence[int]) -> list[int]:
    """The cumulative degrees, without mpi4py's optional leading 0."""
    ix = [int(x) for x in index]
    if len(ix) > 1 and ix[0] == 0 and ix[-1] == len(edges):
        ix = ix[1:]
    return ix


def create_cart(comm: Intracomm, dims: Sequence[int], periods: Sequence[bool] | None) -> Any:
    d = [int(x) for x in dims]
    if periods is None or isinstance(periods, bool | int):
        per = [int(bool(periods))] * len(d)
    else:
        per = [int(bool(x)) for x in periods]
    st = comm._s()
    n = int(np.prod(d, dtype=np.int64))
    if n > st.size or any(x <= 0 for x in d) or len(per) != len(d):
        raise T.Exception(T.ERR_DIMS, f"Create_cart: dims {d} (periods {per}) do not fit {st.size} ranks")
    new = comm._with_members("Create_cart", st.group[:n])
    if new is not None:
        new.topo = Topology(T.CART, d, per)
    return Cartcomm._of(new)


def create_graph(comm: Intracomm, index: Sequence[int], edges: Sequence[int]) -> Any:
    ix, ed = graph_index(index, edges), [int(x) for x in edges]
    st = comm._s()
    if len(ix) > st.size or any(not 0 <= e < len(ix) for e in ed):
        raise T.Exception(T.ERR_TOPOLOGY, f"Create_graph: {len(ix)} nodes, edges {ed}, {st.size} ranks")
    new = comm._with_members("Create_graph", st.group[: len(ix)])
    if new is not None:
        new.topo = Topology(T.GRAPH, index=ix, edges=ed)
    return Graphcomm._of(new)


def _weights(w: Any, n: int) -> list[int] | None:
    if w is None or w is T.UNWEIGHTED:
        return None
    if w is T.WEIGHTS_EMPTY:
        return []
    return [int(x) for x in w][:n]


def _dist(comm: Intracomm, kind: str, sources: list[int], dests: list[int], sw: Any, dw: Any) -> Any:
    st = comm._s()
    new = comm._with_members(kind, st.group)
    assert new is not None
    weighted = sw is not None or dw is not None
    weights = (sw or [], dw or []) if weighted else None
    new.topo = Topology(T.DIST_GRAPH, sources=sources, destinations=dests, weights=weights)
    return Distgraphcomm._of(new)


def create_dist_graph_adjacent(
    comm: Intracomm, sources: Any, destinations: Any, sourceweights: Any, destweights: Any
) -> Any:
    src = [int(x) for x in sources or []]
    dst = [int(x) for x in destinations or []]
    return _dist(
        comm,
        "Create_dist_graph",
        src,
        dst,
        _weights(sourceweights, len(src)),
        _weights(destweights, len(dst)),
    )


def create_dist_graph(
    comm: Intracomm, sources: Sequence[int], degrees: Sequence[int], destinations: Sequence[int], weights: Any
) -> Any:
    w = _weights(weights, len(destinations))
    mine, at = [], 0
    for s, k in zip(sources, degrees, strict=True):
        for j in range(int(k)):
            mine.append((int(s), int(destinations[at + j]), w[at + j] if w else 0))
        at += int(k)
    edges = [e for part in comm.allgather(mine) for e in part]
    me = comm.Get_rank()
    ins = [(s, x) for s, d, x in edges if d == me]
    outs = [(d, x) for s, d, x in edges if s == me]
    sw = [x for _, x in ins] if w is not None else None
    dw = [x for _, x in outs] if w is not None else None
    return _dist(comm, "Create_dist_graph", [s for s, _ in ins], [d for d, _ in outs], sw, dw)
