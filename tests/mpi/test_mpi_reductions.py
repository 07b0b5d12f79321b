"""Prefix and scattered reductions (Scan, Exscan, Reduce_scatter,
Reduce_scatter_block), user operations, MINLOC/MAXLOC and in-place forms,
against numpy on both protocols."""

from __future__ import annotations

import numpy as np
import pytest
from mpi_helpers import all_true, run

from cellsim import mpi as MPI


def _data(rank: int, n: int = 6) -> np.ndarray:
    return np.random.default_rng(7 + rank).integers(1, 9, n).astype(np.float64)


def _matmul(invec: MPI.memory, inoutvec: MPI.memory, datatype: MPI.Datatype) -> None:
    """inout = in @ inout for 2 x 2 matrices: associative, not commutative."""
    a = np.frombuffer(invec, np.float64).reshape(-1, 2, 2)
    b = np.frombuffer(inoutvec, np.float64).reshape(-1, 2, 2)
    b[...] = a @ b


def _reductions() -> dict[str, bool]:
    comm = MPI.COMM_WORLD
    r, p = comm.rank, comm.size
    every = [_data(i) for i in range(p)]
    ok: dict[str, bool] = {}
    out = np.zeros(6)
    comm.Scan(_data(r), out)
    ok["Scan"] = np.allclose(out, np.sum(every[: r + 1], axis=0))
    out = np.full(6, -1.0)
    comm.Exscan(_data(r), out, op=MPI.MAX)
    ok["Exscan"] = (out == -1).all() if r == 0 else np.allclose(out, np.max(every[:r], axis=0))
    x = _data(r)
    comm.Scan(MPI.IN_PLACE, x, op=MPI.PROD)
    ok["Scan IN_PLACE"] = np.allclose(x, np.prod(every[: r + 1], axis=0))
    # Reduce_scatter_block: block i of the sum to rank i
    big = np.arange(3 * p, dtype=np.int64) * (r + 1)
    mine = np.zeros(3, np.int64)
    comm.Reduce_scatter_block(big, mine)
    total = np.arange(3 * p) * sum(range(1, p + 1))
    ok["Reduce_scatter_block"] = mine.tolist() == total[3 * r : 3 * r + 3].tolist()
    inplace = big.copy()
    comm.Reduce_scatter_block(MPI.IN_PLACE, inplace)
    ok["Reduce_scatter_block IN_PLACE"] = inplace[:3].tolist() == total[3 * r : 3 * r + 3].tolist()
    # Reduce_scatter with uneven counts (rank i gets i + 1 elements), given and not given
    counts = [i + 1 for i in range(p)]
    v = np.arange(sum(counts), dtype=np.float64) + r
    got = np.zeros(r + 1)
    comm.Reduce_scatter(v, got, counts, op=MPI.SUM)
    want = (np.arange(sum(counts)) * p + sum(range(p)))[sum(counts[:r]) : sum(counts[: r + 1])]
    ok["Reduce_scatter"] = got.tolist() == want.tolist()
    got2 = np.zeros(r + 1)
    comm.Reduce_scatter(v, got2)  # counts from each rank's receive buffer
    ok["Reduce_scatter without counts"] = got2.tolist() == want.tolist()
    # a user operation that does not commute: matrix products in rank order
    mats = [
        np.array([[1.0, i + 1], [0.0, 1.0]]) if i % 2 else np.array([[1.0, 0.0], [i + 1, 1.0]])
        for i in range(p)
    ]
    prod = mats[0]
    for m in mats[1:]:
        prod = prod @ m
    op = MPI.Op.Create(_matmul, commute=False)
    res = np.zeros((2, 2))
    comm.Allreduce(mats[r], res, op=op)
    ok["user op in rank order"] = np.allclose(res, prod)
    res = np.zeros((2, 2))
    comm.Reduce(mats[r], res, op=op, root=p - 1)
    if r == p - 1:
        ok["user op Reduce"] = np.allclose(res, prod)
    res = np.zeros((2, 2))
    comm.Scan(mats[r], res, op=op)
    pre = mats[0]
    for m in mats[1 : r + 1]:
        pre = pre @ m
    ok["user op Scan"] = np.allclose(res, pre)
    op.Free()
    ok["freed"] = op == MPI.OP_NULL
    # MINLOC / MAXLOC on value-index pairs
    pair = np.zeros(2, dtype=MPI.DOUBLE_INT.dtype)
    pair["v"], pair["i"] = [float((r * 5) % p), -float(r)], r
    lo, hi = np.zeros(2, dtype=pair.dtype), np.zeros(2, dtype=pair.dtype)
    comm.Allreduce([pair, MPI.DOUBLE_INT], [lo, MPI.DOUBLE_INT], op=MPI.MINLOC)
    comm.Allreduce([pair, MPI.DOUBLE_INT], [hi, MPI.DOUBLE_INT], op=MPI.MAXLOC)
    vals = [(float((i * 5) % p), i) for i in range(p)]
    ok["MINLOC"] = (lo["v"][0], lo["i"][0]) == min(vals) and (lo["v"][1], lo["i"][1]) == (-(p - 1), p - 1)
    ok["MAXLOC"] = (hi["v"][0], hi["i"][0]) == max(vals, key=lambda t: (t[0], -t[1]))
    # objects
    ok["scan objects"] = comm.scan([r]) == list(range(r + 1))
    ok["exscan objects"] = comm.exscan(r + 1, op=MPI.PROD) == (
        None if r == 0 else int(np.prod(range(1, r + 1)))
    )
    ok["allreduce MAXLOC objects"] = comm.allreduce((r % 2, r), op=MPI.MAXLOC) == (1, 1)
    return ok


@pytest.mark.parametrize("n", [3, 4])
def test_reductions_against_numpy(protocol: str, n: int) -> None:
    all_true(run(_reductions, n, protocol))


def test_reduce_local_and_calls() -> None:
    a, b = np.arange(4.0), np.ones(4)
    MPI.SUM.Reduce_local(a, b)
    assert b.tolist() == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="mismatch"):
        MPI.SUM.Reduce_local([a, 2, MPI.DOUBLE], [b, 3, MPI.DOUBLE])
    assert MPI.MINLOC(([1], 2), ([1], 1)) == ([1], 1) and MPI.REPLACE(2, 3) == 3 and MPI.NO_OP(2, 3) == 2
    assert MPI.Op() == MPI.OP_NULL and MPI.SUM.is_predefined and MPI.MAXLOC.is_commutative
