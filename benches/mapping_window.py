"""Can a short run's steady rate stand in for a long run's ranking? (Keller and Varbanescu 2010)

Runs the ps3 explorer (120 mappings, 3 runs, seed 0) at several transmission
counts and compares rankings (Spearman's rho): each count's total runtime
against the 10^4 total, and the rate over a window of transmissions (the
difference of two runs' runtimes: the same seed runs the same first
transmissions) against the 10^4 total and against the rate of transmissions
2000-10^4.

    python benches/mapping_window.py [--mode pinned|default]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cellsim.experiments import mapping

COUNTS = (500, 1000, 1500, 2000, 10_000)


def runs_by_mapping(mode: str, n: int) -> dict[str, np.ndarray]:
    t = time.perf_counter()
    recs = mapping.run(machine="ps3", out=None, mode=mode, transmissions=n)
    print(f"{n:>6} transmissions: {time.perf_counter() - t:.0f} s", flush=True)
    return {r["mapping"]: np.array(r["runs_ns"]) for r in recs}


def rho(a: dict[str, float], b: dict[str, float]) -> float:
    keys = sorted(a)
    x = np.argsort(np.argsort([a[k] for k in keys]))
    y = np.argsort(np.argsort([b[k] for k in keys]))
    return float(np.corrcoef(x, y)[0, 1])


def rate(runs: dict[int, dict[str, np.ndarray]], lo: int, hi: int) -> dict[str, float]:
    return {k: float((runs[hi][k] - runs[lo][k]).mean()) / (hi - lo) for k in runs[hi]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="pinned", choices=("pinned", "default"))
    mode = ap.parse_args().mode
    runs = {n: runs_by_mapping(mode, n) for n in COUNTS}
    total = {k: float(v.mean()) for k, v in runs[10_000].items()}
    late = rate(runs, 2000, 10_000)
    for n in (500, 1000, 2000):
        print(
            f"total at {n} vs total at 10^4: rho {rho({k: v.mean() for k, v in runs[n].items()}, total):.3f}"
        )
    for lo, hi in ((500, 1000), (500, 1500), (1000, 2000)):
        w = rate(runs, lo, hi)
        print(
            f"rate {lo}-{hi}: vs total at 10^4 rho {rho(w, total):.3f}, "
            f"vs rate 2000-10^4 rho {rho(w, late):.3f}"
        )
    print(f"rate 2000-10^4 vs total at 10^4: rho {rho(late, total):.3f}")


if __name__ == "__main__":
    main()
