"""OSU-style MPI micro-benchmarks on the simulated Cell, and what they cost
in host time.

The benchmarks (after the OSU Micro-Benchmarks: ``osu_latency``,
``osu_bw``, ``osu_alltoall``, ``osu_barrier``) are an ordinary mpi4py
program: this file, run under ``cellsim mpirun``. Sizes go up to 1 MB;
latency is half a round trip between ranks 0 and 1, bandwidth a window of
64 nonblocking sends from rank 0 to rank 1 closed by an acknowledgement,
alltoall and barrier the mean time of a call over all the ranks. Every
time is simulated.

Iterations per size (up to 8 KB / above): latency 200 / 20 round trips,
bandwidth 20 / 3 windows, alltoall 20 / 2 calls; barrier 500 calls;
``--quick`` takes a tenth. The simulation is deterministic: no warm-up.

Run as ``python benches/mpi_osu.py``, it starts the program on ``--ranks``
SPEs and reports, besides the tables, the host time the run took and the
simulated messages (sends of the protocol, collectives' included) per
second of host time: the speed of the host-side path of a message.

    python benches/mpi_osu.py [--ranks 8] [--protocol direct] [--max-size 1048576] [--quick]
    cellsim mpirun -n 8 benches/mpi_osu.py [--max-size N] [--quick]     (the tables only)
"""

from __future__ import annotations

import argparse
import io
import itertools
import sys
import time
from typing import Any

import numpy as np


def sizes(top: int, first: int = 0) -> list[int]:
    out = [first] if first == 0 else []
    s = 1
    while s <= top:
        out.append(s)
        s *= 2
    return out


def iterations(size: int, quick: bool, small: int, large: int) -> int:
    n = small if size <= 8192 else large
    return max(1, n // 10) if quick else n


def latency(MPI: Any, top: int, quick: bool) -> list[tuple[int, float]]:
    comm = MPI.COMM_WORLD
    rank = comm.rank
    out = []
    for size in sizes(top, 0):
        buf = np.zeros(size, np.uint8)
        n = iterations(size, quick, 200, 20)
        comm.Barrier()
        t0 = MPI.Wtime()
        for _ in range(n):
            if rank == 0:
                comm.Send(buf, dest=1, tag=1)
                comm.Recv(buf, source=1, tag=1)
            elif rank == 1:
                comm.Recv(buf, source=0, tag=1)
                comm.Send(buf, dest=0, tag=1)
        out.append((size, (MPI.Wtime() - t0) * 1e6 / (2 * n)))
    return out


def bandwidth(MPI: Any, top: int, quick: bool, window: int = 64) -> list[tuple[int, float]]:
    comm = MPI.COMM_WORLD
    rank = comm.rank
    out = []
    ack = np.zeros(1, np.uint8)
    for size in sizes(top, 1):
        buf = np.zeros(size, np.uint8)  # one buffer for the whole window, as in osu_bw
        n = iterations(size, quick, 20, 3)
        comm.Barrier()
        t0 = MPI.Wtime()
        for _ in range(n):
            if rank == 0:
                MPI.Request.Waitall([comm.Isend(buf, dest=1, tag=2) for _ in range(window)])
                comm.Recv(ack, source=1, tag=3)
            elif rank == 1:
                MPI.Request.Waitall([comm.Irecv(buf, source=0, tag=2) for _ in range(window)])
                comm.Send(ack, dest=0, tag=3)
        t = MPI.Wtime() - t0
        out.append((size, size * window * n / t / 1e6 if rank == 0 else 0.0))
    return out


def alltoall(MPI: Any, top: int, quick: bool) -> list[tuple[int, float]]:
    comm = MPI.COMM_WORLD
    p = comm.size
    out = []
    for size in sizes(top, 1):
        send = np.ones(size * p, np.uint8)
        recv = np.zeros(size * p, np.uint8)
        n = iterations(size, quick, 20, 2)
        comm.Barrier()
        t0 = MPI.Wtime()
        for _ in range(n):
            comm.Alltoall(send, recv)
        t = np.array([(MPI.Wtime() - t0) * 1e6 / n])
        mean = np.zeros(1)
        comm.Allreduce(t, mean)
        out.append((size, float(mean[0]) / p))
    return out


def barrier(MPI: Any, quick: bool) -> float:
    comm = MPI.COMM_WORLD
    n = 50 if quick else 500
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(n):
        comm.Barrier()
    t = np.array([(MPI.Wtime() - t0) * 1e6 / n])
    mean = np.zeros(1)
    comm.Allreduce(t, mean)
    return float(mean[0]) / comm.size


BENCHMARKS = ("latency", "bandwidth", "alltoall", "barrier")


def bench(top: int, quick: bool, only: list[str]) -> None:
    """The benchmarks, in every rank; rank 0 prints the tables."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    host = [time.perf_counter()]

    def lap() -> None:
        host.append(time.perf_counter())

    pairs = comm.size >= 2
    lat = latency(MPI, top, quick) if pairs and "latency" in only else []
    lap()
    bw = bandwidth(MPI, top, quick) if pairs and "bandwidth" in only else []
    lap()
    a2a = alltoall(MPI, top, quick) if "alltoall" in only else []
    lap()
    bar = barrier(MPI, quick) if "barrier" in only else 0.0
    lap()
    if comm.rank:
        return
    print(f"# OSU-style MPI benchmarks, {comm.size} ranks ({MPI.Get_library_version()}), simulated times")
    print(f"# {'size':>8} {'latency us':>11} {'bandwidth MB/s':>15} {'alltoall us':>12}")
    rows = {s: [f"{v:.3f}"] for s, v in lat}
    for s, v in bw:
        rows.setdefault(s, ["-"]).append(f"{v:.1f}")
    for s, v in a2a:
        r = rows.setdefault(s, ["-"])
        r += ["-"] * (2 - len(r)) + [f"{v:.3f}"]
    for s in sorted(rows):
        r = rows[s] + ["-"] * (3 - len(rows[s]))
        print(f"  {s:>8} {r[0]:>11} {r[1]:>15} {r[2]:>12}")
    print(f"# barrier: {bar:.3f} us")
    took = [b - a for a, b in itertools.pairwise(host)]
    laps = zip(BENCHMARKS, took, strict=True)
    print("# host seconds: " + ", ".join(f"{k} {t:.1f}" for k, t in laps if k in only))


def drive(args: argparse.Namespace) -> None:
    """Runs the program under cellsim's mpirun and measures the host side."""
    from cellsim.mpi import _protocol, mpirun

    sent = [0]
    queue_send = _protocol.Protocol.queue_send

    def counted(self: Any, req: Any) -> Any:
        sent[0] += 1
        return queue_send(self, req)

    _protocol.Protocol.queue_send = counted  # type: ignore[method-assign]
    out = io.StringIO()
    flags = ["--max-size", str(args.max_size), "--only", *args.only] + (["--quick"] if args.quick else [])
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        res = mpirun(__file__, args.ranks, protocol=args.protocol, args=flags, stdout=out, prefix=False)
    finally:
        _protocol.Protocol.queue_send = queue_send  # type: ignore[method-assign]
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    print(out.getvalue(), end="")
    print(
        f"# host: {wall:.1f} s ({cpu:.1f} s of CPU) for {sent[0]} simulated messages ({res.ns / 1e6:.3f} ms "
        f"simulated): {sent[0] / wall:,.0f} messages per host second ({sent[0] / cpu:,.0f} per CPU second)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--protocol", default="direct", choices=["direct", "kumar"])
    ap.add_argument("--max-size", type=int, default=1 << 20)
    ap.add_argument("--quick", action="store_true", help="a tenth of the iterations")
    ap.add_argument(
        "--only", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS), help="some benchmarks only"
    )
    args = ap.parse_args()
    if "mpi4py" in sys.modules:  # under mpirun: the stand-in is there
        bench(args.max_size, args.quick, args.only)
    else:
        drive(args)


if __name__ == "__main__":
    main()
