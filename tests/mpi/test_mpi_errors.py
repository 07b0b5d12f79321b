"""Bad input: what an MPI program gets wrong is reported as MPI reports it (or
as a deadlock naming what each rank waits on), on both protocols."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from mpi_helpers import run

from cellsim import UsageError
from cellsim import mpi as MPI
from cellsim.mpi import MPIDeadlockError, mpirun


def test_sending_to_a_rank_that_does_not_exist(protocol: str) -> None:
    def prog() -> None:
        MPI.COMM_WORLD.Send(np.zeros(4), dest=MPI.COMM_WORLD.size + 2)

    with pytest.raises(MPI.Exception, match=r"MPI_ERR_RANK: invalid rank: Send: rank 5 does not exist") as e:
        run(prog, 3, protocol)
    assert e.value.Get_error_class() == MPI.ERR_RANK


def test_bad_tag_and_root(protocol: str) -> None:
    with pytest.raises(MPI.Exception, match="MPI_ERR_TAG"):
        run(lambda: MPI.COMM_WORLD.send(1, dest=0, tag=-5), 2, protocol)
    with pytest.raises(MPI.Exception, match="MPI_ERR_ROOT"):
        run(lambda: MPI.COMM_WORLD.bcast(1, root=9), 2, protocol)


def test_truncation_uncaught_stops_the_run(protocol: str) -> None:
    def prog() -> None:
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            comm.Send(np.zeros(100), dest=1)
        else:
            comm.Recv(np.zeros(10), source=0)

    res = run(prog, 2, protocol, raise_errors=False)
    assert res.exit_code == 1
    assert "MPI_ERR_TRUNCATE: message truncated" in str(res.error)
    assert "800 bytes from rank 0" in str(res.error) and "80 bytes" in str(res.error)


def test_deadlock_names_what_each_rank_waits_on(protocol: str) -> None:
    def prog() -> None:
        comm = MPI.COMM_WORLD
        comm.Recv(np.zeros(2), source=(comm.rank + 1) % comm.size, tag=3)

    with pytest.raises(MPIDeadlockError) as e:
        run(prog, 3, protocol)
    assert e.value.waits == {r: f"Recv(source={(r + 1) % 3}, tag=3) on MPI_COMM_WORLD" for r in range(3)}
    assert "deadlock: every rank is blocked" in str(e.value)


def test_synchronous_sends_head_to_head_deadlock(protocol: str) -> None:
    def prog() -> None:
        comm = MPI.COMM_WORLD
        other = 1 - comm.rank
        comm.Ssend(np.zeros(2), dest=other)
        comm.Recv(np.zeros(2), source=other)

    with pytest.raises(MPIDeadlockError) as e:
        run(prog, 2, protocol)
    assert e.value.waits == {
        0: "Ssend(dest=1, tag=0) on MPI_COMM_WORLD",
        1: "Ssend(dest=0, tag=0) on MPI_COMM_WORLD",
    }


def test_small_sends_head_to_head_are_buffered(protocol: str) -> None:
    def prog() -> bool:
        comm = MPI.COMM_WORLD
        other = 1 - comm.rank
        comm.send(["a small object", comm.rank], dest=other)
        return comm.recv(source=other) == ["a small object", other]

    assert run(prog, 2, protocol).values == [True, True]


def bcast_against(call: Callable[[Any, np.ndarray], None]) -> Callable[[], None]:
    """A program whose rank 0 broadcasts 4 doubles while every other rank makes ``call(comm, b)``
    with the same buffer ``b``: a mismatched collective."""

    def prog() -> None:
        comm = MPI.COMM_WORLD
        b = np.zeros(4)
        if comm.rank == 0:
            comm.Bcast(b, root=0)
        else:
            call(comm, b)

    return prog


def test_mismatched_collectives(protocol: str) -> None:
    prog = bcast_against(lambda comm, b: comm.Allreduce(np.ones(4), b))
    with pytest.raises(
        MPI.Exception, match=r"MPI_ERR_OTHER: .*mismatched collective calls on MPI_COMM_WORLD"
    ) as e:
        run(prog, 3, protocol)
    assert "Allreduce (collective #1)" in str(e.value)


def test_a_mismatch_found_later_names_both_ranks_calls(protocol: str) -> None:
    """A root that only sends (Bcast) against ranks that only send to it (Reduce): neither call
    hears from the other, so the mismatch surfaces at the next collective; the error names the
    collective that did not match and what each rank called there, not the later call alone."""
    prog = bcast_against(lambda comm, b: comm.Reduce(np.ones(4), b, root=0))
    with pytest.raises(MPI.Exception) as e:
        run(prog, 2, protocol)
    both = (
        r"collective #1 is (Bcast on rank 0 but Reduce\(root=0\) on rank 1"
        r"|Reduce on rank 1 but Bcast\(root=0\) on rank 0)"
    )
    assert re.search(both, str(e.value)), str(e.value)


def test_a_collective_one_rank_skips_is_caught_at_finalize(protocol: str) -> None:
    def prog() -> None:
        if MPI.COMM_WORLD.rank == 0:
            MPI.COMM_WORLD.Bcast(np.zeros(2), root=0)

    with pytest.raises(MPI.Exception, match="mismatched collective calls"):
        run(prog, 2, protocol)


def test_too_many_ranks_for_the_chip() -> None:
    with pytest.raises(UsageError, match=r"this qs20 has 16 SPEs .* at most 16 ranks$"):
        mpirun(lambda: None, 17)
    with pytest.raises(UsageError, match=r"this qs20-1chip has 8 SPEs .* two-chip blades with 16"):
        mpirun(lambda: None, 9, machine="qs20-1chip")
    with pytest.raises(UsageError, match="this ps3 has 6 SPEs"):
        mpirun(lambda: None, 7, machine="ps3")
    with pytest.raises(UsageError, match="at least one rank"):
        mpirun(lambda: None, 0)


def test_bad_protocol_and_compute_rule() -> None:
    with pytest.raises(UsageError, match="unknown protocol 'fast'"):
        mpirun(lambda: None, 2, protocol="fast")
    with pytest.raises(MPI.Exception, match="host-scaled:F"):
        mpirun(lambda: None, 2, compute="fast")
    with pytest.raises(MPI.Exception, match="F must be a positive number"):
        mpirun(lambda: None, 2, compute="host-scaled:-1")


def test_a_raising_rank_stops_the_others(protocol: str) -> None:
    after: list[int] = []

    def prog() -> None:
        comm = MPI.COMM_WORLD
        if comm.rank == 2:
            raise ZeroDivisionError("rank 2 divides by zero")
        comm.Barrier()
        after.append(comm.rank)

    err = io.StringIO()
    res = mpirun(prog, 4, protocol=protocol, stderr=err, raise_errors=False)
    assert res.exit_code == 1
    assert res.error is not None and "rank 2 raised ZeroDivisionError" in str(res.error)
    assert after == []  # nobody got past the barrier
    assert res.codes == [None, None, None, None]
    with pytest.raises(ZeroDivisionError) as e:
        mpirun(prog, 4, protocol=protocol)
    assert "raised by MPI rank 2" in "".join(getattr(e.value, "__notes__", []))


def test_exit_status_is_the_worst_ranks() -> None:
    def prog() -> None:
        if MPI.COMM_WORLD.rank == 1:
            raise SystemExit(3)
        MPI.COMM_WORLD.Barrier()

    res = run(prog, 3, "direct", raise_errors=False)
    assert res.exit_code == 3
    res = run(lambda: None, 3, "direct")
    assert res.exit_code == 0 and res.codes == [0, 0, 0]


def test_calls_outside_a_rank() -> None:
    with pytest.raises(MPI.Exception, match="must be made by an MPI rank"):
        MPI.COMM_WORLD.Get_rank()
    with pytest.raises(MPI.Exception, match="must be made by an MPI rank"):
        MPI.Wtime()
