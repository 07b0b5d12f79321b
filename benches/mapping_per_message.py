"""What does a message of Keller and Varbanescu 2010's ring cost, and what makes the mapping matter?

Part 1, the traffic of one run (``--quiet``: no variation mechanism): per
transmission, the time, the bus requests, the polls of the notification and
acknowledgement rows in main memory (one get each, MIC reads), the 16-byte
notification and acknowledgement puts (MIC writes), how many polls found
something new, the command bus's and the busiest ring segment's utilisation.

Part 2, the mapping sensitivity (worst/best of the averages and of single
runs, the identity's rank) of the explorer on ``--machine`` with one
mechanism changed at a time: the baseline, the memory controller's priority
at the data arbiter off (``eib.mic_priority=false``, an engine switch that
only isolates the mechanism), the library's polling interval, the packet size
and the unidirectional ring. Nothing here is fitted: it measures.

    python benches/mapping_per_message.py [--machine ps3] [--transmissions 1000]
                                          [--mappings N] [--skip-sweeps]
"""

from __future__ import annotations

import argparse
import importlib
import time
from typing import Any

from _args import at_least  # this directory

from cellsim.messaging import ring_pattern, simulate
from cellsim.messaging.explorer import explore, summary
from cellsim.messaging.simulate import Variation

CB_GETS = 5  # each task fetches its 640-byte control block: five 128-byte reads
QUIET = Variation.off()
# the module (the package exports the function of the same name)
sim: Any = importlib.import_module("cellsim.messaging.simulate")


def traffic(machine: str, placement: list[int] | None, count: int, k: int) -> dict[str, Any]:
    """Per-transmission traffic of the identity mapping (quiet)."""
    r = simulate(machine, ring_pattern(k), tuple(range(k)), count=count, variation=QUIET, placement=placement)
    sends = k * count
    polls = r["mic_reads"] - CB_GETS * k
    puts = r["mic_writes"] - k  # less the done flags
    busiest = max(s["utilisation"] for s in r["segments"])
    return {
        "ns": r["runtime_ns"] / count,
        "requests": r["command_bus_requests"] / sends,
        "polls": polls / sends,
        "puts": puts / sends,
        "useful": 2 * sends / max(polls, 1),  # a notification and an acknowledgement per send
        "cmd_bus": r["command_bus_utilisation"],
        "busiest": busiest,
        "bif": sum(r.get("bif_bytes", [0])) / sends,
    }


class _Overrides:
    """Adds engine overrides to every machine the ring runs on (forked workers inherit it)."""

    def __init__(self, extra: list[str]) -> None:
        self.extra = extra
        self.machine = sim.Machine

    def __enter__(self) -> None:
        extra, machine = self.extra, self.machine

        def patched(*a: Any, overrides: list[str] | None = None, **kw: Any) -> Any:
            return machine(*a, overrides=[*(overrides or []), *extra], **kw)

        sim.Machine = patched

    def __exit__(self, *exc: object) -> None:
        sim.Machine = self.machine


def sweep(machine: str, n: int, mappings: int | None, extra: list[str], **kw: Any) -> dict[str, Any]:
    with _Overrides(extra):
        recs = explore(machine, mode="pinned", transmissions=n, mappings=mappings, workers=2, **kw)
    s = summary(recs)
    return {
        "mean": s["worst_over_best_mean"],
        "single": s["worst_over_best_single"],
        "random": s["mean_of_all_over_best"],
        "identity": s.get("identity_rank"),
        "of": s["mappings"],
        "best_us": s["best_mean_ns"] / 1e3,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine", default="ps3")
    ap.add_argument("--transmissions", type=at_least(1), default=1000)
    ap.add_argument("--mappings", type=at_least(1), default=None)
    ap.add_argument("--skip-sweeps", action="store_true")
    a = ap.parse_args()

    print("per transmission (ring, identity, 1 KB, quiet, 2000 transmissions per SPE):")
    print("machine / contexts            ns  requests  polls   puts  useful  cmd-bus  busiest  BIF B")
    cases = [("ps3", None, 6), ("qs20-1chip", None, 8), ("qs22", list(range(16)), 8)]
    halves = [0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15]
    cases += [("qs22", halves, 8), ("qs22", list(range(16)), 16)]
    for machine, pl, k in cases:
        t = traffic(machine, pl, 2000, k)
        where = "one chip" if pl is None else "4+4 chips" if pl == halves or k > 8 else "chip 0"
        print(
            f"{machine:10s} {where:9s} k={k:<2d} {t['ns']:7.1f} {t['requests']:9.2f} {t['polls']:6.2f} "
            f"{t['puts']:6.2f} {t['useful']:7.2f} {100 * t['cmd_bus']:7.1f}% {100 * t['busiest']:7.1f}% "
            f"{t['bif']:6.0f}"
        )
    if a.skip_sweeps:
        return
    print(f"\nmapping sensitivity, {a.machine} pinned, {a.transmissions} transmissions, 3 runs:")
    print("variant                       worst/best mean  single  random  identity rank  best (us)  wall s")
    variants: list[tuple[str, list[str], dict[str, Any]]] = [
        ("baseline", [], {}),
        ("MIC priority off", ["eib.mic_priority=false"], {}),
        ("poll every 50 cycles", [], {"poll_cycles": 50}),
        ("poll every 800 cycles", [], {"poll_cycles": 800}),
        ("512 B packets", [], {"packet": 512}),
        ("2048 B packets", [], {"packet": 2048}),
        ("unidirectional", [], {"unidirectional": True}),
        ("quiet (no variation)", [], {"variation": QUIET}),
    ]
    for name, extra, kw in variants:
        t0 = time.perf_counter()
        s = sweep(a.machine, a.transmissions, a.mappings, extra, **kw)
        print(
            f"{name:28s} {s['mean']:16.3f} {s['single']:7.3f} {s['random']:7.3f} "
            f"{s['identity']!s:>8s} of {s['of']:<4d} {s['best_us']:9.1f} {time.perf_counter() - t0:7.1f}"
        )


if __name__ == "__main__":
    main()
