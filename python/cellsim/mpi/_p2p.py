"""Point-to-point communication: buffers and Python objects, blocking,
nonblocking and persistent, the four send modes, probes.

Every call is one of two steps made generic over what travels: a send of
a simulated buffer (a placed message, or the pickle of an object in the
rank's heap) and a receive (into a placed message, or into a heap block
unpickled at completion). The send methods (four modes; blocking,
nonblocking or persistent; buffers or objects) are made from one table.

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

SendCall = Callable[..., Any]
STANDARD, SYNCHRONOUS, BUFFERED, READY = "standard", "synchronous", "buffered", "ready"
"""Send modes: ready mode (the receive is posted) is sent as standard mode."""


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
    # the sends: made from the table at the end of the module
    Send: SendCall
    Ssend: SendCall
    Bsend: SendCall
    Rsend: SendCall
    Isend: SendCall
    Issend: SendCall
    Ibsend: SendCall
    Irsend: SendCall
    Send_init: SendCall
    Ssend_init: SendCall
    Bsend_init: SendCall
    Rsend_init: SendCall
    send: SendCall
    ssend: SendCall
    bsend: SendCall
    isend: SendCall
    issend: SendCall
    ibsend: SendCall

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

    def _exchange(
        self,
        call: str,
        payload: Payload,
        dest: Any,
        sendtag: Any,
        recvbuf: Any,
        source: Any,
        recvtag: Any,
        status: T.Status | None,
        obj: bool = False,
    ) -> Any:
        """A send and a receive at once (the receive posted first); what was received."""
        rq = Request._of(self._recv(call, recvbuf, source, recvtag, obj))
        Request._of(self._send(call, payload, dest, sendtag, STANDARD, False, obj)).Wait()
        return rq.wait(status)

    def _persistent(self, start: Callable[[], _Comm]) -> Prequest:
        return Prequest._of(_Comm(None, self._s(), start=start))

    # -- buffers --

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
        self._exchange("Sendrecv", buffer_payload(sendbuf), dest, sendtag, recvbuf, source, recvtag, status)

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
        self._exchange("Sendrecv_replace", buffer_payload(copy), dest, sendtag, buf, source, recvtag, status)

    # -- persistent requests --

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
        return self._exchange(
            "sendrecv", object_payload(sendobj), dest, sendtag, None, source, recvtag, status, obj=True
        )


# -- the sends, one per mode and form ------------------------------------------------------------------


def _send_call(call: str, mode: str, how: str, obj: bool) -> SendCall:
    """A send method: ``how`` is ``blocking`` (returns when the data may be
    reused), ``nonblocking`` (returns a Request) or ``persistent`` (returns
    a Prequest to ``Start``); ``obj``: it sends a Python object."""
    payload = object_payload if obj else buffer_payload

    def start(self: PointToPoint, message: Any, dest: Any, tag: Any) -> _Comm:
        return self._send(call, payload(message), dest, tag, mode, how == "blocking", obj)

    def send(self: PointToPoint, message: Any, dest: int, tag: int = 0) -> Any:
        if how == "persistent":
            return self._persistent(lambda: start(self, message, dest, tag))
        c = start(self, message, dest, tag)
        if how == "nonblocking":
            return Request._of(c)
        if mode != BUFFERED:  # (a buffered send returns once its data is copied)
            Request._of(c).Wait()
        return None

    what = mode  # standard, synchronous, buffered or ready
    send.__name__ = send.__qualname__ = call
    send.__doc__ = f"A {how} {what}-mode send of {'a Python object' if obj else 'a buffer'}."
    return send if how == "persistent" else api(send)


for _call, _mode, _how, _obj in [
    ("Send", STANDARD, "blocking", False),
    ("Ssend", SYNCHRONOUS, "blocking", False),
    ("Bsend", BUFFERED, "blocking", False),
    ("Rsend", READY, "blocking", False),
    ("Isend", STANDARD, "nonblocking", False),
    ("Issend", SYNCHRONOUS, "nonblocking", False),
    ("Ibsend", BUFFERED, "nonblocking", False),
    ("Irsend", READY, "nonblocking", False),
    ("Send_init", STANDARD, "persistent", False),
    ("Ssend_init", SYNCHRONOUS, "persistent", False),
    ("Bsend_init", BUFFERED, "persistent", False),
    ("Rsend_init", READY, "persistent", False),
    ("send", STANDARD, "blocking", True),
    ("ssend", SYNCHRONOUS, "blocking", True),
    ("bsend", BUFFERED, "blocking", True),
    ("isend", STANDARD, "nonblocking", True),
    ("issend", SYNCHRONOUS, "nonblocking", True),
    ("ibsend", BUFFERED, "nonblocking", True),
]:
    setattr(PointToPoint, _call, _send_call(_call, _mode, _how, _obj))
