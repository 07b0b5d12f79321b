"""``cellsim map``: the best mapping of a communication pattern.

::

    cellsim map --pattern FILE|ring|ring-uni|pairs|all-to-all --machine M
                [--count N] [--packet B] [--top K] [--budget B] [--sample S] [--runs R]
                [--workers N] [--cluster ADDRESS] [--json PATH|-]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..exceptions import UsageError
from ..limits import SEED
from ..tools._outputs import check_output
from .library import MAX_TASKS
from .mapper import model_scores, optimize
from .patterns import BUILTIN, builtin, load_pattern, parse_mapping
from .simulate import DEFAULTS, Variation
from .target import resolve

__all__ = ["map_cmd"]


@click.command("map")
@click.option(
    "--pattern",
    "-p",
    required=True,
    help="a pattern file (JSON or CSV edges: source, destination, bytes per iteration; the format: "
    "docs/messaging.md, 'Pattern files') or one of "
    f"{', '.join(BUILTIN)}",
)
@click.option("--machine", "-m", default="qs20", show_default=True, help="machine name or TOML file")
@click.option(
    "--count",
    type=click.IntRange(min=1),
    default=None,
    help="transmissions per SPE (ring patterns, default 1000) or iterations (others, default 200)",
)
@click.option(
    "--packet", type=click.IntRange(min=1), default=1024, show_default=True, help="bytes per packet"
)
@click.option(
    "--top", type=click.IntRange(min=1), default=8, show_default=True, help="model proposals simulated"
)
@click.option(
    "--budget", type=click.IntRange(min=1), default=64, show_default=True, help="most mappings simulated"
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="random mappings for the spread",
)
@click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True, help="runs per mapping")
@click.option(
    "--tasks",
    type=click.IntRange(min=1),
    default=None,
    help="tasks of a built-in pattern (default: one per SPE of the machine, at most 16)",
)
@click.option("--quiet", is_flag=True, help="switch the run-to-run variation mechanisms off")
@click.option("--seed", "-s", type=SEED, default=0, show_default=True)
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="local worker processes (default: all cores)"
)
@click.option("--cluster", default=None, help="address of a Dask scheduler")
@click.option("--json", "json_path", metavar="PATH|-", help="write the result as JSON ('-': stdout)")
def map_cmd(
    pattern: str,
    machine: str,
    count: int | None,
    packet: int,
    top: int,
    budget: int,
    sample: int,
    runs: int,
    tasks: int | None,
    quiet: bool,
    seed: int,
    workers: int | None,
    cluster: str | None,
    json_path: str | None,
) -> None:
    """Find the best mapping of a task communication graph onto the SPEs (pinned placement).

    The link-load model ranks every mapping, the most promising are simulated,
    local search improves the best with the simulator; a random sample gives
    the spread to expect from an arbitrary mapping.
    """
    check_output(json_path, "--json")
    # Built-in patterns use one task per SPE, as many as the library takes.
    target = resolve(machine)  # read once, passed down to every layer
    spes = len(target.spes)
    if Path(pattern).suffix.lower() in (".json", ".csv") or Path(pattern).exists():
        pat = load_pattern(pattern)
    elif pattern in BUILTIN:
        k = tasks if tasks is not None else min(spes, MAX_TASKS)
        if k > MAX_TASKS:
            raise UsageError(
                f"--tasks {k}: the library takes at most {MAX_TASKS} tasks (a two-chip blade's SPEs)"
            )
        pat = builtin(pattern, k, packet)
    else:
        raise UsageError(f"pattern {pattern!r} is not a file nor one of {', '.join(BUILTIN)}")
    if pat.tasks > spes:
        raise UsageError(f"the pattern has {pat.tasks} tasks but {machine} has {spes} SPEs")
    n = count if count is not None else (1000 if pat.kind == "ring" else 200)
    var: Variation = Variation.off() if quiet else DEFAULTS
    res: dict[str, Any] = optimize(
        target,
        pat,
        count=n,
        packet=packet,
        top=top,
        budget=max(budget, top),
        sample=sample,
        runs=runs,
        seed=seed,
        variation=var,
        workers=workers,
        cluster=cluster,
    )
    if json_path == "-":
        sys.stdout.write(json.dumps(res, indent=1) + "\n")
        return
    if json_path:
        Path(json_path).write_text(json.dumps(res, indent=1) + "\n")
    scores = model_scores(target, pat, [parse_mapping(res["best"])], target.spes, packet)
    click.echo(
        f"{pat.name}: {pat.tasks} tasks, {len(pat.edges)} edges on {machine} (pinned), "
        f"{'transmissions' if pat.kind == 'ring' else 'iterations'} {n}, {packet} B packets"
    )
    click.echo(f"best mapping found:  {res['best']}  {res['best_ns'] / 1e3:,.1f} us simulated")
    click.echo(
        f"model's choice:      {res['model_best']}; best of its top {top} simulated: "
        f"{res['model_best_simulated']} {res['model_best_ns'] / 1e3:,.1f} us"
    )
    click.echo(
        f"spread over {sample} random mappings: {res['sample_min_ns'] / 1e3:,.1f} / "
        f"{res['sample_median_ns'] / 1e3:,.1f} / {res['sample_max_ns'] / 1e3:,.1f} us (min / median / max); "
        f"their mean is {res['sample_mean_over_best']:.3f}x the best found"
    )
    click.echo(
        f"simulated {res['simulated']} of {res['mappings']:,} mappings in {res['search_s']:.1f} s "
        f"(search), max segment load of the best: {scores[0][0]:,.0f} B per iteration"
    )
