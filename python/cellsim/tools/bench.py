"""``cellsim bench``: how fast the engine runs (``speed``, ``switch``) and how good the buffering
planner is (``planner``, the measures of :mod:`cellsim.buffering.bench`).

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
from collections.abc import Iterable, Iterator
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
    """Adds ``speed``, ``switch`` and ``planner`` to the CLI's ``bench`` group."""
    import json
    import sys

    import click

    from ..buffering.bench import planner_bench
    from ..buffering.choice import DEFAULT_MARGIN

    def emit(record: dict[str, Any], json_path: str | None, lines: Iterable[str], *, indent: int = 2) -> None:
        """A benchmark's record as JSON into ``json_path`` (``-``: on stdout, and nothing else
        there), then ``lines`` on stdout (made only then: a generator may read the record)."""
        if json_path == "-":
            click.echo(json.dumps(record))
            return
        if json_path:
            with open(json_path, "w") as f:
                json.dump(record, f, indent=indent)
        for line in lines:
            click.echo(line, file=sys.stdout)

    def fields(record: dict[str, Any]) -> Iterator[str]:
        for k, v in record.items():
            yield f"{k:>22}: {v:,.3f}" if isinstance(v, float) else f"{k:>22}: {v}"

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
            record = uniform(rate, machine=machine, bus_cycles=bus_cycles)
        else:
            record = speed(machine=machine, pairs=pairs, python=python)
        emit(record, json_path, fields(record))

    @group.command("switch")
    @click.option(
        "--calls", type=click.IntRange(min=1), default=20000, show_default=True, help="SPU calls per program."
    )
    @click.option("--json", "json_path", metavar="PATH|-", help="Write the record as JSON ('-' for stdout).")
    def switch_cmd(calls: int, json_path: str | None) -> None:
        """Cost of an SPU call that switches between Python programs."""
        record = switch(calls)
        emit(record, json_path, fields(record))

    @group.command("planner")
    @click.option("--loops", type=click.IntRange(min=1), default=200, show_default=True, help="random loops")
    @click.option("--seed", type=int, default=0, show_default=True, help="seed of the random loops")
    @click.option("--machine", "-m", default="qs20", show_default=True, help="machine name or TOML file")
    @click.option(
        "--per-octave",
        type=click.IntRange(min=1),
        default=3,
        show_default=True,
        help="block factors simulated per octave for every k",
    )
    @click.option(
        "--margin",
        type=float,
        default=DEFAULT_MARGIN,
        show_default=True,
        help="the planner's margin on the set-up time (1: the paper's rule)",
    )
    @click.option("--no-figure12", is_flag=True, help="leave Figure 12's points out of the model accuracy")
    @click.option("--json", "json_path", metavar="PATH|-", help="write the result as JSON ('-': stdout only)")
    @click.option("--verbose", "-v", is_flag=True, help="one line per loop")
    def planner_cmd(
        loops: int,
        seed: int,
        machine: str,
        per_octave: int,
        margin: float,
        no_figure12: bool,
        json_path: str | None,
        verbose: bool,
    ) -> None:
        """Model accuracy (predicted vs simulated throughput) and planner quality (random loops)."""
        res = planner_bench(
            loops, seed=seed, machine=machine, per_octave=per_octave, figure12=not no_figure12, margin=margin
        )
        emit(res, json_path, planner_lines(res, verbose), indent=1)

    def planner_lines(res: dict[str, Any], verbose: bool) -> Iterator[str]:
        if verbose:
            for r in res["per_loop"]:
                yield (
                    f"in {r['inputs']} out {r['outputs']} C_inner {r['c_inner_ns']:6.3f} C_outer "
                    f"{r['c_outer_ns']:5.1f} budget {r['budget_bytes']:6d}: planner k={r['planner_k']} "
                    f"bf={r['planner_bf']:5d} {r['planner_simulated_mbs']:7.0f} MB/s, best k={r['best_k']} "
                    f"bf={r['best_bf']:5d} {r['best_simulated_mbs']:7.0f} MB/s "
                    f"({100 * r['fraction_of_best']:.1f}%){'' if r['optimal'] else '  <-- not within 2%'}; "
                    f"refined k={r['refined_k']} bf={r['refined_bf']:5d} "
                    f"({100 * r['refined_fraction_of_best']:.1f}%, {r['refined_trials']} simulated)"
                )
        for k, v in res.items():
            if k == "per_loop":
                continue
            if (isinstance(v, float) and "error" in k) or "optimal_fraction" in k or "fraction_of" in k:
                yield f"{k:>32}: {v:.4f} ({100 * v:.1f}%)"
            elif isinstance(v, float):
                yield f"{k:>32}: {v:,.3f}"
            else:
                yield f"{k:>32}: {v}"
