"""The rest of mpi4py's MPI-1 surface: null handles and constants,
zero-count messages, environment calls, Abort with its code, and what is
not offered raising NotImplementedError that names the call."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from mpi_helpers import all_true, run

from cellsim import mpi as MPI
from cellsim.mpi import RankFailed, mpirun


def test_null_handles_and_constants() -> None:
    nulls = [
        (MPI.Comm(), MPI.COMM_NULL),
        (MPI.Group(), MPI.GROUP_NULL),
        (MPI.Datatype(), MPI.DATATYPE_NULL),
        (MPI.Op(), MPI.OP_NULL),
        (MPI.Request(), MPI.REQUEST_NULL),
        (MPI.Info(), MPI.INFO_NULL),
        (MPI.Errhandler(), MPI.ERRHANDLER_NULL),
        (MPI.Win(), MPI.WIN_NULL),
        (MPI.File(), MPI.FILE_NULL),
        (MPI.Intercomm(), MPI.COMM_NULL),
    ]
    for made, null in nulls:
        assert made == null and not made
    assert (MPI.ANY_SOURCE, MPI.ANY_TAG, MPI.PROC_NULL, MPI.UNDEFINED) == (-2, -1, -1, -32766)
    assert MPI.IN_PLACE != MPI.BOTTOM and repr(MPI.IN_PLACE) == "IN_PLACE"
    assert (MPI.IDENT, MPI.CONGRUENT, MPI.SIMILAR, MPI.UNEQUAL) == (0, 1, 2, 3)
    assert MPI.Query_thread() == MPI.THREAD_SINGLE and MPI.Get_version() >= (2, 2)
    assert MPI.get_vendor()[0] == "cellsim" and MPI.Get_error_string(MPI.ERR_TRUNCATE).startswith(
        "MPI_ERR_TRUNCATE"
    )
    assert (
        MPI.GROUP_EMPTY.Get_size() == 0 and MPI.Group.Compare(MPI.GROUP_EMPTY, MPI.GROUP_EMPTY) == MPI.IDENT
    )
    assert isinstance(MPI.Exception(MPI.ERR_ARG), RuntimeError)


def _zero_and_environment() -> dict[str, bool]:
    comm = MPI.COMM_WORLD
    r, p = comm.rank, comm.size
    ok: dict[str, bool] = {}
    null = [None, "B"]
    st = MPI.Status()
    comm.Sendrecv(null, dest=(r + 1) % p, recvbuf=null, source=(r - 1) % p, status=st)
    ok["zero-byte message"] = st.Get_count(MPI.BYTE) == 0 and st.Get_source() == (r - 1) % p
    comm.Bcast(null)
    comm.Gather(null, null)
    comm.Allgatherv(null, [None, (0, None), MPI.INT])
    comm.Alltoall(null, null)
    comm.Allreduce(null, null)
    comm.Reduce_scatter_block(null, null)
    comm.Scan(null, null)
    ok["zero-count collectives"] = True
    comm.Sendrecv_replace(None, MPI.PROC_NULL, 0, MPI.PROC_NULL, 0)
    comm.Send(None, MPI.PROC_NULL)
    comm.Irecv(None, MPI.PROC_NULL).Wait()
    ok["PROC_NULL with no buffer"] = True
    ok["processor"] = MPI.Get_processor_name().startswith(f"SPE {r} ")
    ok["Wtick"] = 0 < MPI.Wtick() < 1e-6
    ok["initialized"] = MPI.Is_initialized() and not MPI.Is_finalized()
    ok["Init_thread"] = MPI.Init_thread() == MPI.THREAD_SINGLE
    mem = MPI.Alloc_mem(64)
    mem[:8] = b"cellsim!"
    ok["Alloc_mem"] = bytes(mem[:8]) == b"cellsim!"
    MPI.Finalize()
    ok["finalized"] = MPI.Is_finalized()
    return ok


def test_zero_counts_and_environment(protocol: str) -> None:
    all_true(run(_zero_and_environment, 3, protocol))


def test_outside_a_run() -> None:
    assert not MPI.Is_initialized() and not MPI.Is_finalized()
    with pytest.raises(MPI.Exception, match="must be made by an MPI rank"):
        MPI.COMM_WORLD.Get_rank()


@pytest.mark.parametrize(
    "call",
    [
        lambda: MPI.Win.Create(np.zeros(4)),
        lambda: MPI.Win.Allocate(64),
        lambda: MPI.File.Open(MPI.COMM_WORLD, "f", MPI.MODE_CREATE | MPI.MODE_WRONLY),
        lambda: MPI.COMM_WORLD.Spawn("python", ["x.py"], maxprocs=2),
        lambda: MPI.COMM_WORLD.Ibarrier(),
        lambda: MPI.COMM_WORLD.Mprobe(),
        lambda: MPI.Open_port(),
        lambda: MPI.COMM_WORLD.Create_cart([1]).Neighbor_allgather(np.zeros(1), np.zeros(1)),
    ],
)
def test_what_is_not_offered_says_so(call: object) -> None:
    def prog() -> str:
        try:
            call()  # type: ignore[operator]
        except NotImplementedError as e:
            return str(e)
        return "no error"

    (text,) = run(prog, 1, "direct").values
    assert re.match(r"MPI\.[A-Za-z_.]+: .+", text), text


def test_abort_stops_every_rank_with_its_code(protocol: str) -> None:
    def prog() -> None:
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            comm.Abort(7)
        comm.Barrier()  # the others wait here until they are stopped

    err = io.StringIO()
    res = mpirun(prog, 3, protocol=protocol, stdout=io.StringIO(), stderr=err, raise_errors=False)
    assert res.exit_code == 7
    assert isinstance(res.error, RankFailed) and "rank 1 called MPI_Abort(MPI_COMM_WORLD, 7)" in str(
        res.error
    )
