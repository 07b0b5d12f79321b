"""``kumar``: Kumar et al.'s point-to-point design, as published.

* ``mpirun`` allocates one message buffer ``P_i`` per rank in main memory;
  rank ``i`` copies the data of its buffered-mode sends there.
* ``N(N-1)`` metadata queues: ``Q_ij`` (sender ``i``, receiver ``j``) lives
  in ``j``'s local store, a circular array of 16-byte entries with a
  valid/invalid flag, all invalid at start. A 16-byte DMA lands whole, so
  sender and receiver need no lock.
* **Send** (``i`` to ``j``): take the next entry of ``Q_ij``; wait until it
  is invalid (the sender reads it from ``j``'s local store with a blocking
  16-byte get; an entry this sender never wrote is known to be invalid);
  copy the data into its block of ``P_i`` through the local store with
  blocking DMAs (at most 16 KB each); write the entry with the valid flag
  (a blocking 16-byte put). Buffered mode up to 2 KB; above, synchronous
  mode: the entry carries the address of the sender's data and the send
  waits (polling the entry) until the receiver has copied the data and
  invalidated the entry.
* **Receive**: search ``Q_ij`` from its logical front, in order (so a newer
  entry never overtakes an older one with the same tag), for a valid entry
  with the tag (or any tag) and communicator; ``ANY_SOURCE`` searches every
  queue ``Q_ij``, ``i = 0..N-1``. Repeat until found. Copy the data from
  ``P_i`` (or from the sender's buffer) into the receive buffer through the
  local store with blocking DMAs, then mark the entry invalid.

Each block of ``P_i`` belongs to one entry (block ``j * QLEN + k`` to entry
``k`` of ``Q_ij``), so "find a free block" and "wait until the entry is
invalid" are the same check, done before the copy. Non-blocking calls,
which the paper leaves for future work, are the same steps run from the
progress loop of ``Wait``/``Test``.

Metadata entry (16 bytes, big-endian, in the receiver's local store):

====== ===== =======================================================
offset bytes field
====== ===== =======================================================
0      4     location: offset of the data in ``P_i`` (buffered), or the
             sender's data address (synchronous; with flag 0x04 an
             offset in the sender's local store)
4      4     size in bytes
8      4     tag (signed)
12     2     communicator context id
14     1     datatype code
15     1     flags: 0x01 valid, 0x02 synchronous, 0x04 data in the
             sender's local store
====== ===== =======================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _types as T
from ._protocol import Msg, Protocol, Req
from ._runtime import LS_STARTUP, MAX_DMA, BufRef, Rank, ls_alloc_check

__all__ = ["ENTRY", "QLEN", "KumarProtocol", "buffer_bytes"]

ENTRY = np.dtype(
    [
        ("location", ">u4"),
        ("size", ">u4"),
        ("tag", ">i4"),
        ("comm", ">u2"),
        ("datatype", "u1"),
        ("flags", "u1"),
    ]
)
QLEN = 16
"""Entries per metadata queue."""
BLOCK = 2048
"""Bytes of a block of ``P_i``: the buffered-mode limit."""
VALID, SYNC, LSDATA = 0x01, 0x02, 0x04
IDLE_BACKOFF_CYCLES = 320_000
"""After 100 us (qs20) of polling with no progress anywhere, polls space out
(by 1/64 of the time waited) so that a rank waiting on a long computation
does not cost host time; the wait ends at most 1.6% late."""


def buffer_bytes(n: int) -> int:
    """Bytes of each rank's ``P_i`` for ``n`` ranks: a block per entry of each queue."""
    return n * QLEN * BLOCK


class KumarProtocol(Protocol):
    """Kumar et al.'s buffered-mode protocol (see the module docstring)."""

    name = "kumar"
    eager_limit = BLOCK

    def __init__(self, rank: Rank) -> None:
        super().__init__(rank)
        n = self.n
        self.next_k = [0] * n
        self.written = [[False] * QLEN for _ in range(n)]
        self.sync_wait: list[Req] = []
        self.front = [0] * n
        self.ahead: list[set[int]] = [set() for _ in range(n)]
        self.claimed: set[tuple[int, int]] = set()
        self.self_msgs: list[Msg] = []
        self.idle_since: int | None = None

    def setup(self) -> None:
        """Local store: the queues, a 16 KB staging buffer, entry buffers."""
        top = LS_STARTUP
        self.staging = top - (MAX_DMA + 128)
        self.queues = self.staging - self.n * QLEN * ENTRY.itemsize
        self.entry_out = self.queues - 128
        self.entry_in = self.entry_out + 16
        ls_alloc_check(self.r, self.entry_out)
        self.queue_view = np.frombuffer(
            self.r.ls, dtype=ENTRY, count=self.n * QLEN, offset=self.queues
        ).reshape(self.n, QLEN)
        assert self.r.peers is not None
        self.ls_ea = [int(p["ls_ea"]) for p in self.r.peers]
        self.buf_ea = [int(p["buf_ea"]) for p in self.r.peers]

    # -- addresses --------------------------------------------------------------------------

    def remote_entry(self, dest: int, k: int) -> int:
        """EA of entry ``k`` of ``Q_{me,dest}`` (in ``dest``'s local store)."""
        return self.ls_ea[dest] + self.queues + (self.me * QLEN + k) * ENTRY.itemsize

    def block_ea(self, sender: int, dest: int, k: int) -> int:
        """EA of the block of ``P_sender`` that goes with entry ``k`` of ``Q_{sender,dest}``."""
        return self.buf_ea[sender] + (dest * QLEN + k) * BLOCK

    # -- sending ------------------------------------------------------------------------------

    def isend(
        self, ref: BufRef, dest: int, tag: int, ctx: int, sync: bool, what: str, blocking: bool = False
    ) -> Req:
        """Queues a send to ``dest`` and runs it as far as it can go."""
        return self.queue_send(Req("send", what, ref=ref, peer=dest, tag=tag, ctx=ctx, sync=sync))

    def send_to_self(self, req: Req) -> None:
        """A message to oneself: copied to a heap block, found by the receive."""
        assert req.ref is not None
        tmp = self.r.temp(req.ref.nbytes)
        self.r.copy(req.ref.ea, tmp.ea, req.ref.nbytes, [self.staging], MAX_DMA, pipelined=False)
        self.found_own(req, tmp, self.self_msgs)

    def entry_free(self, dest: int, k: int) -> bool:
        """Whether entry ``k`` of ``Q_{me,dest}`` is invalid (a remote read if
        this sender ever wrote it)."""
        if not self.written[dest][k]:
            return True
        self.r.get_blocking(self.entry_in, self.remote_entry(dest, k), ENTRY.itemsize)
        self.r.charge(self.costs.entry_empty)
        flags = int(self.r.ls[self.entry_in + 15])
        return not flags & VALID

    def advance(self, dest: int) -> bool:
        """Posts the queued sends to ``dest`` whose entries are free, in order."""
        q = self.sendq[dest]
        changed = False
        while q:
            req = q[0]
            k = self.next_k[dest]
            if not self.entry_free(dest, k):
                return changed
            q.popleft()
            self.post(req, dest, k)
            changed = True
        return changed

    def post(self, req: Req, dest: int, k: int) -> None:
        """Copies the data (buffered mode) and writes the entry."""
        r = self.r
        ref = req.ref
        assert ref is not None
        size = ref.nbytes
        synchronous = req.sync or size > BLOCK
        flags = VALID
        if synchronous:
            flags |= SYNC
            lsa = r.in_my_ls(ref.ea)
            if lsa is not None:
                location, flags = lsa, flags | LSDATA
            elif ref.ea < 2**32:
                location = ref.ea
            else:
                raise T.Exception(
                    T.ERR_BUFFER, f"{req.what}: the data must be in main memory or this SPE's LS"
                )
        else:
            location = (dest * QLEN + k) * BLOCK
            r.copy(ref.ea, self.buf_ea[self.me] + location, size, [self.staging], MAX_DMA, pipelined=False)
        e = np.frombuffer(r.ls, dtype=ENTRY, count=1, offset=self.entry_out)
        e[0] = (location, size, req.tag, req.ctx, ref.datatype.code, flags)
        r.charge(self.costs.header)
        r.put_blocking(self.entry_out, self.remote_entry(dest, k), ENTRY.itemsize)
        self.world.progress()
        self.written[dest][k] = True
        self.next_k[dest] = (k + 1) % QLEN
        if synchronous:
            req.state = "posted"
            req.data["entry"] = (dest, k)
            self.sync_wait.append(req)
        else:
            req.complete()

    def poll_sync(self) -> bool:
        """Synchronous sends: done when the receiver invalidated the entry."""
        changed = False
        for req in list(self.sync_wait):
            dest, k = req.data["entry"]
            self.r.get_blocking(self.entry_in, self.remote_entry(dest, k), ENTRY.itemsize)
            self.r.charge(self.costs.entry_empty)
            if not int(self.r.ls[self.entry_in + 15]) & VALID:
                self.sync_wait.remove(req)
                req.complete()
                changed = True
        return changed

    # -- receiving ------------------------------------------------------------------------------

    def scan(self, src: int) -> list[Msg]:
        """Valid, unclaimed entries of ``Q_{src,me}`` from its logical front, in order."""
        q = self.queue_view[src]
        self.r.charge(self.costs.scan_loop + QLEN * self.costs.entry_empty)
        valid = np.flatnonzero(q["flags"] & VALID)
        if not len(valid):
            return []
        out = []
        f = self.front[src]
        for i in sorted(int(k - f) % QLEN for k in valid):  # from the logical front, in order
            k = (f + i) % QLEN
            if (src, k) not in self.claimed:
                e = q[k]
                self.r.charge(self.costs.entry_match)
                out.append(Msg(src, int(e["tag"]), int(e["comm"]), int(e["size"]), ("q", k), i))
        return out

    def candidates(self, source: int, ctx: int) -> list[Msg]:
        """Searches ``Q_{source,me}``, or every queue for ``ANY_SOURCE``."""
        if source == self.me:
            return list(self.self_msgs)
        if source != T.ANY_SOURCE:
            return self.scan(source)
        out: list[Msg] = []
        for src in range(self.n):
            if src != self.me:
                out += self.scan(src)
        return out + self.self_msgs

    def deliver(self, req: Req, msg: Msg) -> None:
        """Copies the message into the receive buffer, then invalidates its entry."""
        r = self.r
        if msg.handle[0] == "self":
            _, tmp, sreq = msg.handle
            self.self_msgs.remove(msg)
            err = self.truncated(req, msg)
            self.alloc_for(req, msg)
            if err is None and req.ref is not None:
                r.copy(tmp.ea, req.ref.ea, msg.nbytes, [self.staging], MAX_DMA, pipelined=False)
            tmp.release()
            if not sreq.done:
                sreq.complete()
            self.finish_recv(req, msg, err)
            return
        k = msg.handle[1]
        src = msg.src
        e = self.queue_view[src][k]
        flags, location = int(e["flags"]), int(e["location"])
        err = self.truncated(req, msg)
        self.alloc_for(req, msg)
        if err is None and req.ref is not None and msg.nbytes:
            if flags & SYNC:
                data = self.ls_ea[src] + location if flags & LSDATA else location
            else:
                data = self.buf_ea[src] + location
            r.copy(data, req.ref.ea, msg.nbytes, [self.staging], MAX_DMA, pipelined=False)
        # mark the entry invalid (a store to the local store)
        self.queue_view[src]["flags"][k] = 0
        r.charge(self.costs.header)
        self.world.progress()
        if k == self.front[src]:
            f = (k + 1) % QLEN
            while f in self.ahead[src]:
                self.ahead[src].discard(f)
                f = (f + 1) % QLEN
            self.front[src] = f
        else:
            self.ahead[src].add(k)
        self.finish_recv(req, msg, err)

    def finish_recv(self, req: Req, msg: Msg, err: T.Exception | None) -> None:
        """Completes a receive (the copy-back to a host buffer happens in ``complete``)."""
        req.complete(msg.src, msg.tag, msg.nbytes, err)

    # -- progress ---------------------------------------------------------------------------------

    def progress(self) -> bool:
        """Posts queued sends, polls synchronous sends, matches posted receives."""
        changed = False
        for dest in range(self.n):
            if self.sendq[dest]:
                changed |= self.advance(dest)
        if self.sync_wait:
            changed |= self.poll_sync()
        if self.posted:
            changed |= self.match()
        if changed:
            self.idle_since = None
        return changed

    def block(self, what: str) -> None:
        """One more turn of the polling loop (Kumar et al.'s receive repeats its
        search until it finds the entry)."""
        self.world.idle_poll(self.me, what)
        now = self.r.machine.cycles
        if self.idle_since is None:
            self.idle_since = now
        idle = now - self.idle_since
        self.r.charge(self.costs.scan_loop)
        if idle > IDLE_BACKOFF_CYCLES:
            self.r.charge(idle // 64)
        self.r.flush()

    def leftovers(self) -> list[Msg]:
        """Valid entries left in this rank's queues."""
        out: list[Msg] = []
        for src in range(self.n):
            if src != self.me:
                out += self.scan(src)
        return out + self.self_msgs

    def scratch_pair(self) -> tuple[int, int, int]:
        """The two halves of the staging buffer."""
        return self.staging, self.staging + 8192 + 64, 8192

    def local_copy(self, src: int, dst: int, n: int) -> None:
        """Blocking copy through the staging buffer."""
        self.r.copy(src, dst, n, [self.staging], MAX_DMA, pipelined=False)

    def describe(self) -> dict[str, Any]:
        """The local-store layout, for the documentation and the tests."""
        return {"queues": self.queues, "staging": self.staging, "qlen": QLEN, "block": BLOCK}
