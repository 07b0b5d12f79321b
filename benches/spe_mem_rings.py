"""Do the four rings saturate when 8 SPEs stream to memory?

Jiménez-González et al. 2007 explain Fig 9's drop at 8 SPEs by "saturation of the 4 EIB rings".
This runs the figure's streams (blade21, 2 KB elements, 4 and 8 SPEs, get, put and copy, the
machine's page placement) and prints, beside the aggregate bandwidth, how busy the busiest ring
segment was and what the memory's two ports (the MIC's and the IOIF's, which carries the other
chip's bank) sent and received. A segment carries 16 bytes per bus cycle (16.8 GB/s at 2.1 GHz).
Nothing is fitted.

    python benches/spe_mem_rings.py [--mb 4]
"""

from __future__ import annotations

import argparse

from _args import at_least  # this directory

from cellsim.experiments._contention import memory_load, memory_region, run_kernels
from cellsim.experiments.spe_mem import region_span

MB = 1 << 20
MACHINE = "blade21"
# Chip 0's ramps (docs/architecture.md, topology): the MIC's and the IOIF0's (the BIF to chip 1).
MIC, IOIF = 11, 6


def row(op: str, spes: int, mb: int) -> list[str]:
    """One line: the aggregate, the busiest segment's share of the run, the ports' GB/s."""
    total = mb * MB
    span = region_span(MACHINE, total, spes * (2 if op == "copy" else 1))

    def setup(m, op=op, spes=spes, span=span):  # type: ignore[no-untyped-def]
        return [memory_load(s, memory_region(m, op, span=span, total=total, size=2048)) for s in range(spes)]

    res = run_kernels(MACHINE, 0, [], native=True, setup=setup)
    st = res.stats
    busy = [b for ring in st["segment_busy"] for b in ring]
    ns = st["ns"]
    ports = [
        st["ramp_sent"][MIC] / ns,
        st["ramp_received"][MIC] / ns,
        st["ramp_sent"][IOIF] / ns,
        st["ramp_received"][IOIF] / ns,
    ]
    return [
        op,
        str(spes),
        f"{res.aggregate_gbs:.2f}",
        f"{max(busy) / st['cycles']:.0%}",
        f"{sum(busy) / len(busy) / st['cycles']:.0%}",
        *(f"{p:.2f}" for p in ports),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=at_least(1), default=4, help="MB per SPE and direction (default 4)")
    args = ap.parse_args()
    head = ["op", "SPEs", "GB/s", "busiest segment", "mean segment"]
    head += ["MIC out", "MIC in", "IOIF out", "IOIF in"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for op in ("get", "put", "copy"):
        for spes in (4, 8):
            print("| " + " | ".join(row(op, spes, args.mb)) + " |")


if __name__ == "__main__":
    main()
