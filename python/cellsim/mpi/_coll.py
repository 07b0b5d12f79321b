"""Collective operations, built on the protocols' point-to-point messages in
each communicator's collective context.

Every collective message carries the tag ``kind << 24 | sequence`` (the
collective's kind and its number on the communicator); a receive in a
collective takes the next collective message from its peer and checks both,
so ranks that call different collectives (or the same ones in a different
order) get ``MPI_ERR_OTHER`` naming the two calls instead of wrong data.

Algorithms, on communicator ranks (``p`` ranks, ``r`` this one):

============  ===========================================  ==========================================
collective    ``kumar`` (Kumar et al.: on blocking point-  ``direct``
              to-point, the MPICH-1 algorithms of its day)
============  ===========================================  ==========================================
Barrier       dissemination, ceil(log2 p) rounds of a      the same rounds over the faster
              0-byte Sendrecv                              point-to-point
Bcast         binomial tree                                binomial tree
Reduce        binomial tree (commutative operations;       the same
              others: linear, in rank order, at the root)
Allreduce     Reduce to rank 0, then Bcast                 recursive doubling (p a power of 2),
                                                           else Reduce + Bcast
Gather(v)     the root receives from 1..p-1 in order       the root posts every receive at once
Scatter(v)    the root sends to 1..p-1 in order            the root posts every send at once
Allgather(v)  ring: p-1 Sendrecv steps to the right        every send and receive posted at once,
                                                           peer order r+1, r+2, ... (staggered)
Alltoall(v,w) pairwise: step i sends to r+i, receives      every send and receive posted at once,
              from r-i                                     staggered
Scan, Exscan  a chain: receive from r-1, combine, send on  recursive doubling (rank order kept)
Reduce_       Reduce to rank 0, then Scatterv              the same
scatter(_block)
============  ===========================================  ==========================================

Reductions combine in the local store: both operands are fetched by DMA,
combined (charged with :func:`cellsim.mpi._costs.reduce_cycles`) and the
result put back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import _types as T
from ._costs import reduce_cycles
from ._protocol import Req
from ._runtime import TAG_PULL, BufRef, Rank

if TYPE_CHECKING:
    from ._commbase import CommState

__all__ = ["KINDS", "Coll"]

KINDS = {
    "Barrier": 1,
    "Bcast": 2,
    "Reduce": 3,
    "Allreduce": 4,
    "Gather": 5,
    "Gatherv": 6,
    "Scatter": 7,
    "Scatterv": 8,
    "Allgather": 9,
    "Allgatherv": 10,
    "Alltoall": 11,
    "Alltoallv": 12,
    "Split": 13,
    "Dup": 14,
    "bcast": 15,
    "gather": 16,
    "scatter": 17,
    "allgather": 18,
    "alltoall": 19,
    "reduce": 20,
    "allreduce": 21,
    "barrier": 22,
    "Finalize": 23,
    "Scan": 24,
    "Exscan": 25,
    "Reduce_scatter": 26,
    "Reduce_scatter_block": 27,
    "Alltoallw": 28,
    "scan": 29,
    "exscan": 30,
    "Create": 31,
    "Create_group": 32,
    "Create_cart": 33,
    "Create_graph": 34,
    "Create_dist_graph": 35,
    "Split_type": 36,
    "Sub": 37,
}
_NAMES = {v: k for k, v in KINDS.items()}


def sub(ref: BufRef, offset: int, nbytes: int) -> BufRef:
    """``nbytes`` of ``ref`` from byte ``offset`` (an EA range; no host copy)."""
    return BufRef(ref.ea + offset, nbytes, T.BYTE, nbytes)


@dataclass
class Coll:
    """One collective call on one rank: its kind, sequence number and peers."""

    rank: Rank
    comm: CommState
    kind: str
    root: int | None = None

    def __post_init__(self) -> None:
        self.seq = self.rank.next_coll_seq(self.comm.ctx)
        self.tag = (KINDS[self.kind] << 24) | (self.seq & 0xFFFFFF)
        self.proto = self.rank.proto
        assert self.proto is not None
        self.p = self.comm.size
        self.me = self.comm.rank
        self.call = f"{self.kind}{'' if self.root is None else f'(root={self.root})'}"
        self.what_base = f"{self.call} on {self.comm.name}"
        self.pending: list[Req] = []
        self.kumar = self.proto.name == "kumar"
        self.rank.called_coll(self.comm.ctx, self.seq, self.call)

    # -- messages ------------------------------------------------------------------------

    def isend(self, ref: BufRef, dest: int, blocking: bool = False) -> Req:
        """Starts a collective message to communicator rank ``dest``."""
        assert self.proto is not None
        what = f"{self.what_base} (collective #{self.seq}), sending to rank {dest}"
        return self.proto.isend(
            ref, self.comm.group[dest], self.tag, self.comm.ctx + 1, False, what, blocking
        )

    def irecv(self, ref: BufRef | None, src: int, alloc: bool = False) -> Req:
        """Posts the receive of the next collective message from ``src``."""
        assert self.proto is not None
        what = f"{self.what_base} (collective #{self.seq}), waiting for rank {src}"
        req = Req("recv", what, ref=ref, peer=self.comm.group[src], tag=T.ANY_TAG, ctx=self.comm.ctx + 1)
        req.alloc = alloc
        req.data["expect_tag"] = self.tag
        req.data["coll"] = self
        self.rank.charge(self.rank.costs.request)
        self.proto.posted.append(req)
        self.proto.match()
        return req

    def wait(self, *reqs: Req) -> None:
        """Waits for every request; raises the first error."""
        assert self.proto is not None
        for q in reqs:
            self.proto.wait(q)
        for q in reqs:
            if q.error is not None:
                raise q.error

    def send(self, ref: BufRef, dest: int) -> None:
        """A blocking collective send."""
        self.wait(self.isend(ref, dest, blocking=True))

    def recv(self, ref: BufRef | None, src: int, alloc: bool = False) -> Req:
        """A blocking collective receive; returns the completed request."""
        q = self.irecv(ref, src, alloc)
        self.wait(q)
        return q

    def sendrecv(self, sref: BufRef, dest: int, rref: BufRef | None, src: int) -> None:
        """Sends to ``dest`` and receives from ``src`` at once."""
        rq = self.irecv(rref, src)
        sq = self.isend(sref, dest)
        self.wait(sq, rq)

    # -- reductions -------------------------------------------------------------------------

    def combine(self, acc: BufRef, incoming: BufRef, op: T.Op, dt: T.Datatype, incoming_first: bool) -> None:
        """``acc = incoming op acc`` (or ``acc op incoming``), through the local store."""
        r = self.rank
        assert self.proto is not None
        a_ls, b_ls, chunk = self.proto.scratch_pair()
        done = 0
        n = acc.nbytes
        chunk -= chunk % max(dt.dtype.itemsize, 16)
        while done < n:
            take = min(chunk, n - done)
            ea_a, ea_b = acc.ea + done, incoming.ea + done
            la, lb = a_ls + (ea_a & 15), b_ls + (ea_b & 15)
            r.dma(False, la, ea_a, take, 29)
            r.dma(False, lb, ea_b, take, 29)
            r.wait_tags(1 << 29)
            va = r.ls[la : la + take].view(dt.dtype)
            vb = r.ls[lb : lb + take].view(dt.dtype)
            if incoming_first:
                op.apply(vb, va, dt)
            else:
                tmp = vb.copy()
                op.apply(va, tmp, dt)
                va[...] = tmp
            r.charge(reduce_cycles(take, dt.dtype.kind, dt.dtype.itemsize, r.machine.name))
            r.dma(True, la, ea_a, take, 29)
            r.wait_tags(1 << 29)
            done += take

    def copy(self, src: BufRef, dst: BufRef) -> None:
        """A local copy between two buffers (through the local store)."""
        assert self.proto is not None
        self.proto.local_copy(src.ea, dst.ea, min(src.nbytes, dst.nbytes))

    # -- one-sided collectives (direct, large buffers) --------------------------------------------

    def windowed(self, kind: str, nbytes: int) -> bool:
        """Whether this collective moves its data one-sidedly (``direct``
        only): from the sizes where that beat its point-to-point algorithm
        on qs20 (the address exchange and the closing barrier cost 1-2 us).
        Every rank decides alike: the sizes are the same everywhere."""
        if self.kumar or self.p < 2:
            return False
        if kind == "allreduce":
            return nbytes >= (2048 if self.p < 4 else 512)
        if kind == "allgather":
            return self.p >= 4 and nbytes >= 2048
        return self.p >= 4 and nbytes >= 16384  # bcast

    def exchange(self, value: int) -> list[int]:
        """Every rank's 64-bit ``value`` (a buffer address) to every rank: an
        allgather of 8-byte records through this rank's heap."""
        r = self.rank
        assert self.proto is not None
        ls, _ = self.proto.window_ls()
        t = r.temp(8 * self.p)
        try:
            at = ls + (8 * self.me) % 16
            r.ls_words(at, 1, ">u8")[0] = value
            r.put_blocking(at, t.ea + 8 * self.me, 8)
            self.allgatherv_p2p(t, [8 * i for i in range(self.p)], [8] * self.p)
            r.get_blocking(ls, t.ea, -(-8 * self.p // 16) * 16)
            return [int(v) for v in r.ls_words(ls, self.p, ">u8")]
        finally:
            t.release()

    @staticmethod
    def aligned(eas: Sequence[int]) -> bool:
        """One-sided transfers between the buffers need them 16-byte aligned
        (every rank sees the same addresses, so every rank decides alike)."""
        return all(ea % 16 == 0 for ea in eas)

    def allreduce_window(self, acc: BufRef, eas: Sequence[int], op: T.Op, dt: T.Datatype) -> None:
        """Each rank reduces its 1/p of the vector: it gets that segment of
        every rank's buffer into its local store, combines them (in rank
        order) and puts the result into every rank's buffer. Every byte is
        read from memory once and written once per rank, against log2(p)
        rounds of whole-vector copies and combines; then a barrier, so that
        no rank leaves while its buffer is still in use."""
        r = self.rank
        assert self.proto is not None
        p, n = self.p, acc.nbytes
        seg = -(-n // (p * 128)) * 128
        lo, hi = min(n, self.me * seg), min(n, (self.me + 1) * seg)
        ls, room = self.proto.window_ls()
        ch = max(128, (room // p - 16) // 128 * 128)
        off = lo
        while off < hi:
            take = min(ch, hi - off)
            for j in range(p):
                r.dma(False, ls + j * ch, eas[j] + off, take, TAG_PULL)
            r.wait_tags(1 << TAG_PULL)
            last = ls + (p - 1) * ch
            out = r.ls[last : last + take].view(dt.dtype)
            for j in range(p - 2, -1, -1):
                op.apply(r.ls[ls + j * ch : ls + j * ch + take].view(dt.dtype), out, dt)
            r.charge((p - 1) * reduce_cycles(take, dt.dtype.kind, dt.dtype.itemsize, r.machine.name))
            for j in range(p):
                r.dma(True, last, eas[j] + off, take, TAG_PULL)
            r.wait_tags(1 << TAG_PULL)
            off += take
        self.barrier()

    def allgather_window(
        self, rref: BufRef, eas: Sequence[int], offsets: Sequence[int], sizes: Sequence[int]
    ) -> None:
        """Each rank gets its own block into its local store once and puts it
        straight into every other rank's buffer (each block read from memory
        once, written p-1 times); then a barrier."""
        self.push(
            rref.ea + offsets[self.me],
            [eas[j] + offsets[self.me] for j in range(self.p) if j != self.me],
            sizes[self.me],
        )
        self.barrier()

    def bcast_window(self, ref: BufRef, eas: Sequence[int], root: int) -> None:
        """The root gets its buffer into its local store once and puts it into
        every other rank's buffer; then a barrier."""
        if self.me == root:
            self.push(ref.ea, [eas[j] for j in range(self.p) if j != root], ref.nbytes)
        self.barrier()

    def push(self, src: int, dsts: Sequence[int], n: int) -> None:
        """Gets ``n`` bytes at ``src`` into the local store (two halves in
        turn) and puts them to every address of ``dsts``."""
        r = self.rank
        assert self.proto is not None
        ls, room = self.proto.window_ls()
        ch = max(128, (room // 2 - 16) // 128 * 128)
        off = 0
        i = 0
        while off < n:
            take = min(ch, n - off)
            half = i % 2
            tag = TAG_PULL + half
            buf = ls + half * (room // 2)
            r.wait_tags(1 << tag)  # the puts from this half are done
            r.dma(False, buf, src + off, take, tag)
            for d in dsts:
                r.dma(True, buf, d + off, take, tag, fence=True)
            off += take
            i += 1
        r.wait_tags((1 << TAG_PULL) | (1 << (TAG_PULL + 1)))

    # -- the algorithms ------------------------------------------------------------------------

    def barrier(self) -> None:
        """Dissemination: in round k, send to r + 2^k and receive from r - 2^k."""
        empty = BufRef(0, 0, T.BYTE, 0)
        k = 1
        while k < self.p:
            self.sendrecv(empty, (self.me + k) % self.p, BufRef(0, 0, T.BYTE, 0), (self.me - k) % self.p)
            k *= 2

    def bcast(self, ref: BufRef, root: int) -> None:
        """Binomial tree from ``root`` (direct, large: the root pushes to everyone)."""
        p, rel = self.p, (self.me - root) % self.p
        if self.windowed("bcast", ref.nbytes):
            eas = self.exchange(ref.ea)
            if self.aligned(eas):
                self.bcast_window(ref, eas, root)
                return
        mask = 1
        while mask < p:
            if rel & mask:
                self.recv(ref, (self.me - mask) % p)
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < p:
                self.send(ref, (self.me + mask) % p)
            mask >>= 1

    def reduce(self, sref: BufRef, acc: BufRef, op: T.Op, dt: T.Datatype, root: int) -> None:
        """Reduces into ``acc`` at ``root`` (``acc`` is scratch elsewhere and
        must already hold this rank's contribution)."""
        p, rel = self.p, (self.me - root) % self.p
        if not op.is_commutative:
            if self.me != root:
                self.send(acc, root)
                return
            tmp = self.rank.temp(acc.nbytes)
            try:
                parts = []
                for src in range(p):
                    if src == root:
                        continue
                    t = self.rank.temp(acc.nbytes)
                    self.recv(t, src)
                    parts.append((src, t))
                # fold in rank order: acc = x0 op x1 op ... (acc holds x_root)
                order = sorted([(root, acc), *parts], key=lambda x: x[0])
                self.copy(order[-1][1], tmp)
                for _, part in reversed(order[:-1]):
                    self.combine(tmp, part, op, dt, incoming_first=True)
                self.copy(tmp, acc)
                for _, t in parts:
                    t.release()
            finally:
                tmp.release()
            return
        tmp = self.rank.temp(acc.nbytes)
        try:
            mask = 1
            while mask < p:
                if rel & mask:
                    self.send(acc, (self.me - mask) % p)
                    break
                if rel + mask < p:
                    self.recv(tmp, (self.me + mask) % p)
                    self.combine(acc, tmp, op, dt, incoming_first=False)
                mask <<= 1
        finally:
            tmp.release()

    def allreduce(self, acc: BufRef, op: T.Op, dt: T.Datatype) -> None:
        """``acc`` holds this rank's contribution; ends with the result everywhere."""
        p = self.p
        if self.windowed("allreduce", acc.nbytes):
            eas = self.exchange(acc.ea)
            if self.aligned(eas):
                self.allreduce_window(acc, eas, op, dt)
                return
        if not self.kumar and op.is_commutative and p & (p - 1) == 0:
            tmp = self.rank.temp(acc.nbytes)
            try:
                mask = 1
                while mask < p:
                    peer = self.me ^ mask
                    self.sendrecv(acc, peer, tmp, peer)
                    self.combine(acc, tmp, op, dt, incoming_first=peer < self.me)
                    mask <<= 1
            finally:
                tmp.release()
            return
        self.reduce(acc, acc, op, dt, 0)
        self.bcast(acc, 0)

    def scan(self, acc: BufRef, op: T.Op, dt: T.Datatype, exclusive: bool) -> bool:
        """Prefix reduction: ``acc`` holds this rank's contribution and ends
        with the combination of ranks 0..r (``exclusive``: 0..r-1; rank 0's
        is then left as it was, and the return value is False there).
        ``kumar``: a chain, each rank receiving from the one before and
        sending on (MPICH-1); ``direct``: recursive doubling."""
        if self.kumar:
            return self._scan_chain(acc, op, dt, exclusive)
        return self._scan_doubling(acc, op, dt, exclusive)

    def _scan_chain(self, acc: BufRef, op: T.Op, dt: T.Datatype, exclusive: bool) -> bool:
        me, p = self.me, self.p
        tmp = self.rank.temp(acc.nbytes)
        try:
            if me > 0:
                self.recv(tmp, me - 1)  # the combination of ranks 0..me-1
            if me < p - 1:
                if me > 0:
                    mine = self.rank.temp(acc.nbytes)
                    try:
                        self.copy(acc, mine)
                        self.combine(mine, tmp, op, dt, incoming_first=True)
                        self.send(mine, me + 1)
                    finally:
                        mine.release()
                else:
                    self.send(acc, me + 1)
            if me > 0:
                if exclusive:
                    self.copy(tmp, acc)
                else:
                    self.combine(acc, tmp, op, dt, incoming_first=True)
        finally:
            tmp.release()
        return me > 0 or not exclusive

    def _scan_doubling(self, acc: BufRef, op: T.Op, dt: T.Datatype, exclusive: bool) -> bool:
        me, p = self.me, self.p
        partial, tmp = self.rank.temp(acc.nbytes), self.rank.temp(acc.nbytes)
        have = not exclusive
        try:
            self.copy(acc, partial)
            mask = 1
            while mask < p:
                peer = me ^ mask
                if peer < p:
                    self.sendrecv(partial, peer, tmp, peer)
                    if peer < me:  # the lower ranks' combination goes first
                        self.combine(partial, tmp, op, dt, incoming_first=True)
                        if have:
                            self.combine(acc, tmp, op, dt, incoming_first=True)
                        else:
                            self.copy(tmp, acc)
                            have = True
                    else:
                        self.combine(partial, tmp, op, dt, incoming_first=False)
                mask <<= 1
        finally:
            partial.release()
            tmp.release()
        return have

    def gatherv(
        self,
        sref: BufRef | None,
        rref: BufRef | None,
        offsets: Sequence[int],
        sizes: Sequence[int],
        root: int,
    ) -> None:
        """Gathers ``sizes[i]`` bytes from rank ``i`` at byte ``offsets[i]`` of the root's buffer."""
        if self.me != root:
            assert sref is not None
            self.send(sref, root)
            return
        assert rref is not None
        if sref is not None:
            self.copy(sref, sub(rref, offsets[root], sizes[root]))
        peers = [i for i in range(self.p) if i != root]
        if self.kumar:
            for i in peers:
                self.recv(sub(rref, offsets[i], sizes[i]), i)
        else:
            reqs = [self.irecv(sub(rref, offsets[i], sizes[i]), i) for i in self.staggered(peers)]
            self.wait(*reqs)

    def scatterv(
        self,
        sref: BufRef | None,
        rref: BufRef | None,
        offsets: Sequence[int],
        sizes: Sequence[int],
        root: int,
    ) -> None:
        """The root sends ``sizes[i]`` bytes at ``offsets[i]`` to rank ``i``."""
        if self.me != root:
            self.recv(rref, root)
            return
        assert sref is not None
        if rref is not None:
            self.copy(sub(sref, offsets[root], sizes[root]), rref)
        peers = [i for i in range(self.p) if i != root]
        if self.kumar:
            for i in peers:
                self.send(sub(sref, offsets[i], sizes[i]), i)
        else:
            reqs = [self.isend(sub(sref, offsets[i], sizes[i]), i) for i in self.staggered(peers)]
            self.wait(*reqs)

    def allgatherv(self, rref: BufRef, offsets: Sequence[int], sizes: Sequence[int]) -> None:
        """Every rank's block (already at its place in ``rref``) to every rank."""
        if self.p == 1:
            return
        if self.windowed("allgather", max(sizes)):
            eas = self.exchange(rref.ea)
            if self.aligned([*eas, *offsets]):
                self.allgather_window(rref, eas, offsets, sizes)
                return
        self.allgatherv_p2p(rref, offsets, sizes)

    def allgatherv_p2p(self, rref: BufRef, offsets: Sequence[int], sizes: Sequence[int]) -> None:
        """Allgather on point-to-point messages (see the module docstring)."""
        p, me = self.p, self.me
        if self.kumar:
            right, left = (me + 1) % p, (me - 1) % p
            for step in range(p - 1):
                sb = (me - step) % p
                rb = (me - step - 1) % p
                self.sendrecv(
                    sub(rref, offsets[sb], sizes[sb]), right, sub(rref, offsets[rb], sizes[rb]), left
                )
            return
        order = [(me + i) % p for i in range(1, p)]
        recvs = [
            self.irecv(sub(rref, offsets[(me - i) % p], sizes[(me - i) % p]), (me - i) % p)
            for i in range(1, p)
        ]
        sends = [self.isend(sub(rref, offsets[me], sizes[me]), d) for d in order]
        self.wait(*sends, *recvs)

    def alltoallv(
        self,
        sref: BufRef,
        soffsets: Sequence[int],
        ssizes: Sequence[int],
        rref: BufRef,
        roffsets: Sequence[int],
        rsizes: Sequence[int],
    ) -> None:
        """Block ``i`` of the send buffer to rank ``i``; block ``i`` of the receive buffer from it."""
        p, me = self.p, self.me
        self.copy(sub(sref, soffsets[me], ssizes[me]), sub(rref, roffsets[me], rsizes[me]))
        if self.kumar:
            for i in range(1, p):
                dst, src = (me + i) % p, (me - i) % p
                self.sendrecv(
                    sub(sref, soffsets[dst], ssizes[dst]), dst, sub(rref, roffsets[src], rsizes[src]), src
                )
            return
        recvs = [
            self.irecv(sub(rref, roffsets[(me - i) % p], rsizes[(me - i) % p]), (me - i) % p)
            for i in range(1, p)
        ]
        sends = [
            self.isend(sub(sref, soffsets[(me + i) % p], ssizes[(me + i) % p]), (me + i) % p)
            for i in range(1, p)
        ]
        self.wait(*sends, *recvs)

    def staggered(self, peers: Sequence[int]) -> list[int]:
        """``peers`` starting after this rank, so that not everyone begins with the same one."""
        return sorted(peers, key=lambda i: (i - self.me) % self.p)


def mismatch(req: Req, tag: int, src_rank: int) -> T.Exception:
    """The error for a collective message of another kind or number."""
    coll: Coll = req.data["coll"]
    kind, seq = tag >> 24, tag & 0xFFFFFF
    other = _NAMES.get(kind, f"kind {kind}")
    mine = coll.rank.coll_called(coll.comm.ctx, seq) if seq != coll.seq else None
    if mine is not None:
        # the mismatch was an earlier call of this rank's, which finished without hearing
        # from the other (a root that only sends, a rank that only sends to the root)
        return T.Exception(
            T.ERR_OTHER,
            f"mismatched collective calls on {coll.comm.name}: collective #{seq} is {other} on rank "
            f"{src_rank} but {mine} on rank {coll.comm.rank} (seen by rank "
            f"{coll.comm.rank} in its {coll.kind}, collective #{coll.seq})",
        )
    return T.Exception(
        T.ERR_OTHER,
        f"mismatched collective calls on {coll.comm.name}: rank {coll.comm.rank} is in {coll.kind} "
        f"(collective #{coll.seq}) but rank {src_rank} sent the message of its {other} (collective #{seq})",
    )


def leftover_text(tag: int) -> str:
    """``Bcast (collective #3)`` for a collective message's tag."""
    kind, seq = tag >> 24, tag & 0xFFFFFF
    return f"{_NAMES.get(kind, f'kind {kind}')} (collective #{seq})"
