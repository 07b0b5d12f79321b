"""Non-contiguous datatypes moved by the SPE: gathered and scattered with
DMA lists, as the natural Cell implementation of MPI datatypes.

A message of a non-contiguous datatype travels packed (its blocks one after
another, as MPI's ``Pack`` lays them out), so the protocols only move
contiguous bytes. Packing and unpacking are the SPE's work:

* **pack** (before a send): a DMA list gets the quadword-aligned spans that
  hold the blocks into the local store in one command (an element per span;
  a DMA moves whole aligned quadwords, so a block that starts or ends inside
  one brings the rest of it along); the SPU copies each block to its packed
  place; one DMA puts the packed bytes out.
* **unpack** (after a receive): one DMA gets the packed bytes, the DMA list
  gets the spans of the destination (the bytes around the blocks must be
  kept: read, modify, write), the SPU copies each block into its span, and
  the same DMA list puts the spans back.

Work goes in batches that fit the protocol's two scratch buffers of the
local store (8 KB of spans, 4 KB of packed data and a list of up to 512
elements), in packed order; spans that share a quadword are merged, so a
batch never writes a quadword twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import spu
from ._runtime import TAG_SYNC, BufRef, Rank

__all__ = ["PackedRef", "pack", "unpack"]

ELEMENT_BYTES = 8


def _pieces(base: int, seg: np.ndarray, room: int) -> np.ndarray:
    """``(ea, bytes, packed offset)`` of every block, blocks longer than ``room`` cut."""
    ea = base + seg[:, 0]
    n = seg[:, 1]
    packed = np.concatenate([[0], np.cumsum(n)[:-1]]) if len(n) else n
    cuts = -(-n // room)
    if not len(n) or int(cuts.max()) == 1:
        return np.stack([ea, n, packed], axis=1)
    idx = np.repeat(np.arange(len(n)), cuts)
    k = np.arange(len(idx)) - np.repeat(np.cumsum(cuts) - cuts, cuts)
    size = np.minimum(room, n[idx] - k * room)
    return np.stack([ea[idx] + k * room, size, packed[idx] + k * room], axis=1)


def _batches(pieces: np.ndarray, packed_room: int, span_room: int, max_spans: int) -> Iterator[np.ndarray]:
    """Consecutive pieces whose packed bytes, spans and list fit the local store."""
    start = 0
    packed = spans = 0
    span = ((pieces[:, 0] + pieces[:, 1] + 15) & ~15) - (pieces[:, 0] & ~15)
    for i in range(len(pieces)):
        n, s = int(pieces[i, 1]), int(span[i])
        if i > start and (packed + n > packed_room or spans + s > span_room or i - start >= max_spans):
            yield pieces[start:i]
            start, packed, spans = i, 0, 0
        packed += n
        spans += s
    if start < len(pieces):
        yield pieces[start:]


def _spans(batch: np.ndarray) -> tuple[list[tuple[int, int]], dict[int, int]]:
    """The merged quadword spans of a batch (by address) and, per piece, the
    local-store offset of its first byte within the spans' staging."""
    order = np.argsort(batch[:, 0], kind="stable")
    spans: list[list[int]] = []
    starts: list[int] = []
    where: dict[int, int] = {}
    pos = 0
    for j in order:
        ea, n = int(batch[j, 0]), int(batch[j, 1])
        lo, hi = ea & ~15, (ea + n + 15) & ~15
        if spans and lo < spans[-1][0] + spans[-1][1]:
            s = spans[-1]
            end = max(s[0] + s[1], hi)
            pos += end - (s[0] + s[1])
            s[1] = end - s[0]
            where[int(j)] = starts[-1] + ea - s[0]
        else:
            spans.append([lo, hi - lo])
            starts.append(pos)
            where[int(j)] = pos + ea - lo
            pos += hi - lo
    return [(s[0], s[1]) for s in spans], where


def _list_dma(r: Rank, put: bool, ls: int, lst: int, spans: list[tuple[int, int]]) -> None:
    """One DMA list over ``spans`` (all in one 4 GB window of EAs), else one DMA per span."""
    high = spans[0][0] >> 32
    r.charge(r.costs.list_element * len(spans))
    r.flush()
    if all((s >> 32) == high and ((s + n - 1) >> 32) == high for s, n in spans):
        size = spu.mfc_list(lst, [(n, s & 0xFFFFFFFF) for s, n in spans])
        (spu.mfc_putl if put else spu.mfc_getl)(ls, high << 32, lst, size, TAG_SYNC)
        return
    at = ls
    for s, n in spans:
        r.dma(put, at, s, n, TAG_SYNC)
        at += n


def _scratch(r: Rank) -> tuple[int, int, int, int]:
    """Local store for the spans, the packed bytes and the list; the room of each."""
    assert r.proto is not None
    a, b, chunk = r.proto.scratch_pair()
    half = chunk // 2
    return a, b, b + half, half


def pack(r: Rank, base: int, seg: np.ndarray, dst: int) -> None:
    """Gathers the blocks ``seg`` (offsets from EA ``base``) in order into ``nbytes`` at EA ``dst``."""
    if not len(seg):
        return
    spans_ls, packed_ls, lst, room = _scratch(r)
    pieces = _pieces(base, seg, room - 32)
    for batch in _batches(pieces, room - 32, 2 * room, room // ELEMENT_BYTES):
        spans, where = _spans(batch)
        _list_dma(r, False, spans_ls, lst, spans)
        r.wait_tags(1 << TAG_SYNC)
        p0 = int(batch[0, 2])
        out = packed_ls + ((dst + p0) & 15)
        for j in range(len(batch)):
            n, at = int(batch[j, 1]), out + int(batch[j, 2]) - p0
            src = spans_ls + where[j]
            r.ls[at : at + n] = r.ls[src : src + n]
        total = int(batch[-1, 2] + batch[-1, 1]) - p0
        r.charge(r.costs.piece * len(batch) + r.costs.copy_per_quadword * -(-total // 16))
        r.dma(True, out, dst + p0, total, TAG_SYNC)
        r.wait_tags(1 << TAG_SYNC)


def unpack(r: Rank, src: int, base: int, seg: np.ndarray, nbytes: int) -> None:
    """Scatters the first ``nbytes`` of the packed bytes at EA ``src`` to the blocks ``seg`` of ``base``."""
    if not len(seg) or nbytes <= 0:
        return
    spans_ls, packed_ls, lst, room = _scratch(r)
    pieces = _pieces(base, seg, room - 32)
    keep = pieces[:, 2] < nbytes
    pieces = pieces[keep]
    pieces[:, 1] = np.minimum(pieces[:, 1], nbytes - pieces[:, 2])
    for batch in _batches(pieces, room - 32, 2 * room, room // ELEMENT_BYTES):
        spans, where = _spans(batch)
        p0 = int(batch[0, 2])
        total = int(batch[-1, 2] + batch[-1, 1]) - p0
        inp = packed_ls + ((src + p0) & 15)
        r.dma(False, inp, src + p0, total, TAG_SYNC)
        _list_dma(r, False, spans_ls, lst, spans)
        r.wait_tags(1 << TAG_SYNC)
        for j in range(len(batch)):
            n, at = int(batch[j, 1]), inp + int(batch[j, 2]) - p0
            to = spans_ls + where[j]
            r.ls[to : to + n] = r.ls[at : at + n]
        r.charge(r.costs.piece * len(batch) + r.costs.copy_per_quadword * -(-total // 16))
        _list_dma(r, True, spans_ls, lst, spans)
        r.wait_tags(1 << TAG_SYNC)


class PackedRef(BufRef):
    """A message of a non-contiguous datatype: its packed bytes in a heap
    block, packed from (``sync_in``) or unpacked into (``sync_out``) the
    blocks ``seg`` of the buffer ``region`` by the SPE."""

    region: BufRef
    seg: np.ndarray
    rank: Rank

    @classmethod
    def make(cls, r: Rank, region: BufRef, seg: np.ndarray, datatype: Any, count: int) -> PackedRef:
        n = int(seg[:, 1].sum()) if len(seg) else 0
        tmp = r.temp(n)
        ref = cls(tmp.ea, n, datatype, count, shadow=tmp.shadow, heap=tmp.heap)
        ref.region, ref.seg, ref.rank = region, seg, r
        return ref

    def sync_in(self) -> None:
        """The buffer's blocks -> the packed bytes (the SPE gathers them)."""
        self.region.sync_in()
        pack(self.rank, self.region.ea, self.seg, self.ea)

    def sync_out(self, nbytes: int) -> None:
        """The first ``nbytes`` packed bytes -> the buffer's blocks (the SPE scatters them)."""
        self.region.sync_in()
        unpack(self.rank, self.ea, self.region.ea, self.seg, nbytes)
        self.region.sync_out(self.region.nbytes)

    def keep(self) -> None:
        """Nothing to do: unpacking keeps the bytes between the blocks."""

    def release(self) -> None:
        super().release()
        self.region.release()
