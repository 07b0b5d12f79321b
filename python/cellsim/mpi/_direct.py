"""``direct`` (the default): local store to local store, woken by signals.

What it does differently from Kumar et al.'s design, and why:

* **Eager messages (up to 2 KB) go straight into the receiver's local
  store.** Each receiver has, for each sender, a ring of 4 slots (32-byte
  header + 2 KB payload). The sender issues its commands and lets its MFC
  chain them: a get of the data from main memory into its own staging slot,
  a *fenced* put of the data into the receiver's slot, a *fenced* put of the
  32-byte header (whose sequence byte makes the message visible: a DMA of
  at most one 128-byte line lands whole, a longer one line by line), and a
  *fenced* ``sndsig``. Header and data up to 128 bytes go in one put. The
  receiver puts the payload from its slot to the receive buffer: one DMA.
  Kumar et al. need five blocking DMAs through main memory (get, put to
  ``P_i``, entry; get from ``P_i``, put) plus a remote read of the entry.
* **Polling the local store, then sleeping on a signal.** A rank that waits
  looks at the next slot of each ring (one byte each) for up to 2 us, so a
  message that comes soon is seen as soon as its header lands; then it
  blocks in ``spu_read_signal1``. Signal-notification register 1 of every
  SPE is in OR mode (``mpirun`` creates the contexts with
  ``SPE_CFG_SIGNOTIFY1_OR``) and every sender sets its own bit (``1 <<
  rank``) after its header; the woken rank looks only at the rings whose
  bits are set. Kumar et al.'s receiver searches whole queues (16 entries per
  sender, every sender for ``ANY_SOURCE``) until it finds the entry; here a
  long wait costs no polling, and a deadlock is a state the engine sees
  (everyone blocked, nothing in flight).
* **Credits instead of remote reads.** The receiver returns free slots to
  the sender by writing its count of consumed messages into the sender's
  local store (every 2 messages, and before it sleeps if the sender may
  be out of slots), with a signal; the sender reads its own local store to
  know whether a slot is free.
* **Large messages are pulled by the receiver, pipelined.** Above 2 KB the
  sender puts a 32-byte request-to-send with the address of its data; the
  receiver copies straight from the sender's buffer to its own with four
  8 KB staging buffers in flight (each a get and a fenced put), which keeps
  the memory controller busy (a copy between two main-memory buffers moves
  every byte in and out of DRAM: 12.8 GB/s at most on 25.6 GB/s). Kumar et al.'s
  blocking 16 KB get-then-put reaches about 9 GB/s. When done the receiver
  writes a completion word into the sender's local store and signals it.
* Unexpected eager messages stay in their slots until matched; a rank about
  to sleep with a ring full of them moves them to its heap in main memory
  so that their sender gets its slots back (no send waits for a receive
  that waits for it).

Header (32 bytes, big-endian, at the start of a slot):

====== ===== =========================================================
offset bytes field
====== ===== =========================================================
0      1     sequence number of the message from this sender, mod 255,
             plus 1 (0: the slot is empty)
1      1     kind: 1 eager, 2 request-to-send; +0x80 synchronous send
             (the receiver acknowledges the match)
2      2     communicator context id
4      4     tag (signed)
8      4     size in bytes
12     4     request id of the sender (for the acknowledgement), or 0
16     8     address of the sender's data (request-to-send)
24     1     offset of the payload past the header (payload at 32 + it,
             so that it has the data's low 4 address bits)
25     1     datatype code
26     6     reserved
====== ===== =========================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import spu
from . import _types as T
from ._protocol import Msg, Protocol, Req
from ._runtime import LS_STARTUP, SIG_NOTIFY_1, TAG_CTL, TAG_EAGER, TAG_SYNC, BufRef, Rank, ls_alloc_check

__all__ = ["HEADER", "SLOTS", "DirectProtocol"]

HEADER = np.dtype(
    [
        ("seq", "u1"),
        ("kind", "u1"),
        ("ctx", ">u2"),
        ("tag", ">i4"),
        ("size", ">u4"),
        ("req", ">u4"),
        ("ea", ">u8"),
        ("offset", "u1"),
        ("datatype", "u1"),
        ("reserved", "V6"),
    ]
)
EAGER, RTS, SYNC_FLAG = 1, 2, 0x80
EAGER_LIMIT = 2048
SLOTS = 4
"""Slots per sender in each receiver's local store."""
SLOT = 2176
"""Bytes of a slot: header, up to 15 bytes of alignment, 2 KB of payload (17 x 128)."""
STAGES = 4
"""Send staging slots (each with its own tag group)."""
PULL_BUFS = 4
PULL_CHUNK = 8192
FIN_SLOTS = 64
FIN_OUT = 16
CREDIT_BATCH = 2
SPIN_CYCLES = 6400
"""How long a rank polls its local store before it sleeps on its signal register (2 us)."""


class DirectProtocol(Protocol):
    """The default protocol (see the module docstring)."""

    name = "direct"
    eager_limit = EAGER_LIMIT

    def __init__(self, rank: Rank) -> None:
        super().__init__(rank)
        n = self.n
        self.sent = [0] * n
        self.expect = [0] * n
        self.consumed = [0] * n
        self.credited = [0] * n
        self.freed: list[set[int]] = [set() for _ in range(n)]
        self.unexpected: list[Msg] = []
        self.stage_busy: list[Req | None] = [None] * STAGES
        self.tag_wait: list[Req] = []
        self.fin_wait: dict[int, Req] = {}
        self.fin_free = list(range(FIN_SLOTS))
        self.fin_gen = 0
        self.fin_out_next = 0
        self.fin_out_issued = 0
        self.bits = 0
        self.stages_done = 0
        """Tag groups of busy staging slots that a wait saw complete."""
        self.owed: set[int] = set()
        """The senders that consumed messages have not been credited for."""
        self.fins_seen = b""
        """The completion words as the last look at them found them."""

    def setup(self) -> None:
        """Local store, top down: rings, credits, completion words, staging, pull buffers."""
        n = self.n
        top = LS_STARTUP
        self.rings = top - (n - 1) * SLOTS * SLOT
        self.credits = (self.rings - n * 16) & ~127
        self.fins = self.credits - FIN_SLOTS * 16
        self.stage = (self.fins - STAGES * SLOT) & ~127
        self.pull = self.stage - PULL_BUFS * (PULL_CHUNK + 128)
        self.ctl = (self.pull - 128 - n * 16 - FIN_OUT * 16) & ~127
        ls_alloc_check(self.r, self.ctl)
        self.sigword = self.ctl  # +12: 1 << rank, for sndsig
        self.credit_out = self.ctl + 128
        self.fin_out = self.credit_out + n * 16
        self.r.set_word(self.sigword + 12, 1 << self.me)
        assert self.r.peers is not None
        self.ls_ea = [int(p["ls_ea"]) for p in self.r.peers]
        self.ps_ea = [int(p["ps_ea"]) for p in self.r.peers]
        self.pull_bufs = [self.pull + i * (PULL_CHUNK + 128) for i in range(PULL_BUFS)]

    # -- addresses ----------------------------------------------------------------------------

    def ring_index(self, sender: int, receiver: int) -> int:
        """Which of ``receiver``'s rings belongs to ``sender``."""
        return sender - (sender > receiver)

    def slot_lsa(self, sender: int, receiver: int, k: int) -> int:
        """Local-store address (in ``receiver``) of slot ``k`` of ``sender``'s ring."""
        return self.rings + (self.ring_index(sender, receiver) * SLOTS + k) * SLOT

    def header(self, lsa: int) -> np.ndarray:
        """The header at ``lsa`` in this rank's local store."""
        return np.frombuffer(self.r.ls, dtype=HEADER, count=1, offset=lsa)

    def signal(self, dest: int, tag: int) -> None:
        """Sets this rank's bit in ``dest``'s signal register 1, after the
        earlier commands of ``tag`` (fenced)."""
        self.r.flush()
        self.r.mfc(spu.MFC_SNDSIGF_CMD, self.sigword + 12, self.ps_ea[dest] + SIG_NOTIFY_1, 4, tag)

    # -- sending ------------------------------------------------------------------------------

    def isend(
        self, ref: BufRef, dest: int, tag: int, ctx: int, sync: bool, what: str, blocking: bool = False
    ) -> Req:
        """Queues a send and starts it if a slot is free (``blocking``: the
        caller will wait for it, so the data's get is waited for at once)."""
        req = Req("send", what, ref=ref, peer=dest, tag=tag, ctx=ctx, sync=sync)
        req.data["blocking"] = blocking
        return self.queue_send(req)

    def send_to_self(self, req: Req) -> None:
        """A message to oneself: copied to the heap, found by the receive."""
        assert req.ref is not None
        tmp = self.r.temp(req.ref.nbytes)
        self.r.copy(req.ref.ea, tmp.ea, req.ref.nbytes, self.pull_bufs, PULL_CHUNK, pipelined=True)
        self.found_own(req, tmp, self.unexpected)

    def credit_free(self, dest: int) -> bool:
        """Whether ``dest`` has a free slot for this sender (from the credits it wrote here)."""
        self.r.charge(self.costs.entry_empty)
        consumed = self.r.word(self.credits + dest * 16)
        return self.sent[dest] - consumed < SLOTS

    def free_stage(self) -> int | None:
        """A send staging slot whose DMAs are done."""
        for i in range(STAGES):
            if self.stage_busy[i] is None:
                return i
        for i in range(STAGES):
            if self.r.tags_done(1 << (TAG_EAGER + i)):
                self.release_stage(i)
                return i
        return None

    def release_stage(self, i: int) -> None:
        """The DMAs of staging slot ``i`` are done: it is free, and its send may be complete."""
        req = self.stage_busy[i]
        self.stage_busy[i] = None
        if req is not None and req in self.tag_wait:
            self.tag_wait.remove(req)
            req.data["dma"] = True
            if req.data["fin"]:
                req.complete()

    def advance(self, dest: int) -> bool:
        """Starts the queued sends to ``dest`` that have a slot and a staging buffer."""
        q = self.sendq[dest]
        changed = False
        while q:
            if not self.credit_free(dest):
                return changed
            stage = self.free_stage()
            if stage is None:
                return changed
            self.start(q.popleft(), dest, stage)
            changed = True
        return changed

    def new_fin(self, req: Req) -> int:
        """A completion word for ``req``; returns the value the receiver will write."""
        if not self.fin_free:
            raise T.Exception(T.ERR_OTHER, f"more than {FIN_SLOTS} synchronous sends outstanding")
        i = self.fin_free.pop()
        self.fin_gen = (self.fin_gen + 1) % (1 << 26) or 1
        value = (self.fin_gen << 6) | i
        self.r.set_word(self.fins + i * 16, 0)
        self.fin_wait[value] = req
        return value

    def start(self, req: Req, dest: int, stage: int) -> None:
        """Builds the header (and data) in a staging slot and puts it into ``dest``'s ring."""
        r = self.r
        ref = req.ref
        assert ref is not None
        size = ref.nbytes
        tag = TAG_EAGER + stage
        lsa = self.stage + stage * SLOT
        k = self.sent[dest] % SLOTS
        seq = self.sent[dest] % 255 + 1
        self.sent[dest] += 1
        rts = size > EAGER_LIMIT
        kind = RTS if rts else EAGER
        fin = 0
        if req.sync or rts:
            fin = self.new_fin(req)
            if req.sync:
                kind |= SYNC_FLAG
        a = ref.ea & 15
        h = self.header(lsa)
        h[0] = (
            seq,
            kind,
            req.ctx,
            req.tag,
            size,
            fin,
            ref.ea if rts else 0,
            0 if rts else a,
            ref.datatype.code,
            b"",
        )
        r.charge(self.costs.header)
        remote = self.ls_ea[dest] + self.slot_lsa(self.me, dest, k)
        copied = False
        if rts:
            req.state = "rts"
        elif size:
            src_ls = r.in_my_ls(ref.ea)
            if src_ls is not None:
                r.ls_copy(lsa + 32 + a, src_ls, size)
                copied = True
            elif req.data.get("blocking"):
                # a blocking send: wait for the data to be in the local store and
                # return as soon as the chain to the receiver is issued
                r.dma(False, lsa + 32 + a, ref.ea, size, TAG_SYNC)
                r.wait_tags(1 << TAG_SYNC)
                copied = True
            else:
                # nonblocking: the MFC chains get, puts and signal by fences
                r.dma(False, lsa + 32 + a, ref.ea, size, tag)
        if rts or 32 + a + size <= 128:
            # one 128-byte line at most: it lands whole, header and data together
            r.dma(True, lsa, remote, -(-(32 + a + size) // 16) * 16 if not rts else 32, tag, fence=True)
        else:
            # the data first, then (fenced) the header that makes it visible
            r.dma(True, lsa + 32 + a, remote + 32 + a, size, tag, fence=True)
            r.dma(True, lsa, remote, 32, tag, fence=True)
        self.signal(dest, tag)
        self.stage_busy[stage] = req
        self.stages_done &= ~(1 << tag)
        need_dma = not rts and size > 0 and not copied
        need_fin = rts or req.sync
        req.data.update(dma=not need_dma, fin=not need_fin, fin_value=fin)
        if need_dma:
            self.tag_wait.append(req)
        elif not need_fin:
            req.complete()

    # -- receiving ----------------------------------------------------------------------------

    def discover(self, src: int) -> bool:
        """Takes the new messages in ``src``'s ring, in order."""
        found = False
        while True:
            k = self.expect[src] % SLOTS
            lsa = self.slot_lsa(src, self.me, k)
            h = self.header(lsa)[0]
            self.r.charge(self.costs.entry_empty)
            if int(h["seq"]) != self.expect[src] % 255 + 1:
                return found
            self.expect[src] += 1
            self.order += 1
            self.r.charge(self.costs.entry_match)
            msg = Msg(
                src, int(h["tag"]), int(h["ctx"]), int(h["size"]), ("slot", k, lsa, h.copy()), self.order
            )
            self.unexpected.append(msg)
            found = True

    def candidates(self, source: int, ctx: int) -> list[Msg]:
        """The messages found, in arrival order."""
        return self.unexpected

    def free_slot(self, src: int, k: int, lsa: int) -> None:
        """Empties a slot and counts it toward the credits of ``src``."""
        self.r.ls[lsa] = 0
        self.freed[src].add(k)
        while self.consumed[src] % SLOTS in self.freed[src]:
            self.freed[src].discard(self.consumed[src] % SLOTS)
            self.consumed[src] += 1
            self.owed.add(src)
        if self.consumed[src] - self.credited[src] >= CREDIT_BATCH:
            self.send_credit(src)

    def send_credit(self, src: int) -> None:
        """Writes the count of consumed messages into ``src``'s local store, then signals it."""
        r = self.r
        self.credited[src] = self.consumed[src]
        self.owed.discard(src)
        r.set_word(self.credit_out + src * 16, self.consumed[src])
        r.charge(self.costs.header)
        r.dma(True, self.credit_out + src * 16, self.ls_ea[src] + self.credits + self.me * 16, 4, TAG_CTL)
        self.signal(src, TAG_CTL)

    def send_fin(self, dest: int, value: int) -> None:
        """Writes a completion word into ``dest``'s local store, then signals it."""
        r = self.r
        if self.fin_out_issued >= FIN_OUT:
            r.wait_tags(1 << TAG_CTL)
            self.fin_out_issued = 0
        lsa = self.fin_out + self.fin_out_next * 16
        self.fin_out_next = (self.fin_out_next + 1) % FIN_OUT
        self.fin_out_issued += 1
        r.set_word(lsa, value)
        r.charge(self.costs.header)
        i = value & 63
        r.dma(True, lsa, self.ls_ea[dest] + self.fins + i * 16, 4, TAG_CTL)
        self.signal(dest, TAG_CTL)

    def deliver(self, req: Req, msg: Msg) -> None:
        """Receives a found message into ``req``'s buffer."""
        r = self.r
        self.unexpected.remove(msg)
        err = self.truncated(req, msg)
        self.alloc_for(req, msg)
        n = msg.nbytes
        where = msg.handle[0]
        dst = req.ref.ea if (req.ref is not None and err is None) else None
        if where == "self":
            _, tmp, sreq = msg.handle
            if dst is not None:
                r.copy(tmp.ea, dst, n, self.pull_bufs, PULL_CHUNK, pipelined=True)
            tmp.release()
            if not sreq.done:
                sreq.complete()
            req.complete(msg.src, msg.tag, n, err)
            return
        if where in ("heap", "rts"):
            _, tmp, h = msg.handle
            if dst is not None and n:
                src = tmp.ea if where == "heap" else int(h["ea"])
                r.copy(src, dst, n, self.pull_bufs, PULL_CHUNK, pipelined=True)
            if tmp is not None:
                tmp.release()
        else:
            _, k, lsa, h = msg.handle
            if int(h["kind"]) & 0x7F == RTS:
                if dst is not None and n:
                    r.copy(int(h["ea"]), dst, n, self.pull_bufs, PULL_CHUNK, pipelined=True)
            elif dst is not None and n:
                self.from_slot(lsa + 32 + int(h["offset"]), dst, n)
            self.free_slot(msg.src, k, lsa)
        kind = int(h["kind"])
        if kind & 0x7F == RTS or kind & SYNC_FLAG:
            self.send_fin(msg.src, int(h["req"]))
        req.complete(msg.src, msg.tag, n, err)

    def from_slot(self, src_lsa: int, dst: int, n: int) -> None:
        """Puts a payload from a slot to the receive buffer (realigned by the SPU if needed)."""
        r = self.r
        dst_ls = r.in_my_ls(dst)
        if dst_ls is not None:
            r.ls_copy(dst_ls, src_lsa, n)
            return
        if (src_lsa ^ dst) & 15:
            tmp = self.pull_bufs[0] + (dst & 15)
            r.ls_copy(tmp, src_lsa, n)
            src_lsa = tmp
        r.dma(True, src_lsa, dst, n, TAG_SYNC)
        r.wait_tags(1 << TAG_SYNC)

    def drain(self) -> None:
        """Before sleeping: a sender whose ring is full of unmatched messages
        gets its slots back (the eager data moves to this rank's heap), and
        every sender that may be waiting for credits gets them."""
        r = self.r
        for src in range(self.n) if len(self.unexpected) >= SLOTS else ():  # (a full ring has SLOTS of them)
            if src == self.me or self.expect[src] - self.consumed[src] < SLOTS:
                continue
            for msg in self.unexpected:
                if msg.src != src or msg.handle[0] != "slot":
                    continue
                _, k, lsa, h = msg.handle
                if int(h["kind"]) & 0x7F == RTS:
                    msg.handle = ("rts", None, h)
                else:
                    tmp = r.temp(msg.nbytes)
                    if msg.nbytes:
                        src_lsa = lsa + 32 + int(h["offset"])
                        if src_lsa & 15:
                            r.ls_copy(self.pull_bufs[0], src_lsa, msg.nbytes)
                            src_lsa = self.pull_bufs[0]
                        r.dma(True, src_lsa, tmp.ea, -(-msg.nbytes // 16) * 16, TAG_SYNC)
                        r.wait_tags(1 << TAG_SYNC)
                    msg.handle = ("heap", tmp, h)
                self.free_slot(msg.src, k, lsa)
        for src in sorted(self.owed):
            if self.expect[src] - self.credited[src] >= SLOTS:
                self.send_credit(src)

    # -- progress --------------------------------------------------------------------------------

    def progress(self) -> bool:
        """Looks at the signalled rings, completion words and credits; matches receives."""
        r = self.r
        changed = False
        r.flush()
        if r.signal1_count():
            self.bits |= r.read_signal1()
        if self.bits:
            bits, self.bits = self.bits, 0
            for src in range(self.n):
                if bits >> src & 1 and src != self.me:
                    changed |= self.discover(src)
        if self.fin_wait:
            changed |= self.check_fins()
        if self.tag_wait:
            for i in range(STAGES):
                req = self.stage_busy[i]
                if req is not None and req in self.tag_wait and r.tags_done(1 << (TAG_EAGER + i)):
                    self.release_stage(i)
                    changed = True
        for dest in range(self.n):
            if self.sendq[dest]:
                changed |= self.advance(dest)
        if self.posted:
            changed |= self.match()
        return changed

    def check_fins(self) -> bool:
        """Completes the sends whose receiver wrote their completion word."""
        changed = False
        r = self.r
        r.charge(self.costs.entry_empty * len(self.fin_wait))
        words = r.ls[self.fins : self.fins + FIN_SLOTS * 16].tobytes()
        if words == self.fins_seen:
            return False  # no word written since the last look: none can match now
        self.fins_seen = words
        for value, req in list(self.fin_wait.items()):
            i = value & 63
            if r.word(self.fins + i * 16) == value:
                del self.fin_wait[value]
                self.fin_free.append(i)
                req.data["fin"] = True
                if req.data["dma"]:
                    req.complete()
                changed = True
        return changed

    def block(self, what: str) -> None:
        """Sleeps until a signal arrives (or, if a send waits for its own
        DMAs, until they are done)."""
        r = self.r
        self.drain()
        tags = 0
        queued = any(self.sendq)
        for i in range(STAGES):
            req = self.stage_busy[i]
            if req is not None and (queued or req in self.tag_wait):
                tags |= 1 << (TAG_EAGER + i)
        # A staging slot whose DMAs a previous wait saw complete (and that no send took
        # again since: its send waits for credits) would end the wait at once, again and
        # again; the rank sleeps instead.
        tags &= ~self.stages_done
        self.world.waits[self.me] = what
        r.flush()
        if tags:
            self.stages_done |= r.tag_status(tags, spu.MFC_TAG_UPDATE_ANY) & tags
            return
        if self.spin():
            return
        self.bits |= r.read_signal1()

    def spin(self) -> bool:
        """Polls the local store (the next slot of every ring, the completion
        words awaited) for up to ``SPIN_CYCLES``; True if something arrived.
        A message found this way costs no signal latency; a longer wait ends
        in ``spu_read_signal1``."""
        r = self.r
        ls = r.ls
        waited = 0
        cost = self.costs.scan_loop + self.costs.entry_empty * (self.n - 1 + len(self.fin_wait))
        queued = [d for d in range(self.n) if self.sendq[d]]
        cost += self.costs.entry_empty * len(queued)
        # what each look compares (nothing of it changes while this rank polls)
        heads = [
            (src, self.slot_lsa(src, self.me, self.expect[src] % SLOTS), self.expect[src] % 255 + 1)
            for src in range(self.n)
            if src != self.me
        ]
        fins = [(self.fins + (value & 63) * 16, value) for value in self.fin_wait]
        credits = [(self.credits + d * 16, self.sent[d] - SLOTS) for d in queued]
        while waited < SPIN_CYCLES:
            for src, lsa, seq in heads:
                if ls[lsa] == seq:
                    self.bits |= 1 << src
            if self.bits:
                return True
            for lsa, value in fins:
                if r.word(lsa) == value:
                    return True
            for lsa, full in credits:
                if r.word(lsa) > full:
                    return True
            spent, r.pending_cycles = r.pending_cycles + cost, 0  # (r.flush(), inlined: the hot loop)
            r.channels.compute(spent)
            waited += cost
        return False

    def leftovers(self) -> list[Msg]:
        """Messages found and never received."""
        for src in range(self.n):
            if src != self.me:
                self.discover(src)
        return list(self.unexpected)

    def scratch_pair(self) -> tuple[int, int, int]:
        """Two of the pull buffers."""
        return self.pull_bufs[0], self.pull_bufs[1], PULL_CHUNK

    def window_ls(self) -> tuple[int, int]:
        """The local store the one-sided collectives use (the pull buffers, together)."""
        return self.pull, PULL_BUFS * (PULL_CHUNK + 128)

    def local_copy(self, src: int, dst: int, n: int) -> None:
        """Pipelined copy through the pull buffers."""
        self.r.copy(src, dst, n, self.pull_bufs, PULL_CHUNK, pipelined=True)

    def describe(self) -> dict[str, Any]:
        """The local-store layout."""
        return {"rings": self.rings, "credits": self.credits, "fins": self.fins, "stage": self.stage}
