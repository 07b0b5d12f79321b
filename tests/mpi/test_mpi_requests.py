"""Requests: persistent requests, the completion calls (Waitsome, Testany,
Testsome...), Cancel, buffered sends and the null request, on both
protocols, with MPI's semantics."""

from __future__ import annotations

import numpy as np
from mpi_helpers import all_true, run

from cellsim import mpi as MPI


def _persistent() -> dict[str, bool]:
    comm = MPI.COMM_WORLD
    r, p = comm.rank, comm.size
    right, left = (r + 1) % p, (r - 1) % p
    ok: dict[str, bool] = {}
    out = np.zeros(3000, np.int32)  # above the eager limit: the pull path too
    into = np.zeros(3000, np.int32)
    sends = [
        comm.Send_init(out, dest=right, tag=1),
        comm.Ssend_init(out[:10], dest=right, tag=2),
        comm.Bsend_init(out[:20], dest=right, tag=3),
        comm.Rsend_init(out[:5], dest=right, tag=4),
    ]
    recvs = [
        comm.Recv_init(into, source=left, tag=1),
        comm.Recv_init(into[:10], source=left, tag=2),
        comm.Recv_init(into[:20], source=left, tag=3),
        comm.Recv_init(into[:5], source=left, tag=4),
    ]
    seen = []
    for step in range(3):
        out[:] = 10 * r + step  # each Start sends what the buffer holds then
        MPI.Prequest.Startall(recvs)
        for q in sends:
            q.Start()
        MPI.Request.Waitall(recvs + sends)
        seen.append(int(into[0]) == 10 * left + step and int(into[2999]) == 10 * left + step)
    ok["restarted three times"] = all(seen)
    ok["inactive, not null"] = all(q != MPI.REQUEST_NULL for q in sends + recvs)
    st = MPI.Status()
    ok["inactive wait is empty"] = recvs[0].Wait(st) and st.Get_source() == MPI.ANY_SOURCE
    for q in sends + recvs:
        q.Free()
    ok["freed"] = all(q == MPI.REQUEST_NULL for q in sends + recvs)
    null = comm.Recv_init(into, source=MPI.PROC_NULL)
    null.Start()
    null.Wait(st)
    ok["PROC_NULL persistent"] = st.Get_source() == MPI.PROC_NULL and st.Get_count() == 0
    comm.Barrier()
    return ok


def test_persistent_requests(protocol: str) -> None:
    all_true(run(_persistent, 3, protocol))


def _completions() -> dict[str, bool]:
    comm = MPI.COMM_WORLD
    r, p = comm.rank, comm.size
    ok: dict[str, bool] = {}
    if r == 0:
        bufs = [np.zeros(4, np.int64) for _ in range(p - 1)]
        reqs = [comm.Irecv(bufs[i - 1], source=i, tag=7) for i in range(1, p)]
        ok["Testany before anything"] = MPI.Request.Testany(reqs) == (MPI.UNDEFINED, False)
        ok["Testsome before anything"] = MPI.Request.Testsome(reqs) == []
        comm.Barrier()  # now the senders go
        done: list[int] = []
        statuses: list[MPI.Status] = []
        while len(done) < p - 1:
            got = MPI.Request.Waitsome(reqs, statuses)
            assert got is not None
            done += got
            ok.setdefault("statuses filled", True)
            ok["statuses filled"] &= all(statuses[k].Get_source() == i + 1 for k, i in enumerate(got))
        ok["Waitsome got each once"] = sorted(done) == list(range(p - 1))
        ok["data"] = all(int(b[0]) == i + 1 for i, b in enumerate(bufs))
        ok["all null now"] = all(q == MPI.REQUEST_NULL for q in reqs)
        ok["Waitsome of nulls"] = MPI.Request.Waitsome(reqs) is None
        ok["Testany of nulls"] = MPI.Request.Testany(reqs) == (MPI.UNDEFINED, True)
        ok["Waitany of nulls"] = MPI.Request.Waitany(reqs) == MPI.UNDEFINED
        # objects
        oreqs = [comm.irecv(source=i, tag=8) for i in range(1, p)]
        comm.Barrier()
        values = {}
        while len(values) < p - 1:
            idx, objs = MPI.Request.testsome(oreqs)
            for i, v in zip(idx or [], objs or [], strict=True):
                values[i] = v
        ok["testsome objects"] = values == {i - 1: ("hi", i) for i in range(1, p)}
        flag, objs = MPI.Request.testall(oreqs)
        ok["testall of nulls"] = flag and objs == [None] * (p - 1)
    else:
        comm.Barrier()
        comm.Send(np.full(4, r, np.int64), dest=0, tag=7)
        comm.Barrier()
        comm.isend(("hi", r), dest=0, tag=8).wait()
    return ok


def test_waitsome_testany_testsome(protocol: str) -> None:
    all_true(run(_completions, 4, protocol))


def _cancel() -> dict[str, bool]:
    comm = MPI.COMM_WORLD
    r = comm.rank
    ok: dict[str, bool] = {}
    if r == 0:
        buf = np.zeros(4)
        q = comm.Irecv(buf, source=1, tag=99)  # nobody sends it
        q.Cancel()
        st = MPI.Status()
        q.Wait(st)
        ok["cancelled"] = st.Is_cancelled() and q == MPI.REQUEST_NULL
        q2 = comm.Irecv(buf, source=1, tag=5)
        comm.Barrier()
        q2.Cancel()  # already matched (or about to be): it completes normally
        q2.Wait(st)
        ok["matched not cancelled"] = not st.Is_cancelled() and buf[0] == 5.0
    else:
        comm.Send(np.full(4, 5.0), dest=0, tag=5)
        comm.Barrier()
    return ok


def test_cancel_a_receive(protocol: str) -> None:
    all_true(run(_cancel, 2, protocol))


def _buffered() -> dict[str, bool]:
    comm = MPI.COMM_WORLD
    other = 1 - comm.rank
    ok: dict[str, bool] = {}
    MPI.Attach_buffer(bytearray(1 << 20))
    big = np.full(100_000, comm.rank, np.int32)  # above the eager limit: a standard send would wait
    comm.Bsend(big, dest=other, tag=1)  # both ranks send first: buffered sends do not wait
    big[:] = -1  # the data was copied at the call
    got = np.zeros(100_000, np.int32)
    comm.Recv(got, source=other, tag=1)
    ok["bsend head to head"] = bool((got == other).all())
    ok["detach"] = len(MPI.Detach_buffer()) == 1 << 20
    q = comm.Ibsend(np.arange(3.0), dest=other, tag=2)
    ok["ibsend complete at once"] = q.Test()
    comm.bsend(("x", comm.rank), dest=other, tag=3)
    ok["bsend object"] = comm.recv(source=other, tag=3) == ("x", other)
    comm.Recv(np.zeros(3), source=other, tag=2)
    return ok


def test_buffered_sends(protocol: str) -> None:
    all_true(run(_buffered, 2, protocol))


def test_null_request_outside_a_run() -> None:
    q = MPI.Request()
    st = MPI.Status()
    assert q == MPI.REQUEST_NULL and not q
    assert q.Wait(st) is True and st.Get_source() == MPI.ANY_SOURCE and st.Get_tag() == MPI.ANY_TAG
    assert q.Test() is True and q.test() == (True, None) and q.Get_status() is True
    assert MPI.Request.Waitall([q, MPI.Request()]) is True
