"""Does the mapping ranking reach steady state? (the explorer's default --transmissions)

Runs the mapping explorer on one machine at growing transmissions per SPE and
prints, for each step, the Spearman correlation of the per-mapping mean
runtimes with the next step's, the overlap of the top 10, whether the best
mapping is the same, the worst/best ratio of the means and the wall time.
With the variation mechanisms on, runs differ by design; with ``--quiet``
(all mechanisms off) the simulation is deterministic per mapping.

    python benches/mapping_steady.py [--machine ps3] [--mode pinned] [--quiet]
                                     [--counts 250,500,1000,2000,4000] [--mappings N]
                                     [--placement-per run|mapping]

Besides the ranking's stability it prints the statistics Keller and Varbanescu
2010 discuss at each count: worst/best of the averages and of single runs, the
average of all over the best, median over mean, the identity's rank.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _args import at_least  # this directory

from cellsim.messaging.explorer import explore, summary
from cellsim.messaging.simulate import Variation


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""

    def ranks(values: list[float]) -> np.ndarray:
        x = np.asarray(values)
        order = x.argsort(kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x))
        for v in np.unique(x):
            idx = x == v
            r[idx] = r[idx].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine", default="ps3")
    ap.add_argument("--mode", default="pinned")
    ap.add_argument("--packet", type=at_least(1), default=1024)
    ap.add_argument("--runs", type=at_least(1), default=3)
    ap.add_argument("--quiet", action="store_true", help="variation mechanisms off")
    ap.add_argument("--counts", default="250,500,1000,2000,4000")
    ap.add_argument("--mappings", type=at_least(1), default=None, help="a seeded sample of N mappings")
    ap.add_argument("--placement-per", default="run", choices=("run", "mapping"))
    ap.add_argument("--workers", type=at_least(1), default=None)
    a = ap.parse_args()
    var = Variation.off() if a.quiet else Variation()
    prev = None
    print(f"{a.machine} {a.mode} {a.packet} B, {a.runs} runs, variation {'off' if a.quiet else 'on'}")
    print(
        "transmissions  wall_s  worst/best  single  random  med/mean  identity  best        "
        "rho_vs_prev  top10_overlap  same_best"
    )
    for n in [int(x) for x in a.counts.split(",")]:
        t0 = time.perf_counter()
        recs = explore(
            a.machine,
            mode=a.mode,
            packet=a.packet,
            runs=a.runs,
            transmissions=n,
            variation=var,
            mappings=a.mappings,
            placement_per=a.placement_per,
            workers=a.workers,
        )
        wall = time.perf_counter() - t0
        s = summary(recs)
        mean = {r["mapping"]: r["mean_ns"] for r in recs}
        top = [r["mapping"] for r in recs[:10]]
        rho = overlap = same = ""
        if prev is not None:
            keys = sorted(mean)
            rho = f"{spearman([prev[0][k] for k in keys], [mean[k] for k in keys]):.3f}"
            overlap = str(len(set(top) & set(prev[1])))
            same = str(prev[1][0] == top[0])
        print(
            f"{n:13d}  {wall:6.1f}  {s['worst_over_best_mean']:10.3f}  {s['worst_over_best_single']:6.3f}  "
            f"{s['mean_of_all_over_best']:6.3f}  {s['median_over_mean']:8.3f}  "
            f"{s.get('identity_rank', '-')!s:>8s}  "
            f"{s['best']:10s}  {rho:>11s}  {overlap:>13s}  {same:>9s}"
        )
        prev = (mean, top)


if __name__ == "__main__":
    main()
