"""cellsim's engine speed beside BookSim2 and CAMINOS on the EIB's 12-node ring.

Runs, interleaved and ROUNDS times, the peers' speed scripts (from
``../shared/peers`` or ``$PEERS_DIR``) and ``cellsim bench speed --traffic
uniform`` at the same load, then prints simulated cycles per wall-clock second
for each and cellsim's ratio to each peer. Loads are the peers' units, flits
per node per cycle with 8-flit packets: 0.08 = 0.01 transfers per ramp per bus
cycle. The peers' first run builds them (about a minute for BookSim, three
for CAMINOS).

    python benches/peers.py [--rounds 3] [--loads 0.08 0.24] [--skip caminos]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from _args import at_least  # this directory

HERE = Path(__file__).resolve().parent
PEERS = Path(os.environ.get("PEERS_DIR", HERE.parent.parent / "shared" / "peers"))


def peer(name: str, load: float) -> float | None:
    script = PEERS / f"{name}_speed.sh"
    out = subprocess.run(["bash", str(script), str(load)], capture_output=True, text=True, check=False).stdout
    m = re.search(r"cycles_per_s=(\d+)", out)
    return float(m.group(1)) if m else None


def cellsim(load: float, builds: set[str]) -> float:
    """Bus cycles per second at `load`; adds the engine build that ran to `builds`."""
    rate = load / 8
    cmd = [
        sys.executable,
        "-m",
        "cellsim.tools.cli",
        "bench",
        "speed",
        "--traffic",
        "uniform",
        "--rate",
        str(rate),
    ]
    out = subprocess.run([*cmd, "--json", "-"], capture_output=True, text=True, check=True).stdout
    record = json.loads(out)
    builds.add(record["engine_build"])
    return float(record["bus_cycles_per_s"])


def load_arg(text: str) -> float:
    """A load in flits per node per cycle: above 0, at most 8 (one 8-flit packet per node per cycle)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < v <= 8:
        raise argparse.ArgumentTypeError(f"load {v} is out of range: it must be above 0 and at most 8")
    return v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=at_least(1), default=3)
    ap.add_argument("--loads", type=load_arg, nargs="+", default=[0.08, 0.24])
    ap.add_argument("--skip", nargs="*", default=[], choices=["booksim", "caminos"])
    args = ap.parse_args()
    peers = [p for p in ("booksim", "caminos") if p not in args.skip]
    if peers and not PEERS.is_dir():
        sys.exit(f"peer scripts not found in {PEERS} (set PEERS_DIR)")
    results: dict[tuple[str, float], list[float]] = {}
    builds: set[str] = set()
    for r in range(args.rounds):
        for load in args.loads:
            for name in ["cellsim", *peers]:
                v = cellsim(load, builds) if name == "cellsim" else peer(name, load)
                if v is not None:
                    results.setdefault((name, load), []).append(v)
                print(f"round {r + 1} load {load} {name}: {v}", file=sys.stderr)
    print(f"cellsim's engine build: {', '.join(sorted(builds))} (`make pgo` installs the profile-guided one)")
    print(f"{'simulator':>10} {'load':>5} {'median cycles/s':>16} {'min':>12} {'max':>12}  cellsim / this")
    for load in args.loads:
        ours = statistics.median(results.get(("cellsim", load), [float("nan")]))
        for name in ["cellsim", *peers]:
            got = results.get((name, load), [])
            if not got:
                continue
            med = statistics.median(got)
            spread = f"{min(got):>12,.0f} {max(got):>12,.0f}"
            print(f"{name:>10} {load:>5} {med:>16,.0f} {spread}  {ours / med:>8.1f}x")


if __name__ == "__main__":
    main()
