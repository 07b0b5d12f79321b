"""What makes one run of Keller and Varbanescu 2010's ring differ from the next in the model?

The PS3's pinned ring (all 120 mappings, 3 runs) with the run-to-run variation mechanisms
switched on one at a time: the worst/best ratios of the means and of single runs, how far the
single runs stray from their mapping's average, and the rank correlation of run 0's and run 1's
rankings. Nothing is fitted: it measures.

    python benches/mapping_runs_vary.py [--transmissions 1000] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from _args import at_least  # this directory

from cellsim.experiments import mapping

ONE_AT_A_TIME: dict[str, dict[str, Any]] = {
    "all (the default)": {},
    "arbitration phase only": {"no_os_noise": True, "no_hypervisor": True, "no_skew": True},
    "OS mailbox-status reads only": {"no_phase": True, "no_hypervisor": True, "no_skew": True},
    "hypervisor SPE's traffic only": {"no_phase": True, "no_os_noise": True, "no_skew": True},
    "none": {"quiet": True},
}


def ranks(x: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(x))


def spread(runs: np.ndarray) -> dict[str, float]:
    """The statistics of a (mappings x runs) array of runtimes."""
    mean = runs.mean(axis=1)
    return {
        "worst_best_mean": float(mean.max() / mean.min()),
        "worst_best_single": float(runs.max() / runs.min()),
        "stray_pct": float(np.mean(np.abs(runs - mean[:, None]) / mean[:, None]) * 100),
        "rho_runs": float(np.corrcoef(ranks(runs[:, 0]), ranks(runs[:, 1]))[0, 1]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transmissions", type=at_least(1), default=1000)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides")
    a = ap.parse_args()
    print("| mechanisms on | worst/best means | single runs | stray | rho(run 0, run 1) |")
    for name, flags in ONE_AT_A_TIME.items():
        recs = mapping.run(
            machine="ps3",
            mode="pinned",
            transmissions=a.transmissions,
            runs=3,
            workers=1,
            out=None,
            overrides=tuple(a.overrides),
            **flags,
        )
        s = spread(np.array([r["runs_ns"] for r in recs]))
        print(
            f"| {name} | {s['worst_best_mean']:.3f} | {s['worst_best_single']:.3f} | {s['stray_pct']:.2f}% "
            f"| {s['rho_runs']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
