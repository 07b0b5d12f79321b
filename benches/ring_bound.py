"""How far could an exact fast-forward take the ring of benches/mapping_5040.py?

    python benches/ring_bound.py [--transmissions 10000] [--machine qs22]

The engine's exact fast-forward jumps whole periods of a steady state and stops
short of anything outside it (docs/performance.md). The ring's runs carry the
variation Keller and Varbanescu's hardware showed: the PPE operating system's
MMIO reads (one every ``os_noise_ns`` on average, the gap uniform in 0..2x) and
the DRAM's refreshes (one every ``refresh_interval_ns`` per memory controller,
each on its own phase), and each of those ends a steady state. So even if every
part of the ring were inside shapes, a jump could cover only what lies between
two of them, less the periods simulated to find the state again.

This script runs one ring run (the sample's first mapping, as mapping_5040.py
runs it) for its simulated runtime and host time, takes one transmission as the
ring's period (the shortest it can be: every SPE's program goes through one
transmission per period; with two buffers it may be two), draws the stops as the
model does (seeded), and prints the largest speed-up any jump could give when
finding the state again costs S periods (S = 1 is the floor: one period seen
twice; S = 8 is today's looks, every 16 commands against a period of about 38),
beside the speed-up the 5-minute target needs.
"""

from __future__ import annotations

import argparse
import time
import tomllib
from typing import Any

import numpy as np
from _args import at_least  # this directory
from mapping_5040 import ring_points  # this directory

from cellsim._engine import machine_toml
from cellsim.machine import Machine
from cellsim.messaging.explorer import all_mappings, run_point
from cellsim.messaging.simulate import DEFAULTS

TARGET_S = 300.0  # the 5 minutes
CORES = 2  # on this 2-core machine
RUNS = 5040


def machine_setting(machine: str, table: str, key: str) -> Any:
    """A machine file's setting, following its ``base`` chain."""
    name: str | None = machine
    while name is not None:
        doc = tomllib.loads(machine_toml(name))
        if key in doc.get(table, {}):
            return doc[table][key]
        name = doc.get("base")
    raise KeyError(f"{table}.{key} is in no machine file of {machine}'s chain")


def stops(
    span_ns: float, noise_ns: float, refresh_ns: float, mics: int, rng: np.random.Generator
) -> np.ndarray:
    """The times in 0..span_ns at which a steady state must end, as the model draws them."""
    gaps = rng.uniform(0, 2 * noise_ns, int(span_ns / noise_ns * 2) + 16)
    noise = np.cumsum(gaps)
    points = [noise[noise < span_ns]]
    for _ in range(mics):
        points.append(np.arange(rng.uniform(0, refresh_ns), span_ns, refresh_ns))
    return np.sort(np.concatenate([*points, [0.0, span_ns]]))


def bound(cuts: np.ndarray, period: float, settle: int) -> float:
    """The speed-up of jumping every whole period of each gap after `settle` simulated ones."""
    gaps = np.diff(cuts)
    jumpable = np.maximum(gaps - settle * period, 0.0)
    jumped = jumpable - jumpable % period
    return float(gaps.sum() / (gaps.sum() - jumped.sum()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machine", default="qs22")
    ap.add_argument("--transmissions", type=at_least(1), default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    point = ring_points(a.machine, all_mappings(8)[:1], a.transmissions)[0]
    t0 = time.process_time()
    rec = run_point(point)
    host = time.process_time() - t0
    runtime = float(rec["runtime_ns"])
    period = runtime / a.transmissions
    noise = DEFAULTS.os_noise_ns
    refresh = float(machine_setting(a.machine, "mic", "refresh_interval_ns"))
    chips = Machine(a.machine).chips
    need = host / (TARGET_S * CORES / RUNS)
    print(
        f"one run on {a.machine}: {a.transmissions} transmissions, {runtime / 1e3:.1f} us simulated, "
        f"{host:.3f} s of CPU; period (one transmission) {period:.0f} ns"
    )
    print(f"stops: an OS read every {noise:.0f} ns on average, a refresh every {refresh:.0f} ns per memory")
    print(f"the target (5040 runs in {TARGET_S:.0f} s on {CORES} cores) needs {need:.1f}x on this run")
    rng = np.random.default_rng(a.seed)
    for mics in sorted({1, chips}):
        cuts = stops(runtime, noise, refresh, mics, rng)
        mean = float(np.diff(cuts).mean())
        row = ", ".join(f"S={s}: {bound(cuts, period, s):.2f}x" for s in (1, 2, 3, 4, 8))
        print(
            f"{mics} memory controller(s) refreshing: {len(cuts) - 2} stops, a gap of {mean / period:.1f} "
            f"periods on average; largest speed-up of any exact jump: {row}"
        )


if __name__ == "__main__":
    main()
