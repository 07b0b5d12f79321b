"""``mapping``: the task-mapping explorer (seed 001, Figures 2-5).

Every one of the ``(k-1)!`` mappings of seed 001's ring with task 0 fixed on
SPE 0 (120 on ``ps3``, 5040 on ``qs20``/``qs22``), ``runs`` runs each (three,
as the paper), ranked by mean runtime. One record per mapping: ``mapping``
(``"[024531]"``), ``runs_ns`` (one runtime per run), ``mean_ns``, ``rank``,
``placements`` (the physical SPE of each task in each run) and the settings.
As the paper ran it, the mappings of one run share the run's placement of the
SPE contexts (``placement_per="mapping"`` draws one per mapping and run); on
a two-chip blade the contexts land on either chip (``contexts``).
The sweep runs on local worker processes or a Dask cluster (``cluster``) and
appends every finished run to a Parquet dataset (``out``, by default a file
per settings under ``~/.cache/cellsim/sweeps``), so ``resume`` finishes an
interrupted sweep without running anything twice.

The default of :data:`~cellsim.messaging.explorer.DEFAULT_TRANSMISSIONS`
transmissions per SPE (the paper: 10^7) is where the ranking stops changing
(``benches/mapping_steady.py``).

>>> from cellsim.experiments import mapping
>>> recs = mapping.run("ps3", transmissions=4, runs=1, workers=1, out=None, tasks=4)
>>> len(recs), recs[0]["rank"]
(6, 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any

from .. import published as pub
from ..messaging.explorer import DEFAULT_RUNS, DEFAULT_TRANSMISSIONS, explore, plot_ranks, summary
from ..sweep import fingerprint
from . import Experiment, Option, Table
from ._common import ProgressFn, compare_row
from ._messaging import (
    LIBRARY_OPTIONS,
    SWEEP_OPTIONS,
    VARIATION_OPTIONS,
    default_sweep_path,
    one_contexts,
    one_mode,
    variation_from,
)

__all__ = ["EXPERIMENT", "compare", "plot", "run", "tables"]

NAME = "mapping"
_AUTO = "auto"


def run(
    machine: str = "ps3",
    seed: int = 0,
    native: bool = True,
    progress: ProgressFn | None = None,
    *,
    mode: str | None = None,
    contexts: str | None = None,
    placement_per: str | None = None,
    mappings: int | None = None,
    packet: int | None = None,
    runs: int | None = None,
    transmissions: int | None = None,
    unidirectional: bool = False,
    tasks: int | None = None,
    buffers: int | None = None,
    poll_cycles: int | None = None,
    quiet: bool = False,
    no_skew: bool = False,
    no_phase: bool = False,
    no_os_noise: bool = False,
    no_hypervisor: bool = False,
    visible: Iterable[int] = (),
    hypervisor_spe: int | None = None,
    workers: int | None = None,
    cluster: Any = None,
    out: str | PathLike[str] | None = _AUTO,
    resume: bool = False,
) -> list[dict[str, Any]]:
    """Runs the explorer (see :func:`cellsim.messaging.explorer.explore`);
    ``out`` ``"auto"`` (the default) is a results file per settings in the
    sweep cache, ``None`` no file."""
    mode = one_mode(mode)
    ctx = one_contexts(contexts)
    per = placement_per or "run"
    var = variation_from(quiet, no_skew, no_phase, no_os_noise, no_hypervisor, visible, hypervisor_spe)
    settings: dict[str, Any] = {
        "machine": machine,
        "mode": mode,
        "packet": packet or 1024,
        "runs": runs or DEFAULT_RUNS,
        "transmissions": transmissions or DEFAULT_TRANSMISSIONS,
        "unidirectional": unidirectional,
        "tasks": tasks,
        "seed": seed,
        "variation": var.as_dict(),
        "buffers": buffers or 2,
        "poll_cycles": poll_cycles or 200,
        "native": native,
        "contexts": ctx,
        "placement_per": per,
        "mappings": mappings,
    }
    if out == _AUTO:
        out = default_sweep_path(NAME, fingerprint(settings))
    return explore(
        machine,
        mode=mode,
        packet=settings["packet"],
        runs=settings["runs"],
        transmissions=settings["transmissions"],
        unidirectional=unidirectional,
        tasks=tasks,
        seed=seed,
        variation=var,
        nbuf=settings["buffers"],
        poll_cycles=settings["poll_cycles"],
        native=native,
        contexts=ctx,
        placement_per=per,
        mappings=mappings,
        workers=workers,
        cluster=cluster,
        out=out,
        resume=resume,
        progress=progress,
    )


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v)
    return str(v)


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """The summary (seed 001's numbers), the ten best and the five worst mappings."""
    if not records:
        return []
    s = summary(records)
    r0 = records[0]
    head = (
        f"mapping: {r0['machine']} {r0['mode']}, {r0['packet']} B packets, "
        f"{r0['transmissions']} transmissions per SPE, {s['runs']} runs"
        + (", unidirectional" if r0.get("unidirectional") else "")
    )
    labels = {
        "mappings": "mappings",
        "best": "best mapping (by average)",
        "best_rank_in_runs": "its rank in each run",
        "worst": "worst mapping",
        "worst_over_best_mean": "worst / best, average runtime",
        "worst_over_best_single": "worst / best, single runs",
        "mean_of_all_over_best": "average of all / best (a random mapping)",
        "median_over_mean": "median / mean of the averages",
    }
    rows = [(labels[k], _fmt(s[k])) for k in labels]
    for label in ("identity", "intuitive1", "intuitive2"):
        if f"{label}_rank" in s:
            rows.append((f"{label} {s[label]}: rank", str(s[f"{label}_rank"])))
            rows.append((f"{label} {s[label]}: average / best", _fmt(s[f"{label}_over_best"])))
    summ = Table(head, ("", "simulated"), rows)
    cols = ("rank", "mapping", "average (ns)", "runs (ns)")

    def row(r: dict[str, Any]) -> tuple[str, ...]:
        return (
            str(r["rank"]),
            r["mapping"],
            f"{r['mean_ns']:,.0f}",
            " ".join(f"{x:,.0f}" for x in r["runs_ns"]),
        )

    best = Table("the ten best mappings", cols, [row(r) for r in records[:10]])
    worst = Table("the five worst mappings", cols, [row(r) for r in records[-5:]])
    return [summ, best, worst]


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Seed 001's statements about these records: the straight average curve
    (median over mean of the averages, visible) and the held-out ratios and
    ranks (simulated only)."""
    if not records:
        return []
    r0 = records[0]
    point = {k: r0.get(k) for k in ("machine", "mode", "packet", "unidirectional")}
    s = summary(records)
    rows = []
    for entry in pub.entries(experiment=NAME):
        if pub.matches(entry.where, point) and entry.quantity in s:
            name = f"{r0['machine']} {r0['mode']} {r0['packet']} B"
            rows.append(compare_row(entry, name, float(s[entry.quantity])))
    return rows


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Seed 001's rank plot (Figures 2-5): the average and each run against the rank."""
    plot_ranks(records, path)


EXPERIMENT = Experiment(
    name=NAME,
    title="Task-mapping explorer: every mapping of the ring, ranked",
    paper="001",
    figure="Figures 2-5",
    description=(
        "All (k-1)! mappings of Keller and Varbanescu's ring with task 0 fixed (120 on ps3, 5040 "
        "on an 8-SPE blade), "
        "--runs runs each (default 3), ranked by average runtime; worst/best ratios of the average and "
        "of single runs, a random mapping's cost, the identity mapping's rank. Sweeps run on all cores "
        "or a Dask cluster (--cluster) and resume (--resume) from their Parquet results."
    ),
    run=run,
    plot=plot,
    compare=compare,
    tables=tables,
    machine="ps3",
    measured_on=("ps3", "qs22"),
    options=(
        *LIBRARY_OPTIONS,
        Option("runs", "int", "runs per mapping (default 3, as the paper)"),
        Option(
            "placement_per",
            "str",
            "run (default, as the paper: every mapping of a run shares the run's placement) or "
            "mapping (each mapping and run draws its own)",
        ),
        Option("mappings", "int", "run a seeded sample of N mappings (with the identity) instead of all"),
        Option("tasks", "int", "tasks (default: every SPE of the machine)"),
        *VARIATION_OPTIONS,
        *SWEEP_OPTIONS,
    ),
)
