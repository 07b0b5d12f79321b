"""Derived datatypes: their typemaps (sizes, bounds, introspection) as MPI
defines them, and their movement between ranks (packed and unpacked by the
SPE with DMA lists) against numpy's slicing, on both protocols."""

from __future__ import annotations

import numpy as np
import pytest
from mpi_helpers import all_true, run

from cellsim import mpi as MPI

# -- typemaps ---------------------------------------------------------------------------------------


def test_named_types_are_named_and_predefined() -> None:
    for t in (MPI.DOUBLE, MPI.INT, MPI.BYTE, MPI.DOUBLE_INT, MPI.LONG_DOUBLE, MPI.C_DOUBLE_COMPLEX):
        assert t.Get_envelope() == (0, 0, 0, MPI.COMBINER_NAMED)
        assert t.is_named and t.is_predefined and t.decode() is t
        assert t.Get_extent() == (0, t.extent)
    assert (MPI.DOUBLE.size, MPI.INT.size, MPI.C_BOOL.size) == (8, 4, 1)
    assert (MPI.DOUBLE_INT.size, MPI.DOUBLE_INT.extent) == (12, 16)  # C struct {double; int}
    assert MPI.Datatype(MPI.DOUBLE) == MPI.DOUBLE and MPI.Datatype() == MPI.DATATYPE_NULL
    with pytest.raises(MPI.Exception, match="MPI_ERR_TYPE"):
        MPI.DOUBLE.Free()


def test_vector_indexed_struct_subarray_resized_bounds() -> None:
    v = MPI.DOUBLE.Create_vector(3, 2, 5)
    assert (v.size, v.lb, v.extent, v.true_extent) == (48, 0, (2 * 5 + 2) * 8, 96)
    h = MPI.INT.Create_hvector(2, 1, 100)
    assert (h.size, h.extent) == (8, 104)
    ix = MPI.INT.Create_indexed([1, 2], [4, 0])
    assert (ix.size, ix.lb, ix.ub) == (12, 0, 20)
    ib = MPI.INT.Create_indexed_block(2, [3, 0])
    assert (ib.size, ib.extent) == (16, 20)
    s = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.DOUBLE, MPI.INT])
    assert (s.size, s.extent) == (12, 16)  # padded to the double's alignment, as MPICH
    sub = MPI.INT.Create_subarray([4, 5], [2, 3], [1, 1])
    assert (sub.size, sub.extent, sub.true_lb) == (24, 80, (5 + 1) * 4)
    r = MPI.INT.Create_resized(-4, 12)
    assert r.Get_extent() == (-4, 12) and r.Get_true_extent() == (0, 4)
    c = MPI.INT.Create_contiguous(0)
    assert (c.size, c.extent) == (0, 0)


def test_envelope_contents_and_decode_round_trip() -> None:
    cases = [
        (MPI.DOUBLE.Create_vector(3, 2, 5), "VECTOR", {"count": 3, "blocklength": 2, "stride": 5}),
        (
            MPI.INT.Create_indexed([1, 2], [4, 0]),
            "INDEXED",
            {"blocklengths": [1, 2], "displacements": [4, 0]},
        ),
        (MPI.INT.Create_resized(-4, 12), "RESIZED", {"lb": -4, "extent": 12}),
        (MPI.INT.Create_subarray([4, 5], [2, 3], [1, 1]), "SUBARRAY", None),
    ]
    for t, name, kwargs in cases:
        ni, na, nd, _ = t.Get_envelope()
        ints, addrs, types = t.Get_contents()
        assert (len(ints), len(addrs), len(types)) == (ni, na, nd)
        assert not t.is_named and not t.is_predefined
        old, constructor, args = t.decode()
        assert constructor == name and (kwargs is None or args == kwargs)
        again = getattr(old, "Create_" + constructor.lower())(**args)
        assert again.decode()[2] == args and again.typemap.segments.tolist() == t.typemap.segments.tolist()
        t.Free()
        assert t == MPI.DATATYPE_NULL


def test_darray_is_the_block_of_a_process_grid() -> None:
    # 4 processes on a 2 x 2 grid, a 4 x 6 array of ints in blocks: rank 3 has rows 2-3, cols 3-5
    t = MPI.INT.Create_darray(
        4, 3, [4, 6], [MPI.DISTRIBUTE_BLOCK] * 2, [MPI.DISTRIBUTE_DFLT_DARG] * 2, [2, 2]
    )
    whole = np.arange(24, dtype=np.int32).reshape(4, 6)
    picked = [whole.reshape(-1).view(np.uint8)[o : o + n].view(np.int32) for o, n in t.typemap.segments]
    assert np.concatenate(picked).tolist() == whole[2:, 3:].reshape(-1).tolist()
    assert t.extent == whole.nbytes


def test_pack_and_unpack() -> None:
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    col = MPI.INT.Create_vector(3, 1, 4)  # a column (as many instances as the buffer's extent holds: 1)
    packed = np.zeros(64, np.uint8)
    pos = MPI.INT.Pack(np.array([7], np.int32), packed, 0)
    pos = col.Pack(a, packed, pos)
    assert pos == 16 and packed[:16].view(np.int32).tolist() == [7, 0, 4, 8]
    back = np.zeros((3, 4), np.int32)
    assert col.Unpack(packed, 4, back) == 16
    assert back[:, 0].tolist() == [0, 4, 8] and not back[:, 1:].any()
    assert col.Pack_size(5) == 60
    with pytest.raises(MPI.Exception, match="MPI_ERR_BUFFER"):
        col.Create_resized(0, 4).Pack(a[0, :1], packed, 0)


def test_compute_dims() -> None:
    assert MPI.Compute_dims(12, 2) == [4, 3]
    assert MPI.Compute_dims(8, [0, 0, 0]) == [2, 2, 2]
    assert MPI.Compute_dims(6, [0, 3]) == [2, 3]
    assert MPI.Compute_dims(7, [0, 0]) == [7, 1]
    with pytest.raises(MPI.Exception, match="MPI_ERR_DIMS"):
        MPI.Compute_dims(7, [2, 0])


def test_status_counts_of_derived_types() -> None:
    st = MPI.Status()
    st.Set_elements(MPI.DOUBLE_INT, 3)  # a pair and a half: double, int, double
    assert st.Get_elements(MPI.DOUBLE_INT) == 3 and st.Get_count(MPI.DOUBLE_INT) == MPI.UNDEFINED
    assert st.Get_count(MPI.BYTE) == 12 + 8


# -- movement ---------------------------------------------------------------------------------------


def _moves() -> dict[str, bool]:
    comm = MPI.COMM_WORLD
    r = comm.rank
    ok: dict[str, bool] = {}
    a = np.arange(60, dtype=np.float64).reshape(6, 10)
    col = MPI.DOUBLE.Create_vector(6, 1, 10).Commit()
    # a column of a row-major matrix, into a contiguous vector and into another column
    if r == 0:
        comm.Send([a.reshape(-1)[3:], 1, col], dest=1, tag=1)  # (as &a[0][3] in C)
        comm.Send([a, 1, col], dest=1, tag=2)
    elif r == 1:
        got = np.zeros(6)
        comm.Recv([got, 6, MPI.DOUBLE], source=0, tag=1)
        ok["column to vector"] = got.tolist() == a[:, 3].tolist()
        b = np.full((6, 10), -1.0)
        st = MPI.Status()
        comm.Recv([b.reshape(-1)[7:], 1, col], source=0, tag=2, status=st)
        want = np.full((6, 10), -1.0)
        want[:, 7] = a[:, 0]
        ok["column to column, the rest untouched"] = bool((b == want).all())
        ok["status counts"] = st.Get_count(col) == 1 and st.Get_elements(MPI.DOUBLE) == 6
    # a struct of a numpy record array (int and double fields, padded)
    rec = np.dtype([("i", np.int32), ("x", np.float64)], align=True)
    st_t = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.INT, MPI.DOUBLE]).Commit()
    arr = np.zeros(5, rec)
    if r == 0:
        arr["i"], arr["x"] = np.arange(5), np.arange(5) / 4
        comm.Send([arr, 5, st_t], dest=1, tag=3)
    elif r == 1:
        comm.Recv([arr, 5, st_t], source=0, tag=3)
        ok["struct"] = arr["i"].tolist() == list(range(5)) and arr["x"].tolist() == [i / 4 for i in range(5)]
    # a 3-d subarray, many small blocks (several DMA-list batches), eager and large
    for n in (4, 24):
        cube = np.arange(n**3, dtype=np.int16).reshape(n, n, n)
        sub = MPI.SHORT.Create_subarray([n, n, n], [n // 2, n - 2, 3], [1, 2, n // 3]).Commit()
        want = cube[1 : 1 + n // 2, 2:n, n // 3 : n // 3 + 3]
        if r == 0:
            comm.Send([cube, 1, sub], dest=1, tag=4)
        elif r == 1:
            out = np.zeros(want.size, np.int16)
            comm.Recv(out, source=0, tag=4)
            ok[f"subarray {n}"] = out.tolist() == want.reshape(-1).tolist()
    # indexed blocks in decreasing order, with a resized extent, Isend/Irecv of 3 of them
    t = MPI.INT.Create_indexed([2, 1], [5, 0]).Create_resized(0, 32).Commit()
    src = np.arange(24, dtype=np.int32)
    if r == 0:
        comm.Isend([src, 3, t], dest=1, tag=5).Wait()
    elif r == 1:
        dst = np.zeros(9, np.int32)
        comm.Irecv(dst, source=0, tag=5).Wait()
        ok["indexed, resized"] = dst.tolist() == [s for k in range(3) for s in (8 * k + 5, 8 * k + 6, 8 * k)]
    # to oneself
    mine = np.zeros(6)
    comm.Sendrecv([a, 1, col], dest=r, sendtag=6, recvbuf=mine, source=r, recvtag=6)
    ok["to oneself"] = mine.tolist() == a[:, 0].tolist()
    return ok


def test_derived_types_move_as_numpy_slices(protocol: str) -> None:
    all_true(run(_moves, 2, protocol))


def _collective_moves() -> dict[str, bool]:
    comm = MPI.COMM_WORLD
    r, p = comm.rank, comm.size
    ok: dict[str, bool] = {}
    # Bcast a column; Gather columns into the root's matrix; Scatter rows as columns
    m = np.arange(p * 8, dtype=np.float64).reshape(8, p) if r == 0 else np.zeros((8, p))
    col = MPI.DOUBLE.Create_vector(8, 1, p).Create_resized(0, 8).Commit()
    comm.Bcast([m, 1, col], root=0)
    ok["Bcast column"] = m[:, 0].tolist() == [p * i for i in range(8)]
    mine = np.full(8, float(r))
    g = np.zeros((8, p)) if r == 0 else None
    comm.Gather(mine, [g, 1, col] if r == 0 else None, root=0)
    if r == 0:
        assert g is not None
        ok["Gather into columns"] = bool((g == np.arange(p)[None, :]).all())
    part = np.zeros(8)
    src = np.arange(8 * p, dtype=np.float64).reshape(8, p)
    comm.Scatter([src, 1, col] if r == 0 else None, part, root=0)
    ok["Scatter columns"] = part.tolist() == src[:, r].tolist()
    # Allgather with a strided receive type, Alltoallw with a type per block
    out = np.zeros((4, p), np.int32)
    cols4 = MPI.INT.Create_vector(4, 1, p).Create_resized(0, 4).Commit()
    comm.Allgather(np.full(4, r, np.int32), [out, 1, cols4])
    ok["Allgather columns"] = bool((out == np.arange(p)[None, :]).all())
    send = np.array([100 * r + j for j in range(p)], np.int64)
    recv = np.zeros(2 * p, np.int64)
    types = [MPI.INT64_T] * p
    rtypes = [MPI.INT64_T.Create_resized(0, 16).Commit()] * p
    comm.Alltoallw(
        [send, ([1] * p, [8 * j for j in range(p)]), types],
        [recv, ([1] * p, [16 * i for i in range(p)]), rtypes],
    )
    ok["Alltoallw"] = recv[::2].tolist() == [100 * i + r for i in range(p)] and not recv[1::2].any()
    # a reduction over a derived type of one basic type
    v = np.arange(12, dtype=np.float64) * (r + 1)
    res = np.zeros(12)
    every_other = MPI.DOUBLE.Create_vector(6, 1, 2).Commit()
    comm.Allreduce([v, 1, every_other], [res, 1, every_other])
    ok["Allreduce vector type"] = res[::2].tolist() == (np.arange(0, 12, 2) * sum(range(1, p + 1))).tolist()
    ok["Allreduce leaves the gaps"] = not res[1::2].any()
    return ok


def test_derived_types_in_collectives(protocol: str) -> None:
    all_true(run(_collective_moves, 4, protocol))


def test_packing_is_simulated_work() -> None:
    """A strided message costs the SPE more than a contiguous one of the same size."""

    def prog(strided: bool) -> float:
        comm = MPI.COMM_WORLD
        a = np.zeros(4096, np.float64)
        t = MPI.DOUBLE.Create_vector(512, 1, 8).Commit() if strided else MPI.DOUBLE.Create_contiguous(512)
        comm.Barrier()
        t0 = MPI.Wtime()
        if comm.rank == 0:
            comm.Send([a, 1, t], dest=1)
        else:
            comm.Recv([a, 1, t], source=0)
        return MPI.Wtime() - t0

    plain = run(lambda: prog(False), 2, "direct").values[1]
    strided = run(lambda: prog(True), 2, "direct").values[1]
    assert strided > plain * 1.5
