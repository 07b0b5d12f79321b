"""``mpi-collectives``: latency of MPI collectives on 2 to 16 SPEs, both protocols.

Barrier, Bcast, Allreduce (sum of doubles), Allgather and Alltoall, the
buffers in main memory; ``size`` is the bytes each rank contributes
(Bcast: the message; Allreduce: the vector; Allgather: each rank's block;
Alltoall: each block sent to each rank). The latency is the slowest rank's
mean time per call over ``reps`` calls between two barriers (``MPI.Wtime``,
decrementer at 14.318 MHz). On a two-chip blade the default adds 16 ranks
(Kumar et al.: "sixteen for a blade"), with messages up to 4 KB and half the
calls, which keeps the experiment's host time modest. Kumar et al. 2007 built its collectives on
point-to-point; ``kumar`` here does the same with the algorithms of
MPICH-1 (see :mod:`cellsim.mpi._coll`), ``direct`` uses its own
point-to-point and algorithms that post every transfer at once.

>>> from cellsim.experiments import mpi_collectives
>>> rs = mpi_collectives.run(ops=["Barrier"], spes=[2], reps=2, protocols=["direct"])
>>> [(r["op"], r["spes"], r["size"]) for r in rs]
[('Barrier', 2, 0)]
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

import numpy as np

from .. import mpi
from ..exceptions import UsageError
from . import Experiment, Option, RunSettings, Table
from ._common import check_choices, measure_groups, save_figure
from ._mpi import PROTOCOL_OPTION, STYLE, check_protocols, protocols_in, run_ranks

__all__ = ["EXPERIMENT", "OPS", "compare", "plot", "run", "tables"]

OPS: tuple[str, ...] = ("Barrier", "Bcast", "Allreduce", "Allgather", "Alltoall")
SPES: tuple[int, ...] = (2, 4, 8)
"""Default rank counts on one chip; a two-chip blade adds :data:`BLADE_SPES`."""
BLADE_SPES = 16
SIZES: tuple[int, ...] = (8, 512, 4096, 32768)
BLADE_SIZE_LIMIT = 4096
"""By default, the 16-rank runs stop at this size (their 32 KB points take most of a minute)."""


def default_reps(size: int, spes: int = 8) -> int:
    """Calls per point: 10 up to 4 KB, fewer above; half as many at 16 ranks."""
    reps = 10 if size <= 4096 else 4
    return max(2, reps // 2) if spes >= BLADE_SPES else reps


def _bench(ops: Sequence[str], sizes: Sequence[int], reps: dict[int, int]) -> dict[tuple[str, int], float]:
    """The rank program: {(op, size): seconds per call} (its own mean)."""
    comm = mpi.COMM_WORLD
    p, r = comm.Get_size(), comm.Get_rank()
    big = max(sizes)
    send = mpi.alloc(big * p, dtype="u1")
    recv = mpi.alloc(big * p, dtype="u1")
    send[:] = r + 1
    out: dict[tuple[str, int], float] = {}
    for op in ops:
        for size in [0] if op == "Barrier" else sizes:
            nd = max(size // 8, 1)

            def call(op: str = op, size: int = size, nd: int = nd) -> None:
                if op == "Barrier":
                    comm.Barrier()
                elif op == "Bcast":
                    comm.Bcast([send, size, mpi.BYTE], root=0)
                elif op == "Allreduce":
                    sd, rd = send.view(np.float64), recv.view(np.float64)
                    comm.Allreduce([sd, nd, mpi.DOUBLE], [rd, nd, mpi.DOUBLE])
                elif op == "Allgather":
                    comm.Allgather([send, size, mpi.BYTE], [recv, size, mpi.BYTE])
                else:
                    comm.Alltoall([send, size, mpi.BYTE], [recv, size, mpi.BYTE])

            call()  # warm-up
            comm.Barrier()
            t0 = mpi.Wtime()
            for _ in range(reps[size]):
                call()
            out[(op, size)] = (mpi.Wtime() - t0) / reps[size]
            comm.Barrier()
    return out


def run(
    *,
    protocols: Iterable[str] = (),
    ops: Iterable[str] = (),
    spes: Iterable[int] = (),
    sizes: Iterable[int] = (),
    reps: int | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Collective latencies; one record per (protocol, op, ranks, size)."""
    machine, seed, _native, progress = EXPERIMENT.settings(settings)
    protos = check_protocols(protocols)
    ops_ = check_choices("op", ops, OPS)
    ops_ = tuple(o for o in OPS if o in ops_)
    defaults = not tuple(spes)
    spes_ = tuple(int(s) for s in spes) or SPES
    if defaults and machine.facts.spes >= BLADE_SPES:
        spes_ = (*spes_, BLADE_SPES)
    sizes_ = tuple(int(s) for s in sizes) or SIZES
    given_sizes, given_reps = bool(tuple(sizes)), reps
    for s in sizes_:
        if s < 8 or s % 8 or s > 1 << 20:
            raise UsageError(f"size {s}: a multiple of 8 bytes from 8 B to 1 MB")
    if reps is not None and reps < 1:
        raise UsageError(f"reps must be positive, not {reps}")
    points = [(proto, n) for proto in protos for n in spes_]

    def point(p: tuple[str, int]) -> list[dict[str, Any]]:
        proto, n = p
        sz = sizes_
        if n >= BLADE_SPES and not given_sizes:
            sz = tuple(s for s in sizes_ if s <= BLADE_SIZE_LIMIT)
        nreps = {s: given_reps or default_reps(s, n) for s in (0, *sz)}
        res = run_ranks(
            functools.partial(_bench, ops_, sz, nreps), n, protocol=proto, machine=machine, seed=seed
        )
        return [
            {
                "machine": res.machine.name,
                "seed": seed,
                "protocol": proto,
                "op": op,
                "spes": n,
                "size": size,
                "reps": nreps[size],
                "latency_us": max(v[(op, size)] for v in res.values) * 1e6,
            }
            for (op, size) in res.values[0]
        ]

    return measure_groups(points, point, progress)


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kumar et al. 2007 published no collective timings: nothing to compare."""
    return []


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """One table per collective: latency by ranks and size, protocols side by side."""
    out = []
    protos = protocols_in(records)
    for op in OPS:
        rs = [r for r in records if r["op"] == op]
        if not rs:
            continue
        lat = {(r["spes"], r["size"], r["protocol"]): r["latency_us"] for r in rs}
        keys = sorted({(r["spes"], r["size"]) for r in rs})
        cols = ["SPEs", "bytes per rank", *(f"{p} (us)" for p in protos)]
        if len(protos) == 2:
            cols.append("kumar / direct")
        rows = []
        for n, s in keys:
            cells = [str(n), str(s), *(f"{lat[(n, s, p)]:.2f}" if (n, s, p) in lat else "" for p in protos)]
            if len(protos) == 2 and all((n, s, p) in lat for p in protos):
                cells.append(f"{lat[(n, s, 'kumar')] / lat[(n, s, 'direct')]:.2f}x")
            rows.append(cells)
        out.append(Table(f"{EXPERIMENT.name}: {op} latency, {rs[0]['machine']}", cols, rows))
    return out


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """One panel per collective: latency against bytes per rank, a line per
    (protocol, ranks) -- the largest and smallest rank counts."""
    from matplotlib.figure import Figure

    ops = [o for o in OPS if any(r["op"] == o for r in records)]
    fig = Figure(figsize=(4.2 * max(len(ops), 1), 4.5), layout="constrained")
    axes = fig.subplots(1, max(len(ops), 1), squeeze=False)[0]
    for ax, op in zip(axes, ops, strict=False):
        rs = [r for r in records if r["op"] == op]
        counts = sorted({r["spes"] for r in rs})
        shown = sorted({counts[0], counts[-1]})
        for proto in ("kumar", "direct"):
            for n in shown:
                sel = (r for r in rs if r["protocol"] == proto and r["spes"] == n)
                pts = sorted(sel, key=lambda r: r["size"])
                if not pts:
                    continue
                st = STYLE[proto]
                ls = "-" if n == shown[-1] else ":"
                if op == "Barrier":
                    ax.bar(
                        f"{proto[0]}{n}",
                        pts[0]["latency_us"],
                        color=st["color"],
                        alpha=1.0 if n == shown[-1] else 0.5,
                        label=f"{proto}, {n} SPEs",
                    )
                else:
                    ax.plot(
                        [r["size"] for r in pts],
                        [r["latency_us"] for r in pts],
                        color=st["color"],
                        marker=st["marker"],
                        linestyle=ls,
                        markersize=4,
                        label=f"{proto}, {n} SPEs",
                    )
        if op != "Barrier":
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("bytes per rank")
        ax.set_title(op)
        ax.set_ylabel("latency (us)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(
        fig, path, "MPI collectives on the simulated Cell: kumar (Kumar et al.'s design) vs direct", dpi=110
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        PROTOCOL_OPTION,
        Option("ops", "choice", "collective", OPS, "--op", default=OPS),
        Option("spes", "ints", "rank counts", default=SPES, default_note="and 16 on a two-chip blade"),
        Option("sizes", "ints", "data per rank", default=SIZES, unit="B"),
        Option("reps", "int", "calls per point", default_note="10, 4 above 4 KB"),
    ),
)
