"""Does noise make the runs of Keller and Varbanescu 2010's pinned ring agree?

A deterministic machine settles into the periodic orbit its first cycles chose: in the model a
few cycles of difference at the start make a pinned run of a mapping 3-4% faster or slower for
the whole run (docs/messaging.md, "What makes one run differ from the next"). Two kinds of noise
that keep a run from settling, each at several strengths, on the PS3 (pinned, 1 KB, all 120
mappings, 3 runs): the operating system's mailbox-status reads more often (software), and each
DRAM read's latency drawn around the calibrated one (`mic.latency_noise`). For each: the
worst/best of the mappings' means, how far single runs stray from their mapping's mean, the rank
correlation between runs (mean over the three pairs), and the worst rank in any run of the two
best mappings (% of the mappings; Keller and Varbanescu: "on nearby ranks"). Nothing is fitted.

    python benches/mapping_noise.py [--transmissions 1000] [--workers 2]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
from _args import at_least  # this directory
from mapping_runs_vary import ranks  # this directory

from cellsim.messaging.explorer import explore
from cellsim.messaging.simulate import DEFAULTS, Variation
from cellsim.spec import MachineSpec

SETTINGS: list[tuple[str, Variation, dict[str, object]]] = [
    ("the default (OS reads every 5 us)", DEFAULTS, {}),
    ("OS reads every 1 us", replace(DEFAULTS, os_noise_ns=1000.0), {}),
    ("OS reads every 0.25 us", replace(DEFAULTS, os_noise_ns=250.0), {}),
]
for _ns in (5, 10, 20):
    _noise: dict[str, object] = {"mic.latency_noise": "uniform", "mic.latency_noise_ns": _ns}
    SETTINGS.append((f"read latency noise {_ns} ns", DEFAULTS, _noise))


def agreement(runs: np.ndarray) -> dict[str, float]:
    """The statistics of a (mappings x runs) array of runtimes."""
    mean = runs.mean(axis=1)
    pairs = [(a, b) for a in range(runs.shape[1]) for b in range(a + 1, runs.shape[1])]
    top_two = np.argsort(mean)[:2]
    worst = max(int(ranks(runs[:, k])[i]) + 1 for i in top_two for k in range(runs.shape[1]))
    return {
        "worst_best": float(mean.max() / mean.min()),
        "stray_pct": float(np.mean(np.abs(runs - mean[:, None]) / mean[:, None]) * 100),
        "rho": float(np.mean([np.corrcoef(ranks(runs[:, a]), ranks(runs[:, b]))[0, 1] for a, b in pairs])),
        "top_two_pct": 100.0 * worst / len(runs),
        "mean_us": float(mean.mean() / 1000),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transmissions", type=at_least(2), default=1000)
    ap.add_argument("--workers", type=at_least(1), default=2)
    a = ap.parse_args()
    print("| setting | worst/best of means | runs stray | rank correlation | top two's worst rank | mean |")
    print("|---|---|---|---|---|---|")
    for name, variation, overrides in SETTINGS:
        recs = explore(
            MachineSpec.of("ps3", overrides),
            mode="pinned",
            transmissions=a.transmissions,
            runs=3,
            variation=variation,
            workers=a.workers,
            out=None,
        )
        s = agreement(np.array([r["runs_ns"] for r in recs]))
        print(
            f"| {name} | {s['worst_best']:.3f} | {s['stray_pct']:.2f}% | {s['rho']:.2f} "
            f"| {s['top_two_pct']:.0f}% | {s['mean_us']:.1f} us |",
            flush=True,
        )


if __name__ == "__main__":
    main()
