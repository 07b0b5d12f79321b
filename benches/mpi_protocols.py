"""MPI on the simulated Cell: both protocols side by side, and what the MPI
experiments cost in host time.

Prints (1) the simulated ping-pong latency (half a round trip) and bandwidth
of ``kumar`` (Kumar et al. 2007's design) and ``direct`` (cellsim's default) at 0 B,
2 KB, 64 KB and 1 MB, data in main memory; (2) the matrix-vector GFLOP/s at
n = 512 and 1024 on 8 SPEs; (3) collective latencies on 8 SPEs; (4) the wall
time of ``mpi-pingpong`` and ``mpi-matvec`` at their defaults (and, with
``--collectives``, of ``mpi-collectives``).

    python benches/mpi_protocols.py [--machine qs20] [--seed 0] [--collectives] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from cellsim.experiments import mpi_collectives, mpi_matvec, mpi_pingpong

SIZES = (0, 2048, 65536, 1 << 20)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--machine", default="qs20")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--collectives", action="store_true", help="also time mpi-collectives at its defaults")
    ap.add_argument("--json", help="write every number to this file")
    args = ap.parse_args()
    out: dict[str, Any] = {"machine": args.machine, "seed": args.seed}

    pp = mpi_pingpong.run(machine=args.machine, seed=args.seed, sizes=SIZES)
    by = {(r["protocol"], r["size"]): r for r in pp}
    print(f"ping-pong, data in main memory ({args.machine}; half round trip, decrementer at 14.318 MHz)")
    print(f"{'size':>8}  {'kumar us':>9} {'direct us':>9} {'kumar GB/s':>10} {'direct GB/s':>11}  speed-up")
    for s in SIZES:
        k, d = by[("kumar", s)], by[("direct", s)]
        print(
            f"{s:>8}  {k['latency_us']:9.3f} {d['latency_us']:9.3f} {k['bandwidth_gbs']:10.2f} "
            f"{d['bandwidth_gbs']:11.2f}  {k['latency_us'] / d['latency_us']:.2f}x"
        )
    out["pingpong"] = pp

    mv = mpi_matvec.run(machine=args.machine, seed=args.seed)
    print("\nmatrix-vector product, 8 SPEs, 10 products, scalar DP (GFLOP/s)")
    for n in mpi_matvec.SIZES:
        g = {r["protocol"]: r["gflops"] for r in mv if r["n"] == n}
        print(f"  n = {n:>4}:  kumar {g['kumar']:.3f}   direct {g['direct']:.3f}")
    out["matvec"] = mv

    co = mpi_collectives.run(machine=args.machine, seed=args.seed, spes=[8], sizes=[8, 4096, 32768])
    print("\ncollectives on 8 SPEs (us per call; bytes per rank)")
    lat = {(r["op"], r["size"], r["protocol"]): r["latency_us"] for r in co}
    for op, size in sorted(
        {(r["op"], r["size"]) for r in co}, key=lambda k: (mpi_collectives.OPS.index(k[0]), k[1])
    ):
        k, d = lat[(op, size, "kumar")], lat[(op, size, "direct")]
        print(f"  {op:<10} {size:>6} B   kumar {k:8.2f}   direct {d:8.2f}   {k / d:.2f}x")
    out["collectives_8"] = co

    walls = {}
    for name, mod in (("mpi-pingpong", mpi_pingpong), ("mpi-matvec", mpi_matvec)) + (
        (("mpi-collectives", mpi_collectives),) if args.collectives else ()
    ):
        t0 = time.perf_counter()
        mod.run(machine=args.machine, seed=args.seed)
        walls[name] = time.perf_counter() - t0
    print("\nwall time of the experiments at their defaults (both protocols)")
    for name, w in walls.items():
        print(f"  cellsim run {name:<16} {w:6.1f} s")
    out["wall_s"] = walls
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
