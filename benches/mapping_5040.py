"""The issue-8 performance target: all 5040 mappings of the 8-SPE ring, 10^4
transmissions per SPE, one run each, on this machine's cores.

    python benches/mapping_5040.py                  # the whole sweep
    python benches/mapping_5040.py --mappings 64    # a sample, and the projected total
    python benches/mapping_5040.py --cluster tcp://host:8786 --workers 32   # on a Dask cluster of 32 cores

Prints the wall time, runs per second, the engine events of one run (what
bounds it: one more run of the first mapping, in this process), for a sample
the projection to all 5040 mappings, and the cost of one mapping at the
paper's 10^7 transmissions per SPE (projected linearly: the ring's rounds repeat).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from _args import at_least  # this directory

from cellsim._engine import BUILD
from cellsim.exceptions import UsageError
from cellsim.machine import Machine
from cellsim.messaging.explorer import all_mappings, make_points, point_key, run_point, settings_of
from cellsim.messaging.patterns import ring_pattern
from cellsim.messaging.simulate import DEFAULTS
from cellsim.sweep import run_sweep

PAPER_TRANSMISSIONS = 10**7


@contextlib.contextmanager
def counting_events() -> Iterator[dict[str, int]]:
    """Within: ``seen["events"]`` is the engine events of the last run (read from its statistics)."""
    seen: dict[str, int] = {}
    run = Machine.run

    def counted(self: Machine, *args: Any, **kwargs: Any) -> Any:
        result = run(self, *args, **kwargs)
        seen["events"] = int(result.stats["events"])
        return result

    Machine.run = counted  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Machine.run = run  # type: ignore[method-assign]


def events_of_one_run(point: dict[str, Any]) -> int:
    """Engine events of one run of `point`."""
    with counting_events() as seen:
        run_point(point)
    return seen["events"]


def ring_points(machine: str, maps: list[Any], transmissions: int) -> list[dict[str, Any]]:
    """One run of each mapping of the 8-task ring: pinned, 1 KB packets, two buffers, seed 0."""
    return make_points(
        machine,
        ring_pattern(8),
        maps,
        runs=1,
        count=transmissions,
        mode="pinned",
        seed=0,
        variation=DEFAULTS,
        packet=1024,
        nbuf=2,
        poll_cycles=200,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine", default="qs22")
    ap.add_argument("--transmissions", type=at_least(1), default=10_000)
    ap.add_argument("--mappings", type=at_least(0), default=0, help="run only the first N mappings (0: all)")
    ap.add_argument("--workers", type=at_least(1), default=os.cpu_count())
    ap.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="a Dask scheduler address: run there instead of on local workers (--workers: its cores)",
    )
    a = ap.parse_args()
    maps = all_mappings(8)
    total = len(maps)
    if a.mappings:
        maps = maps[:: max(total // a.mappings, 1)][: a.mappings]
    pts = ring_points(a.machine, maps, a.transmissions)
    t0 = time.perf_counter()
    try:
        settings = settings_of(pts)
        run_sweep(run_point, pts, key=point_key, workers=a.workers, cluster=a.cluster, settings=settings)
    except UsageError as e:  # a scheduler that cannot be reached: one line, no traceback
        sys.exit(f"error: {e}")
    wall = time.perf_counter() - t0
    print(
        f"{len(maps)} mappings x {a.transmissions} transmissions per SPE on {a.machine}, {a.workers} workers"
        f" (engine build: {BUILD})"
    )
    print(
        f"wall {wall:.1f} s, {len(maps) / wall:.2f} runs/s, {wall * a.workers / len(maps):.3f} core-s per run"
    )
    if len(maps) < total:
        print(f"projected for all {total} mappings: {wall * total / len(maps) / 60:.1f} min")
    per_run = wall * a.workers / len(maps)
    paper = per_run * PAPER_TRANSMISSIONS / a.transmissions
    print(
        f"one mapping at {PAPER_TRANSMISSIONS:.0e} transmissions per SPE: "
        f"{paper / 60:.1f} core-min (projected)"
    )
    events = events_of_one_run(pts[0])
    print(f"engine events of one run: {events:,} ({events / (8 * a.transmissions):.1f} per transmission)")


if __name__ == "__main__":
    main()
