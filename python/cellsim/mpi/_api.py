"""The mpi4py-style API: communicators, requests, buffers and Python objects.

Buffers follow mpi4py's *message* forms: a buffer (a numpy array or any
object with the buffer protocol), ``[buf, datatype]``, ``[buf, count,
datatype]``, ``[buf, (count, displ), datatype]``, and for the ``v``
collectives ``[buf, counts, displs, datatype]`` or ``[buf, (counts, displs),
datatype]``. Lower-case methods move Python objects: they are pickled into
the rank's heap in main memory and travel as bytes like any message.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..machine import EaBuffer, LsBuffer
from . import _types as T
from ._coll import KINDS, Coll, leftover_text
from ._protocol import Req
from ._runtime import BufRef, Rank, api, current_rank

__all__ = ["COMM_SELF", "COMM_WORLD", "Comm", "CommState", "Intracomm", "Request"]


@dataclass
class CommState:
    """A communicator as one rank sees it: its context, its group (world
    ranks, by communicator rank) and this rank's place in it."""

    ctx: int
    group: list[int]
    rank: int
    name: str

    @property
    def size(self) -> int:
        return len(self.group)


def _src(source: int) -> str:
    return "ANY_SOURCE" if source == T.ANY_SOURCE else str(source)


def _tag(tag: int) -> str:
    return "ANY_TAG" if tag == T.ANY_TAG else str(tag)


# -- buffers -----------------------------------------------------------------------------------


def _as_bytes(obj: Any) -> tuple[np.ndarray, T.Datatype, bool]:
    """A flat uint8 view of a buffer, its natural datatype and whether it is writable."""
    if isinstance(obj, EaBuffer | LsBuffer):
        arr = obj.array(np.uint8)
        return arr, T.BYTE, True
    if isinstance(obj, np.ndarray):
        arr = obj
    else:
        try:
            arr = np.frombuffer(obj, dtype=np.uint8) if not isinstance(obj, memoryview) else np.asarray(obj)
        except (TypeError, ValueError):
            raise T.Exception(
                T.ERR_BUFFER, f"{type(obj).__name__} is not a buffer (use a numpy array)"
            ) from None
    if not arr.flags.c_contiguous:
        raise T.Exception(T.ERR_BUFFER, "the buffer is not contiguous (pass a contiguous numpy array)")
    try:
        dt = T.datatype_of(arr.dtype)
    except T.Exception:
        dt = T.BYTE
    raw = arr.reshape(-1).view(np.uint8) if arr.size else np.zeros(0, np.uint8)
    if isinstance(obj, EaBuffer | LsBuffer):
        dt = T.BYTE
    return raw, dt, bool(arr.flags.writeable)


def _datatype(x: Any) -> T.Datatype:
    if isinstance(x, T.Datatype):
        return x
    if isinstance(x, str):
        return T.datatype_of(x)
    raise T.Exception(T.ERR_TYPE, f"{x!r} is not an MPI datatype")


@dataclass
class _Msg:
    raw: np.ndarray
    datatype: T.Datatype
    count: int
    displ: int
    writable: bool
    explicit: bool = False

    def block(self, p: int) -> int:
        """Elements per rank in a collective: the count given (mpi4py and MPI
        take it per rank), else an equal share of the buffer."""
        return self.count if self.explicit else self.count // p


def parse_message(spec: Any) -> _Msg:
    """A point-to-point message spec -> bytes, datatype, count, displacement."""
    if isinstance(spec, list | tuple) and spec and not isinstance(spec, bytes):
        buf, rest = spec[0], list(spec[1:])
        raw, dt, w = _as_bytes(buf)
        count = displ = None
        if rest and not isinstance(rest[-1], int | tuple | list) and rest[-1] is not None:
            dt = _datatype(rest.pop())
        if len(rest) == 1:
            c = rest[0]
            if isinstance(c, tuple | list):
                count, displ = int(c[0]), int(c[1])
            elif c is not None:
                count = int(c)
        elif len(rest) == 2:
            count, displ = int(rest[0]), int(rest[1])
        elif rest:
            raise T.Exception(T.ERR_ARG, f"message {spec!r} is not [buf, count, datatype]")
        displ = displ or 0
        if count is None:
            count = (raw.size - displ * dt.size) // dt.size
            return _Msg(raw[displ * dt.size :], dt, count, displ, w)
        return _Msg(raw[displ * dt.size :], dt, count, displ, w, explicit=True)
    raw, dt, w = _as_bytes(spec)
    return _Msg(raw, dt, raw.size // dt.size, 0, w)


def parse_vector(spec: Any, p: int) -> tuple[np.ndarray, T.Datatype, list[int], list[int], bool]:
    """A ``v``-collective spec -> bytes, datatype, counts and displacements (elements)."""
    if not isinstance(spec, list | tuple):
        raw, dt, w = _as_bytes(spec)
        n = raw.size // dt.size
        counts = [n // p] * p
        return raw, dt, counts, [i * (n // p) for i in range(p)], w
    buf, rest = spec[0], list(spec[1:])
    raw, dt, w = _as_bytes(buf)
    if rest and isinstance(rest[-1], T.Datatype | str):
        dt = _datatype(rest.pop())
    if (
        len(rest) == 1
        and isinstance(rest[0], tuple)
        and len(rest[0]) == 2
        and not isinstance(rest[0][0], int)
    ):
        counts, displs = list(rest[0][0]), (None if rest[0][1] is None else list(rest[0][1]))
    elif len(rest) == 1:
        counts, displs = list(rest[0]), None
    elif len(rest) == 2:
        counts, displs = list(rest[0]), (None if rest[1] is None else list(rest[1]))
    else:
        raise T.Exception(T.ERR_ARG, f"vector message {spec!r} is not [buf, counts, displs, datatype]")
    counts = [int(c) for c in counts]
    if displs is None:
        displs = [sum(counts[:i]) for i in range(len(counts))]
    if len(counts) != p or len(displs) != p:
        raise T.Exception(T.ERR_COUNT, f"{len(counts)} counts for a communicator of {p} ranks")
    return raw, dt, counts, [int(d) for d in displs], w


def _ref(rank: Rank, m: _Msg, writable: bool) -> BufRef:
    ref = rank.bufref(m.raw, m.datatype, m.count, writable)
    if writable and not m.writable and ref.host is None:
        raise T.Exception(T.ERR_BUFFER, "the receive buffer is read-only")
    ref.readonly = writable and not m.writable
    return ref


def _extent(offsets: Sequence[int], sizes: Sequence[int]) -> int:
    """Where the last block ends."""
    return max((o + z for o, z in zip(offsets, sizes, strict=True)), default=0)


def _whole(
    rank: Rank, raw: np.ndarray, dt: T.Datatype, writable: bool, w: bool, nbytes: int | None = None
) -> BufRef:
    n = raw.size if nbytes is None else nbytes
    if n > raw.size:
        raise T.Exception(T.ERR_BUFFER, f"the buffer holds {raw.size} bytes, the counts need {n}")
    ref = rank.bufref(raw, T.BYTE, n, writable)
    ref.readonly = writable and not w
    return ref


# -- requests -------------------------------------------------------------------------------------


class Request:
    """A nonblocking operation (``Isend``, ``Irecv``, ``isend``, ``irecv``)."""

    def __init__(self, req: Req | None, comm: CommState | None, obj: bool = False) -> None:
        self._req = req
        self._comm = comm
        self._obj = obj
        self._value: Any = None
        self._finished = req is None

    def _status(self, status: T.Status | None) -> None:
        if status is None:
            return
        q = self._req
        if q is None:
            status._set(T.PROC_NULL, T.ANY_TAG, 0)
            return
        if q.kind == "recv" and self._comm is not None:
            src = self._comm.group.index(q.src) if q.src in self._comm.group else q.src
            status._set(src, q.rtag, q.nbytes)

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        q = self._req
        assert q is not None
        if q.error is not None:
            raise q.error
        if self._obj and q.kind == "recv":
            assert q.ref is not None and q.ref.shadow is not None
            data = bytes(q.ref.shadow[: q.nbytes])
            q.ref.release()
            self._value = pickle.loads(data)

    def _proto_wait(self) -> None:
        if self._req is not None and not self._req.done:
            r = current_rank("Request.Wait")
            assert r.proto is not None
            r.proto.wait(self._req)

    @api
    def Wait(self, status: T.Status | None = None) -> bool:
        """Waits until the operation is complete."""
        self._proto_wait()
        self._finish()
        self._status(status)
        return True

    @api
    def Test(self, status: T.Status | None = None) -> bool:
        """Whether the operation is complete (makes progress, never waits)."""
        if self._req is not None and not self._req.done:
            r = current_rank("Request.Test")
            assert r.proto is not None
            r.proto.progress()
            if not self._req.done:
                return False
        self._finish()
        self._status(status)
        return True

    def wait(self, status: T.Status | None = None) -> Any:
        """Waits; returns the received object (``irecv``) or None."""
        self.Wait(status)
        return self._value

    def test(self, status: T.Status | None = None) -> tuple[bool, Any]:
        """``(done, object)``."""
        done = self.Test(status)
        return done, (self._value if done else None)

    def Get_status(self, status: T.Status | None = None) -> bool:
        """Whether the operation is complete, without progress."""
        done = self._req is None or self._req.done
        if done:
            self._status(status)
        return done

    def Cancel(self) -> None:
        """Cancelling is not supported (the request still completes)."""

    def Free(self) -> None:
        """Forgets the request (the operation still completes)."""

    @staticmethod
    @api
    def Waitall(requests: Sequence[Request], statuses: list[T.Status] | None = None) -> bool:
        """Waits for every request."""
        for i, q in enumerate(requests):
            q.Wait(statuses[i] if statuses is not None and i < len(statuses) else None)
        return True

    @staticmethod
    def waitall(requests: Sequence[Request], statuses: list[T.Status] | None = None) -> list[Any]:
        """Waits for every request; returns the received objects."""
        return [
            q.wait(statuses[i] if statuses is not None and i < len(statuses) else None)
            for i, q in enumerate(requests)
        ]

    @staticmethod
    @api
    def Waitany(requests: Sequence[Request], status: T.Status | None = None) -> int:
        """Waits for one request; returns its index (``UNDEFINED`` if none is active)."""
        active = [q for q in requests if q._req is not None and not q._finished]
        if not active:
            return T.UNDEFINED
        r = current_rank("Request.Waitany")
        assert r.proto is not None
        reqs = [q._req for q in active if q._req is not None]
        r.proto.wait_any(reqs, "Waitany")
        for i, q in enumerate(requests):
            if q in active and q._req is not None and q._req.done:
                q.Wait(status)
                return i
        return T.UNDEFINED

    @staticmethod
    @api
    def Testall(requests: Sequence[Request], statuses: list[T.Status] | None = None) -> bool:
        """Whether every request is complete."""
        r = current_rank("Request.Testall")
        assert r.proto is not None
        r.proto.progress()
        if all(q._req is None or q._req.done for q in requests):
            Request.Waitall(requests, statuses)
            return True
        return False

    @staticmethod
    @api
    def Testany(requests: Sequence[Request], status: T.Status | None = None) -> tuple[int, bool]:
        """``(index, True)`` of a complete request, or ``(UNDEFINED, False)``."""
        r = current_rank("Request.Testany")
        assert r.proto is not None
        r.proto.progress()
        for i, q in enumerate(requests):
            if q._req is not None and not q._finished and q._req.done:
                q.Wait(status)
                return i, True
        return T.UNDEFINED, False


# -- communicators ---------------------------------------------------------------------------------


class Comm:
    """A communicator. ``COMM_WORLD`` and ``COMM_SELF`` stand for the
    calling rank's; ``Split`` and ``Dup`` make new ones."""

    def __init__(self, state: CommState | None = None, which: str = "") -> None:
        self._state = state
        self._which = which

    def _s(self) -> CommState:
        if self._state is not None:
            return self._state
        r = current_rank(f"{self._which or 'a communicator'} call")
        st = r.world_comm if self._which == "COMM_WORLD" else r.self_comm
        if st is None:
            raise T.Exception(T.ERR_COMM, "MPI is not initialized")
        return st

    # -- basics --

    def Get_rank(self) -> int:
        """This rank's number in the communicator."""
        return self._s().rank

    def Get_size(self) -> int:
        """How many ranks the communicator has."""
        return self._s().size

    @property
    def rank(self) -> int:
        """This rank's number in the communicator."""
        return self.Get_rank()

    @property
    def size(self) -> int:
        """How many ranks the communicator has."""
        return self.Get_size()

    def Get_name(self) -> str:
        """``MPI_COMM_WORLD``..."""
        return self._s().name

    @property
    def name(self) -> str:
        return self.Get_name()

    def __repr__(self) -> str:
        return f"<cellsim.mpi.Comm {self._which or (self._state.name if self._state else '?')}>"

    # -- helpers --

    def _world_rank(self, st: CommState, r: int, what: str, any_ok: bool = False) -> int:
        if any_ok and r == T.ANY_SOURCE:
            return T.ANY_SOURCE
        if not isinstance(r, int | np.integer) or not 0 <= int(r) < st.size:
            raise T.Exception(
                T.ERR_RANK, f"{what}: rank {r!r} does not exist in {st.name} (ranks 0..{st.size - 1})"
            )
        return st.group[int(r)]

    @staticmethod
    def _check_tag(tag: int, what: str, any_ok: bool = False) -> int:
        if any_ok and tag == T.ANY_TAG:
            return tag
        if not isinstance(tag, int | np.integer) or not 0 <= int(tag) <= T.TAG_UB:
            raise T.Exception(T.ERR_TAG, f"{what}: tag {tag!r} is not in 0..{T.TAG_UB}")
        return int(tag)

    def _isend(self, buf: Any, dest: int, tag: int, sync: bool, call: str, blocking: bool = False) -> Request:
        r = current_rank(call)
        st = self._s()
        what = f"{call}(dest={dest}, tag={tag}) on {st.name}"
        if dest == T.PROC_NULL:
            return Request(None, st)
        wd = self._world_rank(st, dest, call)
        tag = self._check_tag(tag, call)
        m = parse_message(buf)
        ref = _ref(r, m, writable=False)
        ref.sync_in()
        assert r.proto is not None
        q = r.proto.isend(ref, wd, tag, st.ctx, sync, what, blocking)
        q.finish.append(lambda _q: ref.release())
        if q.done:
            ref.release()
        return Request(q, st)

    def _irecv(self, buf: Any, source: int, tag: int, call: str) -> Request:
        r = current_rank(call)
        st = self._s()
        what = f"{call}(source={_src(source)}, tag={_tag(tag)}) on {st.name}"
        if source == T.PROC_NULL:
            return Request(None, st)
        ws = self._world_rank(st, source, call, any_ok=True)
        tag = self._check_tag(tag, call, any_ok=True)
        m = parse_message(buf)
        ref = _ref(r, m, writable=True)
        assert r.proto is not None
        q = r.proto.irecv(ref, ws, tag, st.ctx, what)

        def done(q: Req) -> None:
            if q.error is None:
                ref.sync_out(q.nbytes)
            ref.release()

        if q.done:
            done(q)
        else:
            q.finish.append(done)
        return Request(q, st)

    # -- point to point: buffers --

    @api
    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:
        """Sends a buffer (standard mode: buffered up to 2 KB, else synchronous)."""
        self._isend(buf, dest, tag, False, "Send", blocking=True).Wait()

    @api
    def Ssend(self, buf: Any, dest: int, tag: int = 0) -> None:
        """Sends a buffer and returns once the receive has matched it."""
        self._isend(buf, dest, tag, True, "Ssend", blocking=True).Wait()

    Bsend = Send
    Rsend = Send

    @api
    def Isend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        """Starts sending a buffer."""
        return self._isend(buf, dest, tag, False, "Isend")

    @api
    def Issend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        """Starts a synchronous send."""
        return self._isend(buf, dest, tag, True, "Issend")

    Ibsend = Isend
    Irsend = Isend

    @api
    def Recv(
        self, buf: Any, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG, status: T.Status | None = None
    ) -> None:
        """Receives into a buffer."""
        self._irecv(buf, source, tag, "Recv").Wait(status)

    @api
    def Irecv(self, buf: Any, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG) -> Request:
        """Starts a receive into a buffer."""
        return self._irecv(buf, source, tag, "Irecv")

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
        rq = self._irecv(recvbuf, source, recvtag, "Sendrecv")
        sq = self._isend(sendbuf, dest, sendtag, False, "Sendrecv")
        sq.Wait()
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
        """Sends a buffer and receives into it."""
        m = parse_message(buf)
        tmp = m.raw[: m.count * m.datatype.size].copy()
        self.Sendrecv([tmp, m.count, m.datatype], dest, sendtag, buf, source, recvtag, status)

    def _probe(self, source: int, tag: int, status: T.Status | None, call: str, wait: bool) -> bool:
        """Whether a matching message has arrived (its envelope into ``status``);
        with ``wait``, blocks until one has."""
        r = current_rank(call)
        st = self._s()
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
            r.proto.block(f"{call}(source={_src(source)}, tag={_tag(tag)}) on {st.name}")

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

    # -- point to point: objects --

    def _obj_ref(self, r: Rank, obj: Any) -> BufRef:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        ref = r.temp(len(data))
        assert ref.shadow is not None
        ref.shadow[: len(data)] = np.frombuffer(data, np.uint8)
        r.charge(r.costs.copy_per_quadword * -(-len(data) // 16))
        return ref

    def _isend_obj(
        self, obj: Any, dest: int, tag: int, sync: bool, call: str, blocking: bool = False
    ) -> Request:
        r = current_rank(call)
        st = self._s()
        if dest == T.PROC_NULL:
            return Request(None, st)
        wd = self._world_rank(st, dest, call)
        tag = self._check_tag(tag, call)
        ref = self._obj_ref(r, obj)
        assert r.proto is not None
        q = r.proto.isend(
            ref, wd, tag, st.ctx, sync, f"{call}(dest={dest}, tag={tag}) on {st.name}", blocking
        )
        q.finish.append(lambda _q: ref.release())
        if q.done:
            ref.release()
        return Request(q, st, obj=True)

    def _irecv_obj(self, source: int, tag: int, call: str) -> Request:
        r = current_rank(call)
        st = self._s()
        if source == T.PROC_NULL:
            return Request(None, st, obj=True)
        ws = self._world_rank(st, source, call, any_ok=True)
        tag = self._check_tag(tag, call, any_ok=True)
        assert r.proto is not None
        q = r.proto.irecv(
            None, ws, tag, st.ctx, f"{call}(source={_src(source)}, tag={_tag(tag)}) on {st.name}", alloc=True
        )
        return Request(q, st, obj=True)

    @api
    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Sends a Python object."""
        self._isend_obj(obj, dest, tag, False, "send", blocking=True).wait()

    @api
    def ssend(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Sends a Python object synchronously."""
        self._isend_obj(obj, dest, tag, True, "ssend", blocking=True).wait()

    bsend = send

    @api
    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        """Starts sending a Python object."""
        return self._isend_obj(obj, dest, tag, False, "isend")

    @api
    def issend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        """Starts a synchronous send of a Python object."""
        return self._isend_obj(obj, dest, tag, True, "issend")

    @api
    def recv(
        self,
        buf: Any = None,
        source: int = T.ANY_SOURCE,
        tag: int = T.ANY_TAG,
        status: T.Status | None = None,
    ) -> Any:
        """Receives a Python object."""
        return self._irecv_obj(source, tag, "recv").wait(status)

    @api
    def irecv(self, buf: Any = None, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG) -> Request:
        """Starts receiving a Python object."""
        return self._irecv_obj(source, tag, "irecv")

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
        rq = self._irecv_obj(source, recvtag, "sendrecv")
        sq = self._isend_obj(sendobj, dest, sendtag, False, "sendrecv")
        sq.wait()
        return rq.wait(status)

    @api
    def probe(self, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG, status: T.Status | None = None) -> bool:
        """Waits for a matching message."""
        return self.Probe(source, tag, status)

    @api
    def iprobe(
        self, source: int = T.ANY_SOURCE, tag: int = T.ANY_TAG, status: T.Status | None = None
    ) -> bool:
        """Whether a matching message has arrived."""
        return self.Iprobe(source, tag, status)

    # -- collectives: buffers --

    def _coll(self, kind: str, root: int | None = None) -> tuple[Rank, CommState, Coll]:
        r = current_rank(kind)
        st = self._s()
        if root is not None and not (isinstance(root, int | np.integer) and 0 <= int(root) < st.size):
            raise T.Exception(T.ERR_ROOT, f"{kind}: root {root!r} does not exist in {st.name}")
        return r, st, Coll(r, st, kind, None if root is None else int(root))

    @api
    def Barrier(self) -> None:
        """Waits until every rank of the communicator has called it."""
        _, _, c = self._coll("Barrier")
        c.barrier()

    @api
    def Bcast(self, buf: Any, root: int = 0) -> None:
        """The root's buffer to every rank."""
        r, st, c = self._coll("Bcast", root)
        m = parse_message(buf)
        ref = _ref(r, m, writable=st.rank != root)
        try:
            ref.sync_in()
            c.bcast(ref, root)
            if st.rank != root:
                ref.sync_out(ref.nbytes)
        finally:
            ref.release()

    def _reduce_refs(
        self, r: Rank, sendbuf: Any, recvbuf: Any, here: bool
    ) -> tuple[BufRef, BufRef | None, T.Datatype]:
        if sendbuf is T.IN_PLACE:
            m = parse_message(recvbuf)
            acc = _ref(r, m, writable=True)
            acc.sync_in()
            return acc, acc, m.datatype
        sm = parse_message(sendbuf)
        sref = _ref(r, sm, writable=False)
        sref.sync_in()
        out = None
        if here:
            rm = parse_message(recvbuf)
            out = _ref(r, rm, writable=True)
            if out.nbytes < sref.nbytes:
                raise T.Exception(
                    T.ERR_TRUNCATE, f"the receive buffer holds {out.nbytes} bytes, not {sref.nbytes}"
                )
        return sref, out, sm.datatype

    @api
    def Reduce(self, sendbuf: Any, recvbuf: Any, op: T.Op = T.SUM, root: int = 0) -> None:
        """Combines every rank's buffer with ``op`` into the root's ``recvbuf``."""
        r, st, c = self._coll("Reduce", root)
        sref, out, dt = self._reduce_refs(r, sendbuf, recvbuf, st.rank == root)
        acc = r.temp(sref.nbytes)
        try:
            c.copy(sref, acc)
            acc.nbytes = sref.nbytes
            c.reduce(sref, acc, op, dt, root)
            if out is not None:
                c.copy(acc, out)
                out.sync_out(sref.nbytes)
        finally:
            acc.release()
            sref.release()
            if out is not None and out is not sref:
                out.release()

    @api
    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: T.Op = T.SUM) -> None:
        """Combines every rank's buffer with ``op``; the result everywhere."""
        r, _, c = self._coll("Allreduce")
        sref, out, dt = self._reduce_refs(r, sendbuf, recvbuf, True)
        assert out is not None
        try:
            if out is not sref:
                c.copy(sref, out)
            out_view = BufRef(out.ea, sref.nbytes, dt, sref.nbytes // dt.size)
            c.allreduce(out_view, op, dt)
            out.sync_out(sref.nbytes)
        finally:
            sref.release()
            if out is not sref:
                out.release()

    def _gather_setup(self, r: Rank, st: CommState, sendbuf: Any, recvbuf: Any, root: int | None, v: bool):
        p = st.size
        here = root is None or st.rank == root
        rref = None
        offsets: list[int] = []
        sizes: list[int] = []
        if here:
            if v:
                raw, dt, counts, displs, w = parse_vector(recvbuf, p)
                offsets = [d * dt.size for d in displs]
                sizes = [c * dt.size for c in counts]
            else:
                m = parse_message(recvbuf)
                raw, dt, w = m.raw, m.datatype, m.writable
                blk = m.block(p)
                offsets = [i * blk * dt.size for i in range(p)]
                sizes = [blk * dt.size] * p
            rref = _whole(r, raw, dt, True, w, _extent(offsets, sizes))
        sref = None
        if sendbuf is T.IN_PLACE:
            if not here:
                raise T.Exception(T.ERR_BUFFER, "IN_PLACE is for the root only")
        elif sendbuf is not None:
            sm = parse_message(sendbuf)
            sref = _ref(r, sm, writable=False)
            sref.sync_in()
            if here and sizes and sref.nbytes != sizes[st.rank]:
                raise T.Exception(
                    T.ERR_TRUNCATE,
                    f"rank {st.rank} sends {sref.nbytes} bytes but its block of the receive buffer "
                    f"is {sizes[st.rank]}",
                )
        return rref, sref, offsets, sizes

    def _gather(self, kind: str, sendbuf: Any, recvbuf: Any, root: int, v: bool) -> None:
        r, st, c = self._coll(kind, root)
        rref, sref, offsets, sizes = self._gather_setup(r, st, sendbuf, recvbuf, root, v)
        try:
            if rref is not None:
                rref.sync_in()
            c.gatherv(sref, rref, offsets, sizes, root)
            if rref is not None:
                rref.sync_out(rref.nbytes)
        finally:
            for x in (rref, sref):
                if x is not None:
                    x.release()

    @api
    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Every rank's buffer, in rank order, into the root's ``recvbuf``."""
        self._gather("Gather", sendbuf, recvbuf, root, False)

    @api
    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Gather with per-rank counts and displacements at the root."""
        self._gather("Gatherv", sendbuf, recvbuf, root, True)

    def _scatter(self, kind: str, sendbuf: Any, recvbuf: Any, root: int, v: bool) -> None:
        r, st, c = self._coll(kind, root)
        p = st.size
        sref = None
        offsets: list[int] = []
        sizes: list[int] = []
        if st.rank == root:
            if v:
                raw, dt, counts, displs, w = parse_vector(sendbuf, p)
                offsets = [d * dt.size for d in displs]
                sizes = [cn * dt.size for cn in counts]
            else:
                m = parse_message(sendbuf)
                raw, dt, w = m.raw, m.datatype, m.writable
                blk = m.block(p)
                offsets = [i * blk * dt.size for i in range(p)]
                sizes = [blk * dt.size] * p
            sref = _whole(r, raw, dt, False, w, _extent(offsets, sizes))
            sref.sync_in()
        rref = None
        if recvbuf is not T.IN_PLACE and recvbuf is not None:
            rm = parse_message(recvbuf)
            rref = _ref(r, rm, writable=True)
        try:
            c.scatterv(sref, rref, offsets, sizes, root)
            if rref is not None:
                rref.sync_out(rref.nbytes)
        finally:
            for x in (rref, sref):
                if x is not None:
                    x.release()

    @api
    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Block ``i`` of the root's ``sendbuf`` to rank ``i``."""
        self._scatter("Scatter", sendbuf, recvbuf, root, False)

    @api
    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Scatter with per-rank counts and displacements at the root."""
        self._scatter("Scatterv", sendbuf, recvbuf, root, True)

    def _allgather(self, kind: str, sendbuf: Any, recvbuf: Any, v: bool) -> None:
        r, st, c = self._coll(kind)
        rref, sref, offsets, sizes = self._gather_setup(r, st, sendbuf, recvbuf, None, v)
        assert rref is not None
        try:
            rref.sync_in()
            if sref is not None:
                c.copy(sref, BufRef(rref.ea + offsets[st.rank], sizes[st.rank], T.BYTE, sizes[st.rank]))
            c.allgatherv(rref, offsets, sizes)
            rref.sync_out(rref.nbytes)
        finally:
            for x in (rref, sref):
                if x is not None:
                    x.release()

    @api
    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        """Every rank's buffer, in rank order, into every rank's ``recvbuf``."""
        self._allgather("Allgather", sendbuf, recvbuf, False)

    @api
    def Allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        """Allgather with per-rank counts and displacements."""
        self._allgather("Allgatherv", sendbuf, recvbuf, True)

    def _alltoall(self, kind: str, sendbuf: Any, recvbuf: Any, v: bool) -> None:
        r, st, c = self._coll(kind)
        p = st.size
        if v:
            sraw, sdt, scnt, sdsp, sw = parse_vector(sendbuf, p)
            rraw, rdt, rcnt, rdsp, rw = parse_vector(recvbuf, p)
        else:
            sm, rm = parse_message(sendbuf), parse_message(recvbuf)
            sraw, sdt, sw, rraw, rdt, rw = sm.raw, sm.datatype, sm.writable, rm.raw, rm.datatype, rm.writable
            sb, rb = sm.block(p), rm.block(p)
            scnt, sdsp, rcnt, rdsp = (
                [sb] * p,
                [i * sb for i in range(p)],
                [rb] * p,
                [i * rb for i in range(p)],
            )
        sref = _whole(r, sraw, sdt, False, sw, _extent(sdsp, scnt) * sdt.size)
        rref = _whole(r, rraw, rdt, True, rw, _extent(rdsp, rcnt) * rdt.size)
        try:
            sref.sync_in()
            rref.sync_in()
            c.alltoallv(
                sref,
                [d * sdt.size for d in sdsp],
                [n * sdt.size for n in scnt],
                rref,
                [d * rdt.size for d in rdsp],
                [n * rdt.size for n in rcnt],
            )
            rref.sync_out(rref.nbytes)
        finally:
            sref.release()
            rref.release()

    @api
    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        """Block ``i`` of every rank's ``sendbuf`` to rank ``i``."""
        self._alltoall("Alltoall", sendbuf, recvbuf, False)

    @api
    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        """Alltoall with per-rank counts and displacements."""
        self._alltoall("Alltoallv", sendbuf, recvbuf, True)

    # -- collectives: objects --

    def _obj_bcast(self, c: Coll, obj: Any, root: int) -> Any:
        r = c.rank
        if c.me == root:
            ref = self._obj_ref(r, obj)
            size = np.array([ref.nbytes], dtype=">u8")
        else:
            ref = None
            size = np.zeros(1, dtype=">u8")
        sz = r.temp(8)
        try:
            assert sz.shadow is not None
            sz.shadow[:8] = size.view(np.uint8)
            c.bcast(sz, root)
            n = int(np.frombuffer(bytes(sz.shadow[:8]), ">u8")[0])
            if ref is None:
                ref = r.temp(n)
            c.bcast(ref, root)
            assert ref.shadow is not None
            return obj if c.me == root else pickle.loads(bytes(ref.shadow[:n]))
        finally:
            sz.release()
            if ref is not None:
                ref.release()

    def _obj_gather(self, c: Coll, obj: Any, root: int) -> list[Any] | None:
        r = c.rank
        if c.me != root:
            ref = self._obj_ref(r, obj)
            try:
                c.send(ref, root)
            finally:
                ref.release()
            return None
        out: list[Any] = [None] * c.p
        out[root] = obj
        for i in range(c.p):
            if i != root:
                q = c.recv(None, i, alloc=True)
                assert q.ref is not None and q.ref.shadow is not None
                out[i] = pickle.loads(bytes(q.ref.shadow[: q.nbytes]))
                q.ref.release()
        return out

    @api
    def barrier(self) -> None:
        """``Barrier``."""
        _, _, c = self._coll("barrier")
        c.barrier()

    @api
    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        """The root's object to every rank."""
        _, _, c = self._coll("bcast", root)
        return self._obj_bcast(c, obj, int(root))

    @api
    def gather(self, sendobj: Any, root: int = 0) -> list[Any] | None:
        """Every rank's object, as a list at the root."""
        _, _, c = self._coll("gather", root)
        return self._obj_gather(c, sendobj, int(root))

    @api
    def scatter(self, sendobj: Sequence[Any] | None = None, root: int = 0) -> Any:
        """Item ``i`` of the root's sequence to rank ``i``."""
        r, st, c = self._coll("scatter", root)
        if st.rank == root:
            if sendobj is None or len(sendobj) != st.size:
                raise T.Exception(T.ERR_COUNT, f"scatter needs a sequence of {st.size} items at the root")
            for i in range(st.size):
                if i != root:
                    ref = self._obj_ref(r, sendobj[i])
                    try:
                        c.send(ref, i)
                    finally:
                        ref.release()
            return sendobj[root]
        q = c.recv(None, int(root), alloc=True)
        assert q.ref is not None and q.ref.shadow is not None
        value = pickle.loads(bytes(q.ref.shadow[: q.nbytes]))
        q.ref.release()
        return value

    @api
    def allgather(self, sendobj: Any) -> list[Any]:
        """Every rank's object, as a list everywhere."""
        _, _, c = self._coll("allgather")
        items = self._obj_gather(c, sendobj, 0)
        return self._obj_bcast(c, items, 0)

    @api
    def alltoall(self, sendobj: Sequence[Any]) -> list[Any]:
        """Item ``i`` of every rank's sequence to rank ``i``."""
        r, st, c = self._coll("alltoall")
        if len(sendobj) != st.size:
            raise T.Exception(T.ERR_COUNT, f"alltoall needs a sequence of {st.size} items")
        refs = [self._obj_ref(r, sendobj[i]) if i != st.rank else None for i in range(st.size)]
        recvs = {i: c.irecv(None, i, alloc=True) for i in range(st.size) if i != st.rank}
        sends = [c.isend(refs[i], i) for i in range(st.size) if i != st.rank and refs[i] is not None]  # type: ignore[arg-type]
        c.wait(*sends, *recvs.values())
        out: list[Any] = []
        for i in range(st.size):
            if i == st.rank:
                out.append(sendobj[i])
            else:
                q = recvs[i]
                assert q.ref is not None and q.ref.shadow is not None
                out.append(pickle.loads(bytes(q.ref.shadow[: q.nbytes])))
                q.ref.release()
        for ref in refs:
            if ref is not None:
                ref.release()
        return out

    @api
    def reduce(self, sendobj: Any, op: T.Op = T.SUM, root: int = 0) -> Any:
        """Folds every rank's object with ``op`` (in rank order) at the root."""
        _, _, c = self._coll("reduce", root)
        items = self._obj_gather(c, sendobj, int(root))
        if items is None:
            return None
        acc = items[0]
        for x in items[1:]:
            acc = op(acc, x)
        return acc

    @api
    def allreduce(self, sendobj: Any, op: T.Op = T.SUM) -> Any:
        """Folds every rank's object with ``op``; the result everywhere."""
        _, _, c = self._coll("allreduce")
        items = self._obj_gather(c, sendobj, 0)
        acc = None
        if items is not None:
            acc = items[0]
            for x in items[1:]:
                acc = op(acc, x)
        return self._obj_bcast(c, acc, 0)

    # -- communicators --

    def _new_context(self, c: Coll, r: Rank, count: int) -> int:
        """Agrees on ``count`` fresh context ids (an allreduce of the ranks' next free ids)."""
        n = r.temp(8)
        try:
            assert n.shadow is not None
            n.shadow[:8] = np.array([r.next_ctx], dtype=np.int64).view(np.uint8)
            c.allreduce(BufRef(n.ea, 8, T.LONG, 1), T.MAX, T.LONG)
            base = int(np.frombuffer(bytes(n.shadow[:8]), np.int64)[0])
        finally:
            n.release()
        r.next_ctx = base + count
        if 2 * (base + count) >= 0xFFFF:
            raise T.Exception(T.ERR_COMM, "too many communicators (context ids are 16-bit)")
        return base

    @api
    def Split(self, color: int = 0, key: int = 0) -> Comm:
        """New communicators, one per ``color``, ranked by ``(key, old rank)``;
        ``color=UNDEFINED`` gives ``COMM_NULL``."""
        r, st, c = self._coll("Split")
        info = r.temp(16 * st.size)
        try:
            assert info.shadow is not None
            mine = np.array([int(color), int(key)], dtype=np.int64)
            info.shadow[16 * st.rank : 16 * st.rank + 16] = mine.view(np.uint8)
            c.allgatherv(info, [16 * i for i in range(st.size)], [16] * st.size)
            table = np.frombuffer(bytes(info.shadow[: 16 * st.size]), np.int64).reshape(st.size, 2)
        finally:
            info.release()
        colors = sorted({int(x) for x in table[:, 0] if int(x) != T.UNDEFINED})
        base = self._new_context(c, r, max(1, len(colors)))
        if int(color) == T.UNDEFINED:
            return COMM_NULL
        members = sorted((int(table[i, 1]), i) for i in range(st.size) if int(table[i, 0]) == int(color))
        group = [st.group[i] for _, i in members]
        ctx = 2 * (base + colors.index(int(color)))
        return Comm(CommState(ctx, group, group.index(r.rank), f"{st.name}.Split({color})"))

    @api
    def Dup(self) -> Comm:
        """A communicator with the same ranks and a new context."""
        r, st, c = self._coll("Dup")
        base = self._new_context(c, r, 1)
        return Comm(CommState(2 * base, list(st.group), st.rank, f"{st.name}.Dup()"))

    Clone = Dup

    def Free(self) -> None:
        """Frees the communicator (nothing to release here)."""

    def Abort(self, errorcode: int = 0) -> None:
        """Stops every rank: raises ``SystemExit(errorcode)`` in this one, and mpirun stops the others."""
        raise SystemExit(errorcode)

    def Is_inter(self) -> bool:
        """False: intracommunicators only."""
        return False

    def Is_intra(self) -> bool:
        """True."""
        return True

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        if self is other:
            return True
        if self._state is None or other._state is None:
            return False
        return self._state.ctx == other._state.ctx

    def __hash__(self) -> int:
        return id(self)


Intracomm = Comm

COMM_WORLD = Comm(which="COMM_WORLD")
COMM_SELF = Comm(which="COMM_SELF")
COMM_NULL = Comm(CommState(-2, [], -1, "MPI_COMM_NULL"), "COMM_NULL")


def finalize_checks(r: Rank) -> None:
    """At ``Finalize``: collective messages nobody received mean the ranks
    called different collectives."""
    assert r.proto is not None
    left = [m for m in r.proto.leftovers() if m.ctx % 2 == 1]
    if left:
        m = left[0]
        raise T.Exception(
            T.ERR_OTHER,
            f"mismatched collective calls: at MPI_Finalize rank {r.rank} has not received the message rank "
            f"{m.src} sent for its {leftover_text(m.tag)} (communicator context {m.ctx // 2})",
        )


_ = KINDS
