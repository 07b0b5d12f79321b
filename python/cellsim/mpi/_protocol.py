"""What both protocols share: requests, known messages, receive matching.

A protocol moves messages between world ranks; communicators reach it
through a *context* id (one for point-to-point and one for the collectives of
each communicator), so a message matches a receive only in its own context.
Receives are matched in the order they were posted, each with the earliest
matching message (per sender, in send order); ``ANY_SOURCE`` takes the
first match the protocol's search finds. A blocking call is a request plus
a wait; waiting runs the protocol's progress until the request is done,
blocking the SPE program (in simulated time) when nothing can be done.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import _types as T
from ._runtime import BufRef, Rank

__all__ = ["Msg", "Protocol", "Req"]


@dataclass
class Msg:
    """A message the receiver has found but not yet received."""

    src: int
    tag: int
    ctx: int
    nbytes: int
    handle: Any = None
    order: int = 0


@dataclass(eq=False)
class Req:
    """A send or receive in progress."""

    kind: str
    what: str
    ref: BufRef | None = None
    peer: int = T.ANY_SOURCE
    tag: int = T.ANY_TAG
    ctx: int = 0
    sync: bool = False
    alloc: bool = False
    done: bool = False
    error: T.Exception | None = None
    src: int = T.ANY_SOURCE
    rtag: int = T.ANY_TAG
    nbytes: int = 0
    state: str = "new"
    data: dict[str, Any] = field(default_factory=dict)
    finish: list[Callable[[Req], None]] = field(default_factory=list)

    def complete(
        self, src: int = -1, tag: int = -1, nbytes: int = 0, error: T.Exception | None = None
    ) -> None:
        """Marks the request done and runs its completion actions (copy-back, frees)."""
        if self.kind == "recv":
            self.src, self.rtag, self.nbytes = src, tag, nbytes
        self.error = error
        self.done = True
        for f in self.finish:
            f(self)
        self.finish.clear()


class Protocol:
    """Base class of the protocols; see :mod:`cellsim.mpi._kumar` and
    :mod:`cellsim.mpi._direct`."""

    name = "base"
    eager_limit = 2048

    def __init__(self, rank: Rank) -> None:
        self.r = rank
        self.world = rank.world
        self.costs = rank.costs
        self.posted: list[Req] = []
        self.n = rank.size
        self.me = rank.rank
        self.sendq: list[deque[Req]] = [deque() for _ in range(self.n)]
        """The sends to each world rank not yet started, in order."""
        self.order = 0
        """How many messages this rank has found (a message's ``order``)."""

    # -- set-up -------------------------------------------------------------------------

    def setup(self) -> None:
        """Lays out the protocol's local-store regions (after the start-up data is in)."""
        raise NotImplementedError

    # -- to implement -------------------------------------------------------------------------

    def isend(
        self, ref: BufRef, dest: int, tag: int, ctx: int, sync: bool, what: str, blocking: bool = False
    ) -> Req:
        """Starts a send of ``ref`` to world rank ``dest`` (``blocking``: the
        caller waits for it next)."""
        raise NotImplementedError

    def send_to_self(self, req: Req) -> None:
        """Sends ``req`` to this rank itself."""
        raise NotImplementedError

    def advance(self, dest: int) -> bool:
        """Starts the queued sends to ``dest`` that can start, in order; True if any did."""
        raise NotImplementedError

    def progress(self) -> bool:
        """Does what can be done now without waiting; True if anything changed."""
        raise NotImplementedError

    def block(self, what: str) -> None:
        """Waits (in simulated time) until something may have changed."""
        raise NotImplementedError

    def candidates(self, source: int, ctx: int) -> list[Msg]:
        """The messages found and not yet received, in matching order."""
        raise NotImplementedError

    def deliver(self, req: Req, msg: Msg) -> None:
        """Receives ``msg`` into ``req`` (which then completes)."""
        raise NotImplementedError

    def leftovers(self) -> list[Msg]:
        """Messages sent to this rank and never received (at ``Finalize``)."""
        return []

    # -- shared -------------------------------------------------------------------------------

    def queue_send(self, req: Req) -> Req:
        """Charges a send request; a send to this rank is done at once
        (:meth:`send_to_self`), any other waits behind the earlier sends to its
        peer, which then start as far as they can (:meth:`advance`)."""
        self.r.charge(self.costs.request)
        if req.peer == self.me:
            self.send_to_self(req)
            return req
        self.sendq[req.peer].append(req)
        self.advance(req.peer)
        return req

    def found_own(self, req: Req, tmp: BufRef, found: list[Msg]) -> None:
        """Files a message to oneself, already copied to ``tmp``, among the
        messages found (``found``), completes a standard send and matches."""
        assert req.ref is not None
        self.order += 1
        found.append(Msg(self.me, req.tag, req.ctx, req.ref.nbytes, ("self", tmp, req), self.order))
        if not req.sync:
            req.complete()
        self.match()

    def irecv(
        self, ref: BufRef | None, source: int, tag: int, ctx: int, what: str, alloc: bool = False
    ) -> Req:
        """Posts a receive from world rank ``source`` (or ``ANY_SOURCE``)."""
        req = Req("recv", what, ref=ref, peer=source, tag=tag, ctx=ctx, alloc=alloc)
        self.r.charge(self.costs.request)
        self.posted.append(req)
        self.match()
        return req

    def cancel(self, req: Req) -> None:
        """Cancels a receive that no message has matched yet (it completes,
        cancelled); anything else goes on (a send, once started, cannot be
        taken back)."""
        if req.kind == "recv" and req in self.posted:
            self.posted.remove(req)
            req.data["cancelled"] = True
            req.complete(T.ANY_SOURCE, T.ANY_TAG, 0)

    @staticmethod
    def matches(msg: Msg, source: int, tag: int, ctx: int) -> bool:
        """Whether ``msg`` can be received by a receive of (source, tag, ctx)."""
        return (
            msg.ctx == ctx
            and (source == T.ANY_SOURCE or msg.src == source)
            and (tag == T.ANY_TAG or msg.tag == tag)
        )

    def find(self, source: int, tag: int, ctx: int) -> Msg | None:
        """The first message a receive of (source, tag, ctx) would match."""
        for m in self.candidates(source, ctx):
            if self.matches(m, source, tag, ctx):
                return m
        return None

    def match(self) -> bool:
        """Matches the posted receives, in order, with the messages found."""
        changed = False
        i = 0
        while i < len(self.posted):
            req = self.posted[i]
            msg = self.find(req.peer, req.tag, req.ctx)
            if msg is None:
                i += 1
                continue
            del self.posted[i]
            self.deliver(req, msg)
            changed = True
            i = 0  # the copy took time: an earlier receive may match what arrived meanwhile
        return changed

    def iprobe(self, source: int, tag: int, ctx: int) -> Msg | None:
        """A message that a receive of (source, tag, ctx) would match now."""
        self.progress()
        return self.find(source, tag, ctx)

    def wait(self, req: Req) -> None:
        """Runs progress (blocking when idle) until ``req`` is done."""
        while not req.done:
            if self.progress() or req.done:
                continue
            self.block(req.what)

    def wait_any(self, reqs: list[Req], what: str) -> None:
        """Runs progress until one of ``reqs`` is done."""
        while not any(q.done for q in reqs):
            if self.progress():
                continue
            self.block(what)

    def truncated(self, req: Req, msg: Msg) -> T.Exception | None:
        """The error of receiving ``msg`` into ``req``: a collective message of
        another call (mismatched collectives), or a message that does not fit
        the buffer (truncation)."""
        expect = req.data.get("expect_tag")
        if expect is not None and msg.tag != expect:
            from ._coll import mismatch

            coll = req.data["coll"]
            return mismatch(req, msg.tag, coll.comm.group.index(msg.src))
        if req.ref is not None and msg.nbytes > req.ref.nbytes:
            return T.Exception(
                T.ERR_TRUNCATE,
                f"{req.what} on rank {self.r.rank}: a message of {msg.nbytes} bytes from rank {msg.src} "
                f"(tag {msg.tag}) does not fit the receive buffer of {req.ref.nbytes} bytes",
            )
        return None

    def scratch_pair(self) -> tuple[int, int, int]:
        """Two local-store buffers for reductions and their usable size."""
        raise NotImplementedError

    def window_ls(self) -> tuple[int, int]:
        """Local store for one-sided collectives (address, bytes); ``direct`` only."""
        raise NotImplementedError

    def local_copy(self, src: int, dst: int, n: int) -> None:
        """Copies ``n`` bytes between two EAs through this SPE."""
        raise NotImplementedError

    def alloc_for(self, req: Req, msg: Msg) -> None:
        """Gives an object receive a heap buffer of the message's size."""
        if req.alloc and req.ref is None:
            req.ref = self.r.temp(msg.nbytes)
