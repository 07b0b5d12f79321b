"""How fast the engine runs: ``cellsim bench speed`` and ``cellsim bench switch``.

``speed`` (default): all 8 SPEs stream 16 KB gets and puts to their partner's
local store with native kernels, which keeps the EIB at saturation (one
128-byte command per bus cycle); it reports simulated bus transfers and bus
cycles per wall-clock second and the slowdown against the real chip.

``speed --traffic uniform --rate R``: synthetic traffic straight onto the
EIB, as network simulators such as BookSim measure themselves: every ramp
starts a 128-byte transfer to a uniformly random other ramp with probability
``R`` per bus cycle (R = 0.01 is BookSim's 0.08 flits/node/cycle with 8-flit
packets).

``switch``: 8 Python SPE programs that only call ``compute(10)``: the cost of
one SPU call plus a switch between programs, in microseconds.

Wall time is measured around the simulation only; the numbers vary with the
load of the machine, so compare runs made together. Each record says how the
engine was compiled (``engine_build``: "release" from ``pip install``, "pgo"
from ``make pgo``, "debug").
"""

from __future__ import annotations

import time
from typing import Any

from .. import _engine
from ..machine import Machine


def speed(machine: str = "qs20", pairs: int = 400, seed: int = 1, python: bool = False) -> dict[str, Any]:
    """Saturation: every SPE streams 16 KB gets and puts with a partner (SPE s with s ^ 1)."""
    from ..kernels import load_stream

    m = Machine(machine, seed=seed)
    n = m.spe_count - m.spe_count % 2
    for s in range(n):
        p = s ^ 1
        load_stream(
            m,
            s,
            get_ea=m.ls_ea(p) + 0x20000,
            put_ea=m.ls_ea(p) + 0x30000,
            size=16384,
            pairs=pairs,
            native=not python,
        )
    t0 = time.perf_counter()
    r = m.run()
    wall = time.perf_counter() - t0
    st = r.stats
    bus_cycles = r.cycles / 2
    real_bus_hz = m.core_hz / 2
    return {
        "mode": "saturation",
        "machine": m.name,
        "engine_build": _engine.BUILD,
        "programs": "python" if python else "native",
        "spes": n,
        "bus_transfers": st["transfers"],
        "bus_cycles": bus_cycles,
        "simulated_ns": r.ns,
        "wall_s": wall,
        "bus_transfers_per_s": st["transfers"] / wall,
        "bus_cycles_per_s": bus_cycles / wall,
        "events_per_s": st["events"] / wall,
        "slowdown": real_bus_hz / (bus_cycles / wall),
        "aggregate_gbs": st["transfer_bytes"] / r.ns,
    }


def uniform(rate: float, machine: str = "qs20", bus_cycles: int = 1_500_000, seed: int = 1) -> dict[str, Any]:
    """Synthetic uniform random traffic at ``rate`` transfers per ramp per bus cycle."""
    m = Machine(machine, seed=seed)
    t0 = time.perf_counter()
    m.run_synthetic(rate, 2 * bus_cycles)
    wall = time.perf_counter() - t0
    st = m.stats()
    return {
        "mode": "uniform",
        "machine": m.name,
        "engine_build": _engine.BUILD,
        "rate": rate,
        "flits_per_node_per_cycle": rate * 8,
        "bus_cycles": bus_cycles,
        "bus_transfers": st["transfers"],
        "wall_s": wall,
        "bus_cycles_per_s": bus_cycles / wall,
        "bus_transfers_per_s": st["transfers"] / wall,
        "slowdown": (m.core_hz / 2) / (bus_cycles / wall),
    }


def switch(calls: int = 20000, machine: str = "qs20") -> dict[str, Any]:
    """Cost of one SPU call with a switch between Python programs."""
    from ..spu import compute

    def prog(speid: int, argp: int, envp: int) -> None:
        for _ in range(calls):
            compute(10)

    m = Machine(machine)
    n = m.spe_count
    for s in range(n):
        m.load(s, prog)
    t0 = time.perf_counter()
    m.run()
    wall = time.perf_counter() - t0
    total = calls * n
    return {
        "mode": "switch",
        "engine_build": _engine.BUILD,
        "programs": n,
        "calls": total,
        "wall_s": wall,
        "calls_per_s": total / wall,
        "us_per_call": wall / total * 1e6,
    }


def register(group: Any) -> None:
    """Adds ``speed`` and ``switch`` (and ``planner``, :mod:`cellsim.buffering.bench`)
    to the CLI's ``bench`` group."""
    import json
    import sys

    import click

    from ..buffering.bench import register as register_planner

    register_planner(group)

    def emit(record: dict[str, Any], json_path: str | None) -> None:
        if json_path == "-":
            click.echo(json.dumps(record))
            return
        if json_path:
            with open(json_path, "w") as f:
                json.dump(record, f, indent=2)
        for k, v in record.items():
            click.echo(f"{k:>22}: {v:,.3f}" if isinstance(v, float) else f"{k:>22}: {v}", file=sys.stdout)

    @group.command("speed")
    @click.option(
        "--traffic",
        type=click.Choice(["saturation", "uniform"]),
        default="saturation",
        show_default=True,
        help=(
            "saturation: every SPE streams 16 KB DMAs with a partner; "
            "uniform: synthetic traffic on chip 0's rings."
        ),
    )
    @click.option(
        "--rate",
        type=click.FloatRange(min=0, max=1, min_open=True),
        default=0.01,
        show_default=True,
        help="uniform: transfers per ramp per bus cycle (0.01 = 0.08 flits/node/cycle).",
    )
    @click.option(
        "--cycles",
        "bus_cycles",
        type=click.IntRange(min=1),
        default=1_500_000,
        show_default=True,
        help="uniform: bus cycles to simulate (BookSim/CAMINOS peers run 1.5 M).",
    )
    @click.option(
        "--pairs",
        type=click.IntRange(min=1),
        default=400,
        show_default=True,
        help="saturation: get+put pairs per SPE.",
    )
    @click.option("--machine", default="qs20", show_default=True)
    @click.option("--python", is_flag=True, help="saturation: run the Python twins of the kernels.")
    @click.option("--json", "json_path", metavar="PATH|-", help="Write the record as JSON ('-' for stdout).")
    def speed_cmd(
        traffic: str,
        rate: float,
        bus_cycles: int,
        pairs: int,
        machine: str,
        python: bool,
        json_path: str | None,
    ) -> None:
        """Simulated bus transfers and bus cycles per wall-clock second."""
        if traffic == "uniform":
            emit(uniform(rate, machine=machine, bus_cycles=bus_cycles), json_path)
        else:
            emit(speed(machine=machine, pairs=pairs, python=python), json_path)

    @group.command("switch")
    @click.option(
        "--calls", type=click.IntRange(min=1), default=20000, show_default=True, help="SPU calls per program."
    )
    @click.option("--json", "json_path", metavar="PATH|-", help="Write the record as JSON ('-' for stdout).")
    def switch_cmd(calls: int, json_path: str | None) -> None:
        """Cost of an SPU call that switches between Python programs."""
        emit(switch(calls), json_path)
