"""Keller and Varbanescu 2010's qualitative statements, checked on explorer results.

Give the JSON files ``cellsim run mapping --json FILE`` wrote (one per
setting); for each it prints what the statements are about: the worst/best
ratios, the best mapping's rank in each run, the top two and their ranks in
each run ("on nearby ranks in the individual runs" when pinned), how far the
single runs stray from the average (the pinned curves are "closer to the
average"), median over mean ("mostly a straight line"), the identity's rank
and the intuitive mappings' ranks ("not among the top 10" on the blade).

    python benches/mapping_statements.py ps3_default.json ps3_pinned.json ...
"""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any

from cellsim.messaging.explorer import summary


def run_ranks(records: list[dict[str, Any]], mapping: str) -> list[int]:
    """The rank of ``mapping`` in each single run."""
    out = []
    for i in range(len(records[0]["runs_ns"])):

        def in_run(r: dict[str, Any], i: int = i) -> tuple[float, str]:
            return (r["runs_ns"][i], r["mapping"])

        order = sorted(records, key=in_run)
        out.append(1 + next(n for n, r in enumerate(order) if r["mapping"] == mapping))
    return out


def describe(path: str) -> None:
    with open(path) as f:
        recs = json.load(f)
    s = summary(recs)
    r0 = recs[0]
    stray = statistics.fmean(abs(x - r["mean_ns"]) / r["mean_ns"] for r in recs for x in r["runs_ns"])
    top2 = [r["mapping"] for r in recs[:2]]
    print(f"{path}: {r0['machine']} {r0['mode']} {r0['packet']} B, {len(recs)} mappings, {s['runs']} runs")
    print(
        f"  worst/best mean {s['worst_over_best_mean']:.3f}, single {s['worst_over_best_single']:.3f}, "
        f"random/best {s['mean_of_all_over_best']:.3f}, median/mean {s['median_over_mean']:.4f}"
    )
    print(f"  single runs stray from the average by {100 * stray:.2f}% on average")
    for m in top2:
        print(f"  top {top2.index(m) + 1} {m}: ranks in the runs {run_ranks(recs, m)}")
    for label in ("identity", "intuitive1", "intuitive2"):
        if f"{label}_rank" in s:
            print(
                f"  {label} {s[label]}: rank {s[f'{label}_rank']} of {len(recs)}, "
                f"x{s[f'{label}_over_best']:.3f} the best"
            )


if __name__ == "__main__":
    for p in sys.argv[1:]:
        describe(p)
