"""Which unit is Keller and Varbanescu 2010's runtime axis in? Their figures beside the model's.

The one runtime axis whose tick labels survive in our copy of the paper (the figure after
Fig 4's caption and before Fig 5's, with the curves "Av 1kbyte" and "Av 0.5kbyte") ends at
250,000,000 for 10^7 transmissions per SPE. For each candidate unit this prints the
per-transmission time that axis allows, the least time the chip can take for one
transmission (its command bus snoops one address per bus cycle, Kistler et al. 2006; a
port receives 16 bytes per bus cycle), and how long the paper's sweep would have taken;
then the model's per-transmission time for every panel of ``cellsim reproduce`` (the
mean over the mappings, and the fastest and slowest), under each ``--set`` given.
Nothing is fitted: it reads the axis and measures the model.

    python benches/mapping_units.py [--transmissions 1000] [--mappings 24] [--runs 3]
                                    [--set messaging.dma_wait=each ...]
"""

from __future__ import annotations

import argparse

from _args import at_least  # this directory

from cellsim.experiments import mapping

AXIS_TOP = 250_000_000
"""The runtime axis's last tick (the paper's figure with the 1 KB and 0.5 KB averages)."""
AXIS_STEP = 50_000_000
"""Its tick spacing: a chart's automatic axis ends one step above its largest value, so the
slower curve's slowest mapping is probably above AXIS_TOP - AXIS_STEP."""
TRANSMISSIONS = 10**7
"""Per SPE ("The application used 10^7 transmissions per SPE")."""
SWEEP_RUNS = 3 * 5040 * 2
"""Three runs of the 5040 mappings of the QS22, for the figure's two packet sizes."""

BUS_HZ = 1.6e9
"""The EIB's clock (half the 3.2 GHz core): one command snooped and 16 bytes per port per cycle."""

UNITS = (
    ("core cycle (3.2 GHz)", 1 / 3.2),
    ("bus cycle (1.6 GHz)", 1 / 1.6),
    ("ns", 1.0),
    ("PS3 timebase tick (79.8 MHz)", 1e3 / 79.8),
    ("QS22 timebase tick (26.666 MHz)", 1e3 / 26.666),
    ("Kistler et al. 2006's board tick (25 MHz)", 40.0),
    ("QS20 timebase tick (14.318 MHz)", 1e3 / 14.318),
    ("us", 1e3),
    ("ms", 1e6),
)
"""Candidate units and their length in ns. The SPU decrementer counts at the timebase
frequency (architecture notes: "a timebase counter"), so its ticks are the timebase rows."""


def least_ns(packet: int, tasks: int = 8) -> float:
    """The least time of one transmission of every SPE of a ring of ``tasks``: each sends its
    packet's 128-byte requests, a notification and an acknowledgement put (row polls not
    counted) through one command bus, and each port receives one packet."""
    requests = tasks * (packet // 128 + 2)
    return max(requests, packet / 16) / BUS_HZ * 1e9


def axis_table() -> list[tuple[str, float, float, bool, float]]:
    """Per unit: its name, the per-transmission time (ns) the axis allows its slowest mapping
    (from one step below the top to the top), whether the chip can be that fast, and the days
    the figure's sweep would take at the axis's top."""
    low, high = (AXIS_TOP - AXIS_STEP) / TRANSMISSIONS, AXIS_TOP / TRANSMISSIONS
    out = []
    for name, ns in UNITS:
        sweep_days = SWEEP_RUNS * AXIS_TOP * ns * 1e-9 / 86400
        out.append((name, low * ns, high * ns, high * ns >= least_ns(512), sweep_days))
    return out


def model_table(
    overrides: list[str], transmissions: int, mappings: int, runs: int
) -> list[dict[str, object]]:
    recs = mapping.run(
        transmissions=transmissions,
        mappings=mappings,
        runs=runs,
        workers=1,
        out=None,
        overrides=tuple(overrides),
    )
    out = []
    for panel in dict.fromkeys(r["panel"] for r in recs):
        ns = [r["mean_ns"] / r["transmissions"] for r in recs if r["panel"] == panel]
        out.append({"panel": panel, "mean": sum(ns) / len(ns), "best": min(ns), "worst": max(ns)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transmissions", type=at_least(1), default=1000)
    ap.add_argument("--mappings", type=at_least(1), default=24, help="QS22 sample (the PS3 runs all 120)")
    ap.add_argument("--runs", type=at_least(1), default=3)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides")
    a = ap.parse_args()
    print(f"least per transmission (8 tasks): 0.5 KB {least_ns(512):.0f} ns, 1 KB {least_ns(1024):.0f} ns")
    print("| unit | ns per transmission (axis) | possible | the QS22 sweep would take (days) |")
    for name, lo, hi, possible, days in axis_table():
        print(f"| {name} | {lo:.4g}-{hi:.4g} | {'yes' if possible else 'no'} | {days:.3g} |")
    print(
        f"model ({' '.join(a.overrides) or 'default'}), {a.transmissions} transmissions, ns per transmission:"
    )
    print("| panel | mean | best | worst |")
    for m in model_table(a.overrides, a.transmissions, a.mappings, a.runs):
        print(f"| {m['panel']} | {m['mean']:.1f} | {m['best']:.1f} | {m['worst']:.1f} |")


if __name__ == "__main__":
    main()
