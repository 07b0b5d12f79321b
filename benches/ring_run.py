"""One run of the ring of benches/mapping_5040.py (qs22, 8 tasks, 1 KB packets), for profilers.

    python benches/ring_run.py [TRANSMISSIONS] [RUNS]
    valgrind --tool=callgrind --dump-instr=no --toggle-collect='*Machine::advance*' \\
        python benches/ring_run.py 1000

Runs the sample's first RUNS mappings one after the other in this process and
prints the last one's runtime (simulated ns: the same before and after any
change that must not change results), the host seconds per run, and the
engine events of the last run. Under callgrind, the toggle counts only the
engine's event loop (not Python's start-up).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from mapping_5040 import counting_events, ring_points  # this directory

from cellsim.messaging.explorer import all_mappings, run_point


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    maps = all_mappings(8)
    pts = ring_points("qs22", maps[:: len(maps) // 32][:32], count)
    rec: dict[str, Any] = {}
    with counting_events() as seen:
        t0 = time.perf_counter()
        for i in range(runs):
            rec = run_point(pts[i % len(pts)])
        per_run = (time.perf_counter() - t0) / runs
    print(
        f"runtime {rec['runtime_ns']} ns, {per_run:.3f} s per run, "
        f"{seen['events']:,} events ({seen['events'] / (8 * count):.1f} per transmission)"
    )


if __name__ == "__main__":
    main()
