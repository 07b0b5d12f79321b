"""Point-to-point communication: buffers and Python objects, blocking,
nonblocking and persistent, the four send modes, probes.

Every call is one of two steps made generic over what travels: a send of
a simulated buffer (a placed message, or the pickle of an object in the
rank's heap) and a receive (into a placed message, or into a heap block
unpickled at completion). The object methods are the buffer methods with
the other payload.

Send modes: standard (buffered up to 2 KB, else synchronous: the protocol's
choice), synchronous, ready (as standard) and buffered: the data is copied
(by the SPE, into the rank's heap, which stands for the attached buffer)
and the call returns; the protocol sends the copy in the background.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import _types as T
from ._commbase import CommBase, source_text, tag_text
from ._message import parse, place
from ._pickle import pickle
from ._protocol import Req
from ._request import Prequest, Request, _Comm
from ._runtime import BufRef, Rank, api, current_rank

__all__ = ["PointToPoint", "buffer_payload", "object_payload"]

Payload = Callable[[Rank], BufRef]
"""Makes the simulated send buffer of a message (filled, ready to go)."""

STANDARD, SYNCHRONOUS, BUFFERED = "standard", "synchronous", "buffered"


def buffer_payload(buf: Any) -> Payload:
    """A buffer message, placed and (packed and) filled from the host."""

    def make(r: Rank) -> BufRef:
        ref = place(r, parse(buf), writable=False)
        ref.sync_in()
        return ref

    return make


def object_payload(obj: Any) -> Payload:
    """A Python object, pickled into the rank's heap (an SPU copy of its bytes)."""

    def make(r: Rank) -> BufRef:
        data = pickle.dumps(obj)
        ref = r.temp(len(data))
        assert ref.shadow is not None
        ref.shadow[: len(data)] = np.frombuffer(data, np.uint8)
        r.charge(r.costs.copy_per_quadword * -(-len(data) // 16))
        return ref

    return make


def _buffered(r: Rank, ref: BufRef) -> BufRef:
    """A copy of the data in the heap, for a buffered send."""
    copy = r.temp(ref.nbytes)
    assert r.proto is not None
    r.proto.local_copy(ref.ea, copy.ea, ref.nbytes)
    ref.release()
    return copy


class PointToPoint(CommBase):
    """The point-to-point calls of a communicator."""

    __slots__ = ()

    # -- the two steps --

    def _send(
        self, call: str, payload: Payload, dest: Any, tag: Any, mode: str, blocking: bool, obj: bool = False
    ) -> _Comm:
        r = current_rank(call)
        st = self._s()
        if dest == T.PROC_NULL:
            return _Comm(None, st, obj)
        wd = self._world_rank(st, dest, call)
        tag = self._check_tag(tag, call)
        ref = payload(r)
        if mode == BUFFERED:
            ref = _buffered(r, ref)
        assert r.proto is not None
        what = f"{call}(dest={dest}, tag={tag}) on {st.name}"
        q = r.proto.isend(ref, wd, tag, st.ctx, mode == SYNCHRONOUS, what, blocking and mode != BUFFERED)
        if q.done:
            ref.release()
        else:
            q.finish.append(lambda _q: ref.release())
        if mode == BUFFERED:  # complete once the data is in the attached buffer
            return _Comm(Req("send", what, done=True), st, obj)
        return _Comm(q, st, obj)

    def _recv(self, call: str, buf: Any, source: Any, tag: Any, obj: bool = False) -> _Comm:
        r = current_rank(call)
        st = self._s()
        if source == T.PROC_NULL:
            return _Comm(None, st, obj)
        ws = self._world_rank(st, source, call, any_ok=True)
        tag = self._check_tag(tag, call, any_ok=True)
        what = f"{call}(source={source_text(source)}, tag={tag_text(tag)}) on {st.name}"
        assert r.proto is not None
        if obj:
            return _Comm(r.proto.irecv(None, ws, tag, st.ctx, what, alloc=True), st, obj)
        ref = place(r, parse(buf), writable=True)
        q = r.proto.irecv(ref, ws, tag, st.ctx, what)

        def done(q: Req) -> None:
            try:
                if q.error is None and not q.data.get("cancelled"):
                    ref.sync_out(q.nbytes)
            finally:
                ref.release()

        if q.done:
            done(q)
        else:
            q.finish.append(done)
        return _Comm(q, st)

    def _persistent(self, start: Callable[[], _Comm]) -> Prequest:
        return Prequest._of(_Comm(None, self._s(), start=start))

    # -- buffers --

    @api
    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:
        """Sends a buffer (standard mode: buffered up to 2 KB, else synchronous)."""
        Request._of(self._send("Send", buffer_payload(buf), dest, tag, STANDARD, True)).Wait()

    @api
    def Ssend(self, buf: Any, dest: int, tag: int = 0) -> None:
        """Sends a buffer and returns once the receive has matched it."""
        Request._of(self._send("Ssend", buffer_payload(buf), dest, tag, SYNCHRONOUS, True)).Wait()

    @api
    def Bsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        """Copies the buffer and returns; the copy is sent in the background."""
        self._send("Bsend", buffer_payload(buf), dest, tag, BUFFERED, True)

    @api
    def Rsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        """Ready mode (the receive is posted): sent as in standard mode."""
        Request._of(self._send("Rsend", buffer_payload(buf), dest, tag, STANDARD, True)).Wait()

    @api
    def Isend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        """Starts sending a buffer."""
        return Request._of(self._send("Isend", buffer_payload(buf), dest, tag, STANDARD, False))

    @api
    def Issend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        """Starts a synchronous send."""
        return Request._of(self._send("Issend", buffer_payload(buf), dest, tag, SYNCHRONOUS, False))

    @api
    def Ibsend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        """A buffered send (complete at once)."""
        return Request._of(self._send("Ibsend", buffer_payload(buf), dest, tag, BUFFERED, False))

    @api
    def Irsend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        """Starts a ready-mode send (as standard mode)."""
        return Request._of(self._send("Irsend", buffer_payload(buf), dest, tag, STANDARD, False))

    @api
    def Recv(
        self, buf: Any, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG, status: T.Status | None = None
    ) -> None:
        """Receives into a buffer."""
        Request._of(self._recv("Recv", buf, source, tag)).Wait(status)

    @api
    def Irecv(self, buf: Any, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG) -> Request:
        """Starts a receive into a buffer."""
        return Request._of(self._recv("Irecv", buf, source, tag))

    @api
    def Sendrecv(
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = T.ANY_SOURCE,
        recvtag: int = T.ANY_TAG,
        status: T.Status | None = None,
    ) -> None:
        """Sends one buffer and receives another at once."""
        rq = Request._of(self._recv("Sendrecv", recvbuf, source, recvtag))
        Request._of(self._send("Sendrecv", buffer_payload(sendbuf), dest, sendtag, STANDARD, False)).Wait()
        rq.Wait(status)

    @api
    def Sendrecv_replace(
        self,
        buf: Any,
        dest: int,
        sendtag: int = 0,
        source: int = T.ANY_SOURCE,
        recvtag: int = T.ANY_TAG,
        status: T.Status | None = None,
    ) -> None:
        """Sends a buffer and receives into it (what is sent is a copy of it, made first)."""
        copy: Any = None
        if dest != T.PROC_NULL:
            m = parse(buf)
            copy = [m.raw.copy(), m.count, m.datatype]
        rq = Request._of(self._recv("Sendrecv_replace", buf, source, recvtag))
        Request._of(
            self._send("Sendrecv_replace", buffer_payload(copy), dest, sendtag, STANDARD, False)
        ).Wait()
        rq.Wait(status)

    # -- persistent requests --

    def Send_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        """A persistent standard send (each ``Start`` sends the buffer's contents then)."""
        return self._persistent(
            lambda: self._send("Send_init", buffer_payload(buf), dest, tag, STANDARD, False)
        )

    def Ssend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        """A persistent synchronous send."""
        return self._persistent(
            lambda: self._send("Ssend_init", buffer_payload(buf), dest, tag, SYNCHRONOUS, False)
        )

    def Bsend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        """A persistent buffered send."""
        return self._persistent(
            lambda: self._send("Bsend_init", buffer_payload(buf), dest, tag, BUFFERED, False)
        )

    def Rsend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        """A persistent ready-mode send."""
        return self._persistent(
            lambda: self._send("Rsend_init", buffer_payload(buf), dest, tag, STANDARD, False)
        )

    def Recv_init(self, buf: Any, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG) -> Prequest:
        """A persistent receive."""
        return self._persistent(lambda: self._recv("Recv_init", buf, source, tag))

    # -- probes --

    def _probe(self, source: Any, tag: Any, status: T.Status | None, call: str, wait: bool) -> bool:
        """Whether a matching message has arrived (its envelope into ``status``);
        with ``wait``, blocks until one has."""
        r = current_rank(call)
        st = self._s()
        if source == T.PROC_NULL:
            if status is not None:
                status._set(T.PROC_NULL, T.ANY_TAG, 0)
            return True
        ws = self._world_rank(st, source, call, any_ok=True)
        tag = self._check_tag(tag, call, any_ok=True)
        assert r.proto is not None
        while True:
            msg = r.proto.iprobe(ws, tag, st.ctx)
            if msg is not None:
                if status is not None:
                    status._set(st.group.index(msg.src), msg.tag, msg.nbytes)
                return True
            if not wait:
                return False
            r.proto.block(f"{call}(source={source_text(source)}, tag={tag_text(tag)}) on {st.name}")

    @api
    def Probe(self, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG, status: T.Status | None = None) -> bool:
        """Waits for a matching message without receiving it."""
        return self._probe(source, tag, status, "Probe", wait=True)

    @api
    def Iprobe(
        self, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG, status: T.Status | None = None
    ) -> bool:
        """Whether a matching message has arrived (never waits)."""
        return self._probe(source, tag, status, "Iprobe", wait=False)

    probe = Probe
    iprobe = Iprobe

    # -- Python objects --

    @api
    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Sends a Python object."""
        Request._of(self._send("send", object_payload(obj), dest, tag, STANDARD, True, obj=True)).wait()

    @api
    def ssend(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Sends a Python object synchronously."""
        Request._of(self._send("ssend", object_payload(obj), dest, tag, SYNCHRONOUS, True, obj=True)).wait()

    @api
    def bsend(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Sends a Python object in buffered mode."""
        self._send("bsend", object_payload(obj), dest, tag, BUFFERED, True, obj=True)

    @api
    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        """Starts sending a Python object."""
        return Request._of(self._send("isend", object_payload(obj), dest, tag, STANDARD, False, obj=True))

    @api
    def issend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        """Starts a synchronous send of a Python object."""
        return Request._of(self._send("issend", object_payload(obj), dest, tag, SYNCHRONOUS, False, obj=True))

    @api
    def ibsend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        """A buffered send of a Python object (complete at once)."""
        return Request._of(self._send("ibsend", object_payload(obj), dest, tag, BUFFERED, False, obj=True))

    @api
    def recv(
        self,
        buf: Any = None,
        source: int = T.ANY_SOURCE,
        tag: int = T.ANY_TAG,
        status: T.Status | None = None,
    ) -> Any:
        """Receives a Python object."""
        return Request._of(self._recv("recv", None, source, tag, obj=True)).wait(status)

    @api
    def irecv(self, buf: Any = None, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG) -> Request:
        """Starts receiving a Python object."""
        return Request._of(self._recv("irecv", None, source, tag, obj=True))

    @api
    def sendrecv(
        self,
        sendobj: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = T.ANY_SOURCE,
        recvtag: int = T.ANY_TAG,
        status: T.Status | None = None,
    ) -> Any:
        """Sends one object and receives another."""
        rq = Request._of(self._recv("sendrecv", None, source, recvtag, obj=True))
        Request._of(
            self._send("sendrecv", object_payload(sendobj), dest, sendtag, STANDARD, False, obj=True)
        ).wait()
        return rq.wait(status)
