"""The issue-8 performance target: all 5040 mappings of the 8-SPE ring, 10^4
transmissions per SPE, one run each, on this machine's cores.

    python benches/mapping_5040.py                  # the whole sweep
    python benches/mapping_5040.py --mappings 64    # a sample, and the projected total

Prints the wall time, runs per second, the engine events per run (what bounds
it) and, for a sample, the projection to all 5040 mappings.
"""

from __future__ import annotations

import argparse
import os
import time

from cellsim.messaging.explorer import all_mappings, make_points, point_key, run_point, settings_of
from cellsim.messaging.patterns import ring_pattern
from cellsim.messaging.simulate import DEFAULTS
from cellsim.sweep import run_sweep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine", default="qs22")
    ap.add_argument("--transmissions", type=int, default=10_000)
    ap.add_argument("--mappings", type=int, default=0, help="run only the first N mappings (0: all)")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    a = ap.parse_args()
    maps = all_mappings(8)
    total = len(maps)
    if a.mappings:
        maps = maps[:: max(total // a.mappings, 1)][: a.mappings]
    pts = make_points(
        a.machine,
        ring_pattern(8),
        maps,
        runs=1,
        count=a.transmissions,
        mode="pinned",
        seed=0,
        variation=DEFAULTS,
        packet=1024,
        nbuf=2,
        poll_cycles=200,
    )
    t0 = time.perf_counter()
    run_sweep(run_point, pts, key=point_key, workers=a.workers, settings=settings_of(pts))
    wall = time.perf_counter() - t0
    print(
        f"{len(maps)} mappings x {a.transmissions} transmissions per SPE on {a.machine}, {a.workers} workers"
    )
    print(
        f"wall {wall:.1f} s, {len(maps) / wall:.2f} runs/s, {wall * a.workers / len(maps):.3f} core-s per run"
    )
    if len(maps) < total:
        print(f"projected for all {total} mappings: {wall * total / len(maps) / 60:.1f} min")


if __name__ == "__main__":
    main()
