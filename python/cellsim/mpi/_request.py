"""Requests: nonblocking and persistent communications, with mpi4py's
handle semantics (``MPI.Request()`` is ``REQUEST_NULL``; a completed
nonblocking request becomes ``REQUEST_NULL``, a completed persistent one
inactive until the next ``Start``) and the MPI completion calls (``Wait*``,
``Test*``, ``Cancel``).

A request refers to a :class:`_Comm`: the protocol's request (None for a
communication with ``PROC_NULL``, complete at once), the communicator it
was made on (to give the source as a communicator rank) and, for an object
receive, the unpickled object once it completed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import _types as T
from ._handle import Handle
from ._pickle import pickle
from ._protocol import Req
from ._runtime import api, current_rank

if TYPE_CHECKING:
    from ._comm import CommState

__all__ = ["REQUEST_NULL", "Prequest", "Request"]


class _Comm:
    """One communication in flight (or, persistent, one that can be started again)."""

    def __init__(
        self,
        req: Req | None,
        comm: CommState | None,
        obj: bool = False,
        start: Callable[[], _Comm] | None = None,
    ) -> None:
        self.req = req
        self.comm = comm
        self.obj = obj
        self.start = start
        self.active = start is None
        self.value: Any = None

    def done(self) -> bool:
        return not self.active or self.req is None or self.req.done

    def status(self, status: T.Status | None) -> None:
        """What completed, into ``status``."""
        if status is None:
            return
        q = self.req
        if not self.active:
            status._set(T.ANY_SOURCE, T.ANY_TAG, 0)
        elif q is None:
            status._set(T.PROC_NULL, T.ANY_TAG, 0)
        elif q.kind == "recv" and self.comm is not None and not q.data.get("cancelled"):
            g = self.comm.group
            status._set(g.index(q.src) if q.src in g else q.src, q.rtag, q.nbytes)
        else:
            status._set(T.ANY_SOURCE, T.ANY_TAG, 0)
        status.cancelled = bool(q is not None and self.active and q.data.get("cancelled"))

    def finish(self) -> None:
        """After completion: the error it ended with, the object received."""
        q = self.req
        if not self.active or q is None:
            return
        if q.error is not None:
            raise q.error
        if self.obj and q.kind == "recv" and not q.data.get("cancelled"):
            assert q.ref is not None and q.ref.shadow is not None
            data = bytes(q.ref.shadow[: q.nbytes])
            q.ref.release()
            self.value = pickle.loads(data)


def _progress(call: str) -> None:
    r = current_rank(call)
    assert r.proto is not None
    r.proto.progress()


class Request(Handle):
    """A communication request handle."""

    __slots__ = ()
    _h: _Comm | None

    def __repr__(self) -> str:
        return f"<cellsim.mpi.{type(self).__name__} {'null' if self._h is None else 'active'}>"

    # -- completion of one --

    def _complete(self, status: T.Status | None) -> Any:
        """The request is done: its status and value; a nonblocking one becomes REQUEST_NULL."""
        c = self._h
        if c is None:
            if status is not None:
                status._set(T.ANY_SOURCE, T.ANY_TAG, 0)
                status.cancelled = False
            return None
        c.status(status)
        if c.start is None:
            self._h = None
        try:
            c.finish()
        finally:
            if c.start is not None:
                c.active = False
        return c.value

    def _wait(self, call: str) -> None:
        c = self._h
        if c is not None and not c.done():
            r = current_rank(call)
            assert r.proto is not None and c.req is not None
            r.proto.wait(c.req)

    @api
    def Wait(self, status: T.Status | None = None) -> bool:
        """Waits until the operation is complete."""
        self._wait("Request.Wait")
        self._complete(status)
        return True

    @api
    def Test(self, status: T.Status | None = None) -> bool:
        """Whether the operation is complete (makes progress, never waits)."""
        c = self._h
        if c is not None and not c.done():
            _progress("Request.Test")
            if not c.done():
                return False
        self._complete(status)
        return True

    @api
    def wait(self, status: T.Status | None = None) -> Any:
        """Waits; returns the received object (``irecv``) or None."""
        self._wait("Request.wait")
        return self._complete(status)

    @api
    def test(self, status: T.Status | None = None) -> tuple[bool, Any]:
        """``(done, object)``."""
        c = self._h
        if c is not None and not c.done():
            _progress("Request.test")
            if not c.done():
                return False, None
        return True, self._complete(status)

    @api
    def Get_status(self, status: T.Status | None = None) -> bool:
        """Whether the operation is complete, leaving the request as it is."""
        c = self._h
        if c is not None and not c.done():
            _progress("Request.Get_status")
        done = c is None or c.done()
        if done:
            if c is None:
                if status is not None:
                    status._set(T.ANY_SOURCE, T.ANY_TAG, 0)
            else:
                c.status(status)
        return done

    get_status = Get_status

    @api
    def Cancel(self) -> None:
        """Cancels a receive not matched yet (a send, once started, completes anyway)."""
        c = self._h
        if c is None or c.done():
            return
        r = current_rank("Request.Cancel")
        assert r.proto is not None and c.req is not None
        r.proto.cancel(c.req)

    cancel = Cancel

    def Free(self) -> None:
        """Forgets the request (an operation in progress still completes)."""
        self._h = None

    def py2f(self) -> int:
        return id(self._h) if self._h is not None else 0

    # -- completion of many --

    @staticmethod
    def _statuses(statuses: Any, n: int) -> Any:
        """mpi4py extends a list of statuses to ``n``."""
        if isinstance(statuses, list):
            statuses.extend(T.Status() for _ in range(n - len(statuses)))
        return statuses

    @staticmethod
    def _status_at(statuses: Any, i: int) -> T.Status | None:
        return statuses[i] if statuses is not None and i < len(statuses) else None

    @staticmethod
    def _active(requests: Sequence[Request]) -> list[int]:
        return [i for i, q in enumerate(requests) if q._h is not None and q._h.active]

    @staticmethod
    def _wait_some(requests: Sequence[Request], active: list[int], call: str) -> list[int]:
        """Runs progress (blocking when idle) until an active request is done; the done ones."""
        done = [i for i in active if requests[i]._h.done()]  # type: ignore[union-attr]
        if done:
            return done
        r = current_rank(call)
        assert r.proto is not None
        reqs = [requests[i]._h.req for i in active]  # type: ignore[union-attr]
        r.proto.wait_any([q for q in reqs if q is not None], call)
        return [i for i in active if requests[i]._h.done()]  # type: ignore[union-attr]

    @staticmethod
    @api
    def Waitall(requests: Sequence[Request], statuses: Any = None) -> bool:
        """Waits for every request."""
        statuses = Request._statuses(statuses, len(requests))
        for i, q in enumerate(requests):
            q._wait("Request.Waitall")
            q._complete(Request._status_at(statuses, i))
        return True

    @staticmethod
    @api
    def waitall(requests: Sequence[Request], statuses: Any = None) -> list[Any]:
        """Waits for every request; returns the received objects."""
        statuses = Request._statuses(statuses, len(requests))
        out = []
        for i, q in enumerate(requests):
            q._wait("Request.waitall")
            out.append(q._complete(Request._status_at(statuses, i)))
        return out

    @staticmethod
    @api
    def Testall(requests: Sequence[Request], statuses: Any = None) -> bool:
        """Whether every request is complete (then completes them all)."""
        if not all(q._h is None or q._h.done() for q in requests):
            _progress("Request.Testall")
            if not all(q._h is None or q._h.done() for q in requests):
                return False
        Request.Waitall(requests, statuses)
        return True

    @staticmethod
    @api
    def testall(requests: Sequence[Request], statuses: Any = None) -> tuple[bool, list[Any] | None]:
        """``(done, objects)``."""
        if not all(q._h is None or q._h.done() for q in requests):
            _progress("Request.testall")
            if not all(q._h is None or q._h.done() for q in requests):
                return False, None
        return True, Request.waitall(requests, statuses)

    @staticmethod
    @api
    def Waitany(requests: Sequence[Request], status: T.Status | None = None) -> int:
        """Waits for one request; returns its index (``UNDEFINED`` if none is active)."""
        return Request.waitany(requests, status)[0]

    @staticmethod
    @api
    def waitany(requests: Sequence[Request], status: T.Status | None = None) -> tuple[int, Any]:
        """``(index, object)`` of the first request done."""
        active = Request._active(requests)
        if not active:
            Request()._complete(status)
            return T.UNDEFINED, None
        i = Request._wait_some(requests, active, "Request.Waitany")[0]
        return i, requests[i]._complete(status)

    @staticmethod
    @api
    def Testany(requests: Sequence[Request], status: T.Status | None = None) -> tuple[int, bool]:
        """``(index, True)`` of a complete request, ``(UNDEFINED, False)`` if none
        is, ``(UNDEFINED, True)`` if none is active."""
        i, flag, _ = Request.testany(requests, status)
        return i, flag

    @staticmethod
    @api
    def testany(requests: Sequence[Request], status: T.Status | None = None) -> tuple[int, bool, Any]:
        """``(index, done, object)``."""
        active = Request._active(requests)
        if not active:
            Request()._complete(status)
            return T.UNDEFINED, True, None
        done = [i for i in active if requests[i]._h.done()]  # type: ignore[union-attr]
        if not done:
            _progress("Request.Testany")
            done = [i for i in active if requests[i]._h.done()]  # type: ignore[union-attr]
        if not done:
            return T.UNDEFINED, False, None
        return done[0], True, requests[done[0]]._complete(status)

    @staticmethod
    def _some(
        requests: Sequence[Request], statuses: Any, wait: bool
    ) -> tuple[list[int] | None, list[Any] | None]:
        """The requests done (``wait``: waiting until one is): their indices and
        objects, their statuses in ``statuses`` (None, None if none is active)."""
        active = Request._active(requests)
        if not active:
            return None, None
        if wait:
            done = Request._wait_some(requests, active, "Request.Waitsome")
        else:
            _progress("Request.Testsome")
            done = [i for i in active if requests[i]._h.done()]  # type: ignore[union-attr]
        statuses = Request._statuses(statuses, len(done))
        return done, [requests[i]._complete(Request._status_at(statuses, k)) for k, i in enumerate(done)]

    @staticmethod
    @api
    def Waitsome(requests: Sequence[Request], statuses: Any = None) -> list[int] | None:
        """Waits until some requests are done; their indices (None if none is active)."""
        return Request._some(requests, statuses, wait=True)[0]

    @staticmethod
    @api
    def waitsome(
        requests: Sequence[Request], statuses: Any = None
    ) -> tuple[list[int] | None, list[Any] | None]:
        """``(indices, objects)`` of the requests done (``(None, None)`` if none is active)."""
        return Request._some(requests, statuses, wait=True)

    @staticmethod
    @api
    def Testsome(requests: Sequence[Request], statuses: Any = None) -> list[int] | None:
        """The indices of the requests done now (None if none is active)."""
        return Request._some(requests, statuses, wait=False)[0]

    @staticmethod
    @api
    def testsome(
        requests: Sequence[Request], statuses: Any = None
    ) -> tuple[list[int] | None, list[Any] | None]:
        """``(indices, objects)`` of the requests done now."""
        return Request._some(requests, statuses, wait=False)


class Prequest(Request):
    """A persistent request (``Send_init``, ``Recv_init``...): inactive
    until ``Start``, inactive again once complete."""

    __slots__ = ()

    @api
    def Start(self) -> None:
        """Starts the communication."""
        c = self._h
        if c is None or c.start is None:
            raise T.Exception(T.ERR_REQUEST, "Start: the request is MPI_REQUEST_NULL")
        if c.active:
            raise T.Exception(T.ERR_REQUEST, "Start: the persistent request is active (Wait for it first)")
        new = c.start()
        c.req, c.comm, c.value, c.active = new.req, new.comm, None, True

    @staticmethod
    def Startall(requests: Sequence[Prequest]) -> None:
        """Starts every request, in order."""
        for q in requests:
            q.Start()


REQUEST_NULL = Request()
