"""Typemaps: where the bytes of an MPI datatype lie, and how derived
datatypes compose them.

A typemap is kept as its *segments*: ``(byte offset, bytes)`` runs in
typemap order (the order the data is packed in), with runs that follow one
another merged, so a contiguous array of a million doubles is one segment
and a vector of a thousand blocks is a thousand. With them go the bounds
(``lb``, ``ub``: the extent that consecutive instances are apart) and the
basic elements in order (run-length coded), for ``Get_elements`` and for
reductions on datatypes built from one basic type.

The constructors follow MPI-3.1 chapter 4: every derived type is a list of
blocks, each ``count`` consecutive instances of an old type at a byte
displacement. Bounds: the lowest ``disp + lb`` and highest ``disp + lb +
count * extent`` of the non-empty blocks; ``Create_struct`` then rounds the
extent up to the strictest alignment of its basic types, as MPICH does
(unless a bound was set with ``Create_resized``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

__all__ = ["Typemap", "basic", "blocks", "byte_index", "darray", "resized", "subarray"]

DISTRIBUTE_NONE, DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC = 0, 1, 2
DISTRIBUTE_DFLT_DARG = -49767
ORDER_C, ORDER_FORTRAN = 56, 57

_NO_SEGMENTS = np.zeros((0, 2), np.int64)


@dataclass(frozen=True, eq=False)
class Typemap:
    """One instance of a datatype: segments, bounds and basic elements
    (what is derived from them is computed once: messages ask often)."""

    segments: np.ndarray
    """``(k, 2)`` int64: byte offset and length of each run, in typemap order."""
    lb: int
    ub: int
    runs: tuple[tuple[Any, int], ...]
    """The basic elements in order: ``(basic datatype, how many)`` runs."""
    align: int = 1
    """The strictest alignment of its basic types (for ``Create_struct``'s padding)."""
    sticky: bool = False
    """A bound was set by ``Create_resized`` (no alignment padding then)."""

    @cached_property
    def size(self) -> int:
        """Bytes of data in one instance."""
        return int(self.segments[:, 1].sum()) if len(self.segments) else 0

    @cached_property
    def extent(self) -> int:
        return self.ub - self.lb

    @cached_property
    def true_lb(self) -> int:
        return int(self.segments[:, 0].min()) if len(self.segments) else 0

    @cached_property
    def true_ub(self) -> int:
        return int((self.segments[:, 0] + self.segments[:, 1]).max()) if len(self.segments) else 0

    @cached_property
    def contiguous(self) -> bool:
        """One run from 0 filling the extent: moved as plain bytes."""
        s = self.segments
        return (len(s) == 1 and int(s[0, 0]) == 0 and int(s[0, 1]) == self.extent) or (
            len(s) == 0 and self.extent == 0
        )

    @cached_property
    def elements(self) -> int:
        """Basic elements in one instance."""
        return sum(n for _, n in self.runs)

    def homogeneous(self) -> Any:
        """The one basic datatype it is made of, else None."""
        kinds = {id(b): b for b, _ in self.runs}
        return next(iter(kinds.values())) if len(kinds) == 1 else None

    def tiled(self, count: int, start: int = 0) -> np.ndarray:
        """The segments of ``count`` consecutive instances from byte ``start``."""
        if count <= 0 or not len(self.segments):
            return _NO_SEGMENTS
        if count == 1 and start == 0:
            return self.segments
        shift = start + np.arange(count, dtype=np.int64) * self.extent
        out = np.repeat(self.segments[None, :, :], count, axis=0).copy()
        out[:, :, 0] += shift[:, None]
        return merge(out.reshape(-1, 2))

    def elements_in(self, nbytes: int) -> int:
        """Basic elements in the first ``nbytes`` of packed data (whole ones)."""
        per, size = self.elements, self.size
        if size == 0:
            return 0
        whole, rest = divmod(nbytes, size)
        n = whole * per
        for b, k in self.runs:
            take = min(k, rest // b.size)
            n += take
            rest -= take * b.size
            if take < k:
                break
        return n


def byte_index(seg: np.ndarray) -> np.ndarray:
    """The offsets of every byte of the runs, in typemap order (the packed order)."""
    n = seg[:, 1]
    before = np.concatenate([[0], np.cumsum(n)[:-1]]) if len(n) else n
    return np.repeat(seg[:, 0] - before, n) + np.arange(int(n.sum()), dtype=np.int64)


def merge(seg: np.ndarray) -> np.ndarray:
    """Drops empty runs and merges runs that continue one another."""
    seg = seg[seg[:, 1] > 0]
    if len(seg) < 2:
        return np.ascontiguousarray(seg, dtype=np.int64)
    ends = seg[:, 0] + seg[:, 1]
    starts_new = np.ones(len(seg), bool)
    starts_new[1:] = seg[1:, 0] != ends[:-1]
    idx = np.flatnonzero(starts_new)
    lengths = np.add.reduceat(seg[:, 1], idx)
    return np.stack([seg[idx, 0], lengths], axis=1).astype(np.int64)


def _runs(parts: Sequence[tuple[tuple[tuple[Any, int], ...], int]]) -> tuple[tuple[Any, int], ...]:
    """Concatenates ``runs * count`` for each part, merging equal neighbours."""
    out: list[list[Any]] = []
    for runs, count in parts:
        if count <= 0:
            continue
        seq = runs if len(runs) != 1 else ((runs[0][0], runs[0][1] * count),)
        reps = 1 if len(runs) == 1 else count
        for _ in range(reps):
            for b, n in seq:
                if out and out[-1][0] is b:
                    out[-1][1] += n
                else:
                    out.append([b, n])
    return tuple((b, n) for b, n in out)


def basic(
    datatype: Any, size: int, extent: int | None = None, fields: Sequence[tuple[int, Any]] = ()
) -> Typemap:
    """The typemap of a named type: ``size`` bytes (for the pair types of
    ``MINLOC``/``MAXLOC``, its ``fields``: offset and basic type of each)."""
    ext = size if extent is None else extent
    if fields:
        seg = merge(np.array([[off, b.size] for off, b in fields], np.int64))
        runs = _runs([(((b, 1),), 1) for _, b in fields])
        return Typemap(seg, 0, ext, runs, max(b.typemap.align for _, b in fields))
    seg = np.array([[0, size]], np.int64) if size else _NO_SEGMENTS
    return Typemap(seg, 0, ext, ((datatype, 1),) if size else (), max(1, min(size, 16)))


def blocks(items: Sequence[tuple[int, int, Typemap]], struct: bool = False) -> Typemap:
    """``count`` consecutive instances of a typemap at a byte displacement,
    for each ``(displacement, count, typemap)``, in order."""
    live = [(d, c, t) for d, c, t in items if c > 0]
    parts = [t.tiled(c, d) for d, c, t in live]
    seg = merge(np.concatenate(parts)) if parts else _NO_SEGMENTS
    runs = _runs([(t.runs, c) for _, c, t in live])
    if not live:
        return Typemap(seg, 0, 0, runs)
    lb = min(d + t.lb for d, _, t in live)
    ub = max(d + t.lb + c * t.extent for d, c, t in live)
    align = max(t.align for _, _, t in live)
    sticky = any(t.sticky for _, _, t in live)
    if struct and not sticky and (ub - lb) % align:
        ub += align - (ub - lb) % align
    return Typemap(seg, lb, ub, runs, align, sticky)


def resized(t: Typemap, lb: int, extent: int) -> Typemap:
    """The same data with new bounds."""
    return Typemap(t.segments, lb, lb + extent, t.runs, t.align, True)


def _grid(t: Typemap, sizes: Sequence[int], picks: Sequence[Sequence[int]], order: int) -> Typemap:
    """The elements at the index combinations ``picks`` (one list per
    dimension) of an array of ``sizes``, in array order; bounds: the whole
    array."""
    dims = list(range(len(sizes)))
    if order == ORDER_FORTRAN:
        dims.reverse()
    strides = [0] * len(sizes)
    s = t.extent
    for d in reversed(dims):
        strides[d] = s
        s *= sizes[d]
    offsets = np.zeros(1, np.int64)
    for d in dims:
        idx = np.asarray(picks[d], np.int64) * strides[d]
        offsets = (offsets[:, None] + idx[None, :]).reshape(-1)
    if len(t.segments) == 1 and int(t.segments[0, 1]) == t.extent:
        seg = merge(np.stack([offsets + t.segments[0, 0], np.full(len(offsets), t.extent)], axis=1))
    else:
        seg = merge(np.concatenate([t.tiled(1, int(o)) for o in offsets])) if len(offsets) else _NO_SEGMENTS
    runs = _runs([(t.runs, len(offsets))])
    return Typemap(seg, 0, int(np.prod(sizes, dtype=np.int64)) * t.extent, runs, t.align, True)


def subarray(
    t: Typemap, sizes: Sequence[int], subsizes: Sequence[int], starts: Sequence[int], order: int
) -> Typemap:
    """``Create_subarray``: the block of ``subsizes`` at ``starts`` of an array of ``sizes``."""
    return _grid(t, sizes, [range(s, s + n) for s, n in zip(starts, subsizes, strict=True)], order)


def darray(
    t: Typemap,
    size: int,
    rank: int,
    gsizes: Sequence[int],
    distribs: Sequence[int],
    dargs: Sequence[int],
    psizes: Sequence[int],
    order: int,
) -> Typemap:
    """``Create_darray``: this process's part of an HPF-style distributed
    array (block, cyclic or not distributed in each dimension; the process
    grid is numbered in row-major order whatever ``order``)."""
    coords = []
    r = rank
    for p in reversed(psizes):
        coords.append(r % p)
        r //= p
    coords.reverse()
    picks: list[list[int]] = []
    for g, dist, darg, p, c in zip(gsizes, distribs, dargs, psizes, coords, strict=True):
        if dist == DISTRIBUTE_NONE or (p == 1 and dist != DISTRIBUTE_CYCLIC):
            picks.append(list(range(g)))
        elif dist == DISTRIBUTE_BLOCK:
            b = -(-g // p) if darg == DISTRIBUTE_DFLT_DARG else darg
            picks.append(list(range(min(g, c * b), min(g, (c + 1) * b))))
        else:
            b = 1 if darg == DISTRIBUTE_DFLT_DARG else darg
            picks.append([i for i in range(g) if (i // b) % p == c])
    return _grid(t, gsizes, picks, order)
