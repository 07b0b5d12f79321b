"""``cellsim plan-buffers``: the planner on the command line.

::

    cellsim plan-buffers --c-inner NS --c-outer NS --bytes-per-iter B --budget BYTES
                         [--machine M] [--S NS] [--D1 NS] [--k-max 4] [--tolerance 0.01] [--margin 1]
                         [--unit ns|cycles] [--inputs 8,8 --outputs 8] [--simulate] [--json]

prints the recommended number of buffers and block factor, the regime, the
predicted throughput and what every other number of buffers would give. The
model uses ``S`` and ``D1`` fitted on the machine (``--S``/``--D1`` override
them). Without ``--inputs``/``--outputs`` the fit uses Chen et al. 2006's streams
(two 8-byte reads, one 8-byte write) and block factors are multiples of
``16 / gcd(16, B)``, so that a block's bytes are a multiple of 16.
``--simulate`` then runs the generated loop for a short list of (k, bf)
around the model's answer and recommends from what the chip did
(:mod:`cellsim.buffering.refine`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any

import click

from ..exceptions import UsageError
from ..machine import Machine
from . import SEED004_INPUTS, SEED004_OUTPUTS
from .choice import DEFAULT_K_MAX, DEFAULT_MARGIN, DEFAULT_TOLERANCE, Plan, plan
from .loop import ELEMENT_SIZES, Loop, free_local_store
from .model import PAPER, Costs
from .refine import Refinement, refine
from .terms import planner_constants

__all__ = ["plan_buffers", "planner", "simulated_plan"]


def _sizes(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        sizes = tuple(int(v) for v in value.replace(" ", "").split(",") if v)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of element sizes") from None
    for e in sizes:
        if e not in ELEMENT_SIZES:
            raise click.BadParameter(f"element size {e} is not one of {', '.join(map(str, ELEMENT_SIZES))}")
    return sizes


def planner(
    *,
    c_inner: float,
    c_outer: float,
    bytes_per_iter: float,
    budget: float,
    machine: str = "qs20",
    S: float | None = None,
    D1: float | None = None,
    k_max: int = DEFAULT_K_MAX,
    tolerance: float = DEFAULT_TOLERANCE,
    margin: float = DEFAULT_MARGIN,
    unit: str = "ns",
    inputs: tuple[int, ...] | None = None,
    outputs: tuple[int, ...] | None = None,
) -> Plan:
    """What ``cellsim plan-buffers`` computes: the plan for a loop given by its
    costs, on ``machine`` (``UsageError`` naming any bad value)."""
    m = Machine(machine)  # an unknown machine fails here, with the engine's message
    for name, v in (("C_inner", c_inner), ("C_outer", c_outer), ("bytes per iteration", bytes_per_iter)):
        if not math.isfinite(v):
            raise UsageError(f"{name} must be a finite number, not {v!r}")
    if unit not in ("ns", "cycles"):
        raise UsageError(f"the time unit must be 'ns' or 'cycles', not {unit!r}")
    to_ns = 1e9 / m.core_hz if unit == "cycles" else 1.0
    costs = Costs(c_inner * to_ns, c_outer * to_ns, bytes_per_iter)
    if (inputs is None) != (outputs is None):
        raise UsageError("give both --inputs and --outputs (element sizes of the streams), or neither")
    if inputs is not None and outputs is not None:
        if sum(inputs) + sum(outputs) != bytes_per_iter:
            raise UsageError(
                f"the streams move {sum(inputs) + sum(outputs)} bytes per iteration "
                f"(inputs {list(inputs)}, outputs {list(outputs)}), not --bytes-per-iter {bytes_per_iter:g}"
            )
        granularity = max(16 // math.gcd(16, e) for e in (*inputs, *outputs))
        shape = (inputs, outputs)
    else:
        if bytes_per_iter != int(bytes_per_iter):
            raise UsageError(f"bytes per iteration must be a whole number, not {bytes_per_iter!r}")
        granularity = 16 // math.gcd(16, int(bytes_per_iter))
        shape = (SEED004_INPUTS, SEED004_OUTPUTS)
    constants = planner_constants(machine, *shape, S=S, D1=D1)
    if sum(shape[0]) + sum(shape[1]) != bytes_per_iter:
        # streams unknown: no commands or lines to count
        constants = dataclasses.replace(constants, chip=dataclasses.replace(constants.chip, streams=()))
    return plan(
        costs,
        budget,
        constants,
        k_max=k_max,
        granularity=granularity,
        tolerance=tolerance,
        max_bytes=free_local_store(m),
        margin=margin,
    )


def simulated_plan(
    p: Plan,
    *,
    c_inner: float,
    c_outer: float,
    machine: str = "qs20",
    unit: str = "ns",
    inputs: tuple[int, ...] | None = None,
    outputs: tuple[int, ...] | None = None,
    **_: Any,
) -> Refinement:
    """``--simulate``: the plan refined on the simulated chip. The loop's
    streams are ``inputs``/``outputs``, or Chen et al. 2006's when the plan moves 24
    bytes per iteration."""
    if inputs is None or outputs is None:
        if p.costs.bytes_per_iter != sum(SEED004_INPUTS) + sum(SEED004_OUTPUTS):
            raise UsageError(
                "--simulate runs the loop, so it needs its streams: give --inputs and --outputs "
                f"(element sizes adding up to {p.costs.bytes_per_iter:g} bytes per iteration)"
            )
        inputs, outputs = SEED004_INPUTS, SEED004_OUTPUTS
    loop = Loop(4096, c_inner, c_outer, inputs, outputs, unit=unit)  # type: ignore[arg-type]
    return refine(loop, p, machine=machine, tolerance=p.tolerance)


def _console() -> Any:
    """A rich console, 160 columns wide when the output is not a terminal."""
    from rich.console import Console

    con = Console()
    if not con.is_terminal and "COLUMNS" not in os.environ:
        con = Console(width=160)
    return con


def _describe_refinement(r: Refinement) -> None:
    from rich.table import Table

    con = _console()
    t = Table(title="simulated on the chip (steady state of the generated loop)")
    for col in ("k", "bf", "model MB/s", "simulated MB/s", "of the best"):
        t.add_column(col, justify="right")
    best = r.best_mbs
    for tr in r.trials:
        mark = " <- model" if tr == r.model else ""
        t.add_row(
            str(tr.k),
            str(tr.bf),
            f"{tr.predicted_mbs:,.0f}",
            f"{tr.simulated_mbs:,.0f}",
            f"{100 * tr.simulated_mbs / best:.1f}%{mark}",
            style="bold" if tr == r.chosen else None,
        )
    con.print(t)
    c, m = r.chosen, r.model
    con.print(
        f"[bold]recommended after simulation: k = {c.k}, block factor {c.bf}[/bold], "
        f"{c.simulated_mbs:,.0f} MB/s "
        f"(the model's choice k = {m.k}, bf = {m.bf} simulates at {m.simulated_mbs:,.0f} MB/s)"
    )


def _describe(p: Plan, machine: str) -> None:
    from rich.table import Table

    con = _console()
    c, k = p.costs, p.constants
    D = k.D1_ns_per_byte * c.bytes_per_iter
    con.print(
        f"loop: C_inner = {c.c_inner_ns:g} ns, C_outer = {c.c_outer_ns:g} ns, {c.bytes_per_iter:g} B per "
        f"iteration; budget {p.budget_bytes:,} B on {machine}"
    )
    con.print(
        f"constants: S = {k.S_ns:.1f} ns, D1 = {k.D1_ns_per_byte:.4f} ns/B ({k.source}; the paper's: "
        f"S = {PAPER.S_ns:g} ns, D1 = {PAPER.D1_ns_per_byte:g} ns/B); D = {D:.3f} ns per iteration"
    )
    if k.chip.streams:
        con.print(
            f"chip ({machine}'s file): the DMAC starts a command every {k.chip.command_ns:.1f} ns; a bus "
            f"request moves a {k.chip.line_bytes}-byte line, a part of one costing the whole; buffer "
            f"switching {k.chip.switch_ns:.2f} ns a block; DMA takes the local store's port "
            f"{k.chip.port_ns_per_byte * k.chip.line_bytes:.3f} ns a line"
        )
    ch = p.chosen
    con.print(
        f"[bold]recommended: k = {ch.k} buffer{'s' if ch.k > 1 else ''}, block factor {ch.bf}[/bold] "
        f"({ch.space_bytes:,} B of {p.budget_bytes:,} B), {ch.regime}"
    )
    con.print(
        f"predicted throughput: {ch.throughput_mbs:,.0f} MB/s, {ch.time_per_iter_ns:.3f} ns per iteration "
        f"(best within the budget: {p.best_throughput_mbs:,.0f} MB/s; within {100 * p.tolerance:g}% counts "
        "as the best, fewer buffers first, then the smallest block factor)"
    )
    for note in p.notes:
        con.print(f"  {note}")
    t = Table(title=f"alternatives (block factors are multiples of {p.granularity})")
    for col in (
        "k",
        "best bf",
        "MB/s there",
        "regime there",
        f"smallest bf within {100 * p.tolerance:g}%",
        "MB/s there",
        "space (B)",
    ):
        t.add_column(col, justify="right" if col != "regime there" else "left")
    for a in p.alternatives:
        if a.at_max is None or a.smallest is None:
            t.add_row(str(a.k), "does not fit", "", "", "", "", "")
            continue
        t.add_row(
            str(a.k),
            str(a.at_max.bf),
            f"{a.at_max.throughput_mbs:,.0f}",
            a.at_max.regime,
            str(a.smallest.bf),
            f"{a.smallest.throughput_mbs:,.0f}",
            f"{a.smallest.space_bytes:,}",
            style="bold" if a.k == ch.k else None,
        )
    con.print(t)


@click.command("plan-buffers")
@click.option("--c-inner", "c_inner", type=float, required=True, help="computation per inner iteration")
@click.option("--c-outer", "c_outer", type=float, required=True, help="overhead per block (issuing its DMAs)")
@click.option(
    "--bytes-per-iter", "bytes_per_iter", type=float, required=True, help="bytes of all streams per iteration"
)
@click.option("--budget", type=float, required=True, help="local store for the buffers, bytes")
@click.option("--machine", "-m", default="qs20", show_default=True, help="machine name or TOML file")
@click.option(
    "--S", "S", type=float, default=None, help="DMA set-up time in ns (default: fitted on the machine)"
)
@click.option("--D1", "D1", type=float, default=None, help="DMA time per byte in ns (default: fitted)")
@click.option(
    "--k-max", "k_max", type=int, default=DEFAULT_K_MAX, show_default=True, help="most buffers considered"
)
@click.option(
    "--tolerance",
    type=float,
    default=DEFAULT_TOLERANCE,
    show_default=True,
    help="a throughput within this fraction of the best counts as the best",
)
@click.option(
    "--margin",
    type=float,
    default=DEFAULT_MARGIN,
    show_default=True,
    help="a scheme counts as bound only if it is with S times this (1: the paper's rule)",
)
@click.option(
    "--unit", type=click.Choice(["ns", "cycles"]), default="ns", show_default=True, help="unit of C"
)
@click.option(
    "--inputs", callback=_sizes, default=None, metavar="E,E,...", help="element sizes of the input streams"
)
@click.option(
    "--outputs", callback=_sizes, default=None, metavar="E,...", help="element sizes of the output streams"
)
@click.option(
    "--simulate",
    is_flag=True,
    help="run the generated loop for a short list of (k, bf) around the model's answer and choose from that",
)
@click.option("--json", "as_json", is_flag=True, help="print the plan as JSON")
def plan_buffers(as_json: bool, simulate: bool, machine: str, **kw: Any) -> None:
    """Choose the DMA buffering scheme and block factor for a streaming loop (Chen et al. 2006's planner)."""
    p = planner(machine=machine, **kw)
    r = simulated_plan(p, machine=machine, **kw) if simulate else None
    if as_json:
        d = p.as_dict()
        d["machine"] = machine
        if r is not None:
            d["simulated"] = r.as_dict()
        click.echo(json.dumps(d, indent=1))
    else:
        _describe(p, machine)
        if r is not None:
            _describe_refinement(r)
