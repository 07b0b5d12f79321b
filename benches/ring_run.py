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

from cellsim.machine import Machine
from cellsim.messaging.explorer import all_mappings, make_points, run_point
from cellsim.messaging.patterns import ring_pattern
from cellsim.messaging.simulate import DEFAULTS


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    maps = all_mappings(8)
    pts = make_points(
        "qs22",
        ring_pattern(8),
        maps[:: len(maps) // 32][:32],
        runs=1,
        count=count,
        mode="pinned",
        seed=0,
        variation=DEFAULTS,
        packet=1024,
        nbuf=2,
        poll_cycles=200,
    )
    seen: dict[str, int] = {}
    run = Machine.run

    def counted(self: Machine, *args: Any, **kwargs: Any) -> Any:
        result = run(self, *args, **kwargs)
        seen["events"] = int(result.stats["events"])
        return result

    Machine.run = counted  # type: ignore[method-assign]
    t0 = time.perf_counter()
    rec: dict[str, Any] = {}
    for i in range(runs):
        rec = run_point(pts[i % len(pts)])
    per_run = (time.perf_counter() - t0) / runs
    Machine.run = run  # type: ignore[method-assign]
    print(
        f"runtime {rec['runtime_ns']} ns, {per_run:.3f} s per run, "
        f"{seen['events']:,} events ({seen['events'] / (8 * count):.1f} per transmission)"
    )


if __name__ == "__main__":
    main()
