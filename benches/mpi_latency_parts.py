"""What Kumar et al.'s MPI's ping-pong time goes to on the simulated blade.

The ``mpi-pingpong`` program (``kumar`` protocol, data in main memory, both ranks on chip 0,
first-touch pages: the paper's set-up) is run once as the machine is, and then with one cost
changed at a time; each row prints how much the half round trip changes at each size. Two
families of hypotheses for the latency:

* the DMAs' own costs, as machine settings (their issue, the MFC's path to the bus, the
  coherence protocol's command phase, the other chip's snoop across the BIF, the tag's
  completion, the DRAM's latency and one requester's window at the MIC);
* the protocol's SPU-side work (envelopes, matching, copies, polling of queues), as the
  library's step costs (``cellsim.mpi._costs``: instruction counts) halved and tripled.

    python benches/mpi_latency_parts.py [--machine qs20] [--json PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
from typing import Any

from cellsim.experiments import mpi_pingpong
from cellsim.mpi import mpirun
from cellsim.mpi._costs import COSTS, Costs
from cellsim.spec import MachineSpec

SIZES = (0, 1, 2048, 4096, 65536, 1 << 20)
"""0 B (an envelope alone), 1 B (data through P_i), the buffered limit, the first synchronous
size, and two where bandwidth rules."""

DMA_SIDE: dict[str, list[str]] = {
    "DMA issue (mfc.issue_cycles 0)": ["mfc.issue_cycles=0"],
    "MFC to the bus (mfc.to_eib_cycles 0)": ["mfc.to_eib_cycles=0"],
    "command phase (eib.command_phase_bus_cycles 0)": ["eib.command_phase_bus_cycles=0"],
    "other chip's snoop (bif.link_latency_ns 0)": ["bif.link_latency_ns=0"],
    "tag completion (mfc.completion_cycles 0)": ["mfc.completion_cycles=0"],
    "DRAM latency (mic.dram_latency_ns 0)": ["mic.dram_latency_ns=0"],
    "MIC window (mic.reads_per_requester 16)": ["mic.reads_per_requester=16"],
}
SPU_SIDE: dict[str, float] = {"SPU protocol work x0.5": 0.5, "SPU protocol work x3": 3.0}


def scaled(costs: Costs, factor: float) -> Costs:
    """Every library step's cycles times ``factor`` (at least one: a poll must cost time)."""
    return Costs(
        **{f.name: max(1, round(getattr(costs, f.name) * factor)) for f in dataclasses.fields(costs)}
    )


def half_round_trips(machine: MachineSpec, costs: Costs = COSTS) -> dict[int, float]:
    """{size: half round trip in us} of the kumar ping-pong."""
    reps = {s: mpi_pingpong.default_reps(s) for s in SIZES}
    sink = io.StringIO()
    res = mpirun(
        lambda: mpi_pingpong._pingpong(SIZES, reps),
        2,
        machine=machine,
        protocol="kumar",
        costs=costs,
        stdout=sink,
        stderr=sink,
    )
    return {s: t * 1e6 for s, t in res.values[0].items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--machine", default="qs20")
    ap.add_argument("--json", help="write every number to this file")
    args = ap.parse_args()
    base = half_round_trips(MachineSpec.of(args.machine))
    out: dict[str, Any] = {"machine": args.machine, "base_us": base, "changes_us": {}}
    print(f"kumar ping-pong on {args.machine}, half round trip (us), and its change with one cost changed")
    print(f"{'':48s}" + "".join(f"{s:>10d}" for s in SIZES))
    print(f"{'as the machine is':48s}" + "".join(f"{base[s]:10.3f}" for s in SIZES))
    rows = [(name, half_round_trips(MachineSpec.of(args.machine, ov))) for name, ov in DMA_SIDE.items()]
    rows += [
        (name, half_round_trips(MachineSpec.of(args.machine), scaled(COSTS, f)))
        for name, f in SPU_SIDE.items()
    ]
    for name, t in rows:
        out["changes_us"][name] = {s: t[s] - base[s] for s in SIZES}
        print(f"{name:48s}" + "".join(f"{t[s] - base[s]:+10.3f}" for s in SIZES))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
