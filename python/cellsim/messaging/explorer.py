"""The task-mapping explorer: every mapping of a pattern, ranked.

:func:`explore` runs all ``(k-1)!`` mappings of ``k`` tasks with task 0 fixed
on SPE 0, ``runs`` runs each (Keller and Varbanescu 2010 did three), through the sweep runner
(:mod:`cellsim.sweep`: local processes or Dask, resumable Parquet results),
and ranks them by mean runtime. As in Keller and Varbanescu 2010's benchmark, a run starts its
threads once and runs every mapping on them: all mappings of run ``r`` share
the run's placement (:func:`~cellsim.messaging.simulate.run_placement`, a hash
of the base seed, machine, mode, pattern and ``r``); ``placement_per="mapping"``
draws one per (mapping, run) instead (the definition before). Each point's
other random choices come from a hash of the base seed, the machine, the
mode, the mapping and the run number, so the same seed gives the same
ranking however the sweep is run.

:func:`summary` gives the numbers Keller and Varbanescu 2010 discusses: the worst-over-best
ratios of the mean and of single runs, the mean of all mappings over the best
(what a random mapping costs), and the rank and ratio of the identity mapping
and of the "intuitive" ones.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import Any

from ..exceptions import UsageError
from ..machine import machine_digest
from ..spec import MachineLike, MachineSpec, RunOptions
from .patterns import Pattern, builtin, format_mapping, parse_mapping, ring_pattern
from .simulate import (
    DEFAULTS,
    MODES,
    PLACEMENT_PER,
    Variation,
    check_contexts,
    default_contexts,
    point_seed,
    run_placement,
    simulate,
)
from .target import Target, resolve

__all__ = [
    "DEFAULT_RUNS",
    "DEFAULT_TRANSMISSIONS",
    "INTUITIVE",
    "all_mappings",
    "explore",
    "plot_ranks",
    "run_point",
    "summary",
]

DEFAULT_TRANSMISSIONS = 1000
"""Transmissions per SPE of the explorer (Keller and Varbanescu 2010: 10^7). Chosen where the
ranking has stopped changing (``benches/mapping_steady.py``, docs/messaging.md)."""

DEFAULT_RUNS = 3
"""Runs per mapping (Keller and Varbanescu 2010 did three)."""

INTUITIVE = {
    6: ("[024531]",),
    8: ("[02467531]", "[01357642]"),
}
"""The mappings Keller and Varbanescu 2010 names as the ones one would choose intuitively."""


def all_mappings(k: int) -> list[tuple[int, ...]]:
    """The ``(k-1)!`` mappings of ``k`` tasks with task 0 on SPE 0, in lexicographic order."""
    return [(0, *p) for p in itertools.permutations(range(1, k))]


PAPER_TASKS = 8
"""Keller and Varbanescu 2010's ring: "k = 6 threads on a Playstation 3 ... and k = 8 threads on
a Cell blade": one task per SPE of a chip, at most 8."""

EXHAUSTIVE_TASKS = 8
"""Most tasks whose mappings are all run (7! = 5040); beyond, give a sample."""


def chosen_mappings(k: int, n: int | None, seed: int) -> list[tuple[int, ...]]:
    """All mappings of ``k`` tasks (``n`` None), or a seeded sample of ``n``
    of them that holds the identity and Keller and Varbanescu 2010's intuitive mappings, in
    lexicographic order."""
    if n is None:
        if k > EXHAUSTIVE_TASKS:
            raise UsageError(
                f"{k} tasks have {math.factorial(k - 1):,} mappings: give --mappings N to run a sample"
            )
        return all_mappings(k)
    if n < 1:
        raise UsageError(f"mappings {n} must be at least 1")
    named = [tuple(range(k))] + [parse_mapping(m) for m in INTUITIVE.get(k, ())]
    total = math.factorial(k - 1)
    if n >= total and k <= EXHAUSTIVE_TASKS:
        return all_mappings(k)
    rng = random.Random(point_seed(seed, "mappings", k, n))
    chosen = set(named[: min(n, len(named))])
    while len(chosen) < min(n, total):
        rest = list(range(1, k))
        rng.shuffle(rest)
        chosen.add((0, *rest))
    return sorted(chosen)


def run_point(point: dict[str, Any]) -> dict[str, Any]:
    """One run of one mapping (the sweep's point function)."""
    pattern = _pattern(point)
    var = Variation(**{**point["variation"], "visible": _tuple(point["variation"].get("visible"))})
    spec = MachineSpec.of(point["machine"], point.get("overrides", ()))
    rec = simulate(
        spec.running(point.get("run_options", spec.run)),
        pattern,
        tuple(point["mapping"]),
        count=point["count"],
        mode=point["mode"],
        seed=point["seed"],
        variation=var,
        packet=point["packet"],
        nbuf=point["nbuf"],
        poll_cycles=point["poll_cycles"],
        native=point.get("native", True),
        traffic=False,
        contexts=point.get("contexts"),
        placement=point.get("placement"),
        start_skew=point.get("start_skew", True),
    )
    return {
        "mapping": rec["mapping"],
        "run": point["run"],
        "seed": point["seed"],
        "runtime_ns": rec["runtime_ns"],
        "placement": rec["placement"],
        "bytes_ok": rec["bytes_ok"],
    }


def _tuple(v: Any) -> tuple[int, ...] | None:
    return None if v is None else tuple(int(x) for x in v)


def _pattern(point: dict[str, Any]) -> Pattern:
    if point["pattern"] in ("ring", "ring-uni"):
        return ring_pattern(point["tasks"], point["pattern"] == "ring-uni", point["packet"])
    if "edges" in point:
        return Pattern(point["pattern"], point["tasks"], tuple(tuple(e) for e in point["edges"]))  # type: ignore[misc]
    return builtin(point["pattern"], point["tasks"], point["packet"])


def make_points(
    machine: MachineLike | Target,
    pattern: Pattern,
    mappings: Sequence[Sequence[int]],
    *,
    runs: int,
    count: int,
    mode: str,
    seed: int,
    variation: Variation,
    packet: int,
    nbuf: int,
    poll_cycles: int,
    native: bool = True,
    contexts: str | None = None,
    placement_per: str = "run",
) -> list[dict[str, Any]]:
    """The sweep's points: one per (mapping, run); with ``placement_per``
    ``run`` each carries its run's placement."""
    if placement_per not in PLACEMENT_PER:
        raise UsageError(f"placement per {placement_per!r} is not one of {', '.join(PLACEMENT_PER)}")
    target = resolve(machine)
    ctx = check_contexts(contexts) if contexts is not None else default_contexts(target, mode)
    visible = target.visible(variation.visible)
    per_run = [
        run_placement(target, mode, ctx, seed=seed, pattern=pattern.name, run=r, visible=visible)
        for r in range(runs)
    ]
    base: dict[str, Any] = {
        "machine": target.name,
        "overrides": list(target.spec.overrides),
        "pattern": pattern.name,
        "tasks": pattern.tasks,
        "count": count,
        "mode": mode,
        "variation": variation.as_dict(),
        "packet": packet,
        "nbuf": nbuf,
        "poll_cycles": poll_cycles,
        "native": native,
        "contexts": ctx,
        "placement_per": placement_per,
        # Keller and Varbanescu 2010's threads start once per run and go from one mapping to the next as they
        # finish, kept within a transmission of each other by the ring itself: only the first
        # mapping of a run sees the contexts' start-up skew, and over 10^7 transmissions that is
        # nothing. Over the explorer's shorter runs it would be several percent of the first
        # mapping's time, so with the per-run placement no mapping starts skewed.
        "start_skew": placement_per == "mapping",
    }
    if target.spec.run != RunOptions():
        # the run's options travel with each point to the worker that runs it (they change no result)
        base["run_options"] = target.spec.run
    if pattern.kind != "ring" and pattern.name not in ("pairs", "all-to-all"):
        base["edges"] = [list(e) for e in pattern.edges]
    pts = []
    for mp in mappings:
        name = format_mapping(list(mp))
        for r in range(runs):
            pt = {
                **base,
                "mapping": list(mp),
                "run": r,
                "seed": point_seed(seed, target.name, mode, pattern.name, name, r),
            }
            if placement_per == "run":
                pt["placement"] = per_run[r]
            pts.append(pt)
    return pts


def settings_of(points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What a sweep's results depend on besides each point's mapping and run."""
    if not points:
        return {}
    skip = ("mapping", "run", "seed", "placement", "run_options")
    settings = {k: v for k, v in points[0].items() if k not in skip}
    if isinstance(settings.get("machine"), str):
        # the machine as resolved (file contents, bases, overrides), not only its name:
        # an edited machine file must not resume a sweep made with the old one
        overrides = settings.get("overrides") or ()
        settings["machine_digest"] = machine_digest(settings["machine"], overrides)
    return settings


def point_key(p: dict[str, Any]) -> str:
    """A point's key in the results file: mapping and run."""
    return f"{format_mapping(p['mapping'])}#{p['run']}"


def explore(
    machine: MachineLike | Target = "ps3",
    *,
    mode: str = "pinned",
    packet: int = 1024,
    runs: int = DEFAULT_RUNS,
    transmissions: int = DEFAULT_TRANSMISSIONS,
    unidirectional: bool = False,
    tasks: int | None = None,
    seed: int = 0,
    variation: Variation = DEFAULTS,
    nbuf: int = 2,
    poll_cycles: int = 200,
    native: bool = True,
    contexts: str | None = None,
    placement_per: str = "run",
    mappings: int | None = None,
    workers: int | None = None,
    cluster: Any = None,
    out: str | PathLike[str] | None = None,
    resume: bool = False,
    progress: Any = None,
) -> list[dict[str, Any]]:
    """Runs every mapping of Keller and Varbanescu 2010's ring ``runs`` times and ranks them.

    Returns one record per mapping, best first: ``mapping`` (``"[024531]"``),
    ``runs_ns`` (one runtime per run), ``mean_ns``, ``rank`` (1 = best), and
    the settings. See :func:`cellsim.messaging.simulate` for the arguments;
    ``placement_per`` is ``run`` (Keller and Varbanescu 2010's benchmark: the mappings of a run
    share its placement) or ``mapping``; ``mappings`` runs a seeded sample of
    that many mappings (with the identity and the intuitive ones) instead of
    all; ``workers``, ``cluster``, ``out`` and ``resume`` go to
    :func:`cellsim.sweep.run_sweep`.
    """
    from ..sweep import run_sweep

    if mode not in MODES:
        raise UsageError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if runs < 1:
        raise UsageError(f"runs must be at least 1, not {runs}")
    if transmissions < 2:
        raise UsageError(
            f"transmissions {transmissions}: each task starts two packets, so it needs at least 2"
        )
    target = resolve(machine)
    visible = target.visible(variation.visible)
    k = tasks if tasks is not None else min(len(visible), PAPER_TASKS)
    if k > len(visible):
        raise UsageError(f"{k} tasks but {target.name} has {len(visible)} SPEs for them")
    pattern = ring_pattern(k, unidirectional, packet)
    points = make_points(
        target,
        pattern,
        chosen_mappings(k, mappings, seed),
        runs=runs,
        count=transmissions,
        mode=mode,
        seed=seed,
        variation=variation,
        packet=packet,
        nbuf=nbuf,
        poll_cycles=poll_cycles,
        native=native,
        contexts=contexts,
        placement_per=placement_per,
    )
    # A trial run of the first point catches bad settings before the sweep starts (it is not
    # the run to trace).
    if points:
        run_point({**points[0], "count": 2, "run_options": replace(target.spec.run, trace=None)})
    results = run_sweep(
        run_point,
        points,
        key=point_key,
        out=None if out is None else Path(out),
        resume=resume,
        workers=workers,
        cluster=cluster,
        progress=progress,
        settings={**settings_of(points), "base_seed": seed},
    )
    return rank(
        results,
        machine=target.name,
        mode=mode,
        packet=packet,
        transmissions=transmissions,
        unidirectional=unidirectional,
        seed=seed,
        contexts=points[0]["contexts"] if points else contexts,
        placement_per=placement_per,
    )


def rank(results: Sequence[dict[str, Any]], **settings: Any) -> list[dict[str, Any]]:
    """Groups per-run results by mapping and ranks the mappings by mean runtime
    (ties by mapping name)."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by.setdefault(r["mapping"], []).append(r)
    recs = []
    for name, rs in by.items():
        rs = sorted(rs, key=lambda r: r["run"])
        runs_ns = [float(r["runtime_ns"]) for r in rs]
        recs.append(
            {
                "mapping": name,
                "runs_ns": runs_ns,
                "mean_ns": statistics.fmean(runs_ns),
                "placements": [r["placement"] for r in rs],
                **settings,
            }
        )
    recs.sort(key=lambda r: (r["mean_ns"], r["mapping"]))
    for i, r in enumerate(recs, 1):
        r["rank"] = i
    return recs


def identity(k: int) -> str:
    """The identity mapping's name, ``[012345]``."""
    return format_mapping(list(range(k)))


def summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Keller and Varbanescu 2010's numbers for a ranking (records from :func:`explore`):
    worst/best of the means and of single runs, mean of all over the best,
    median over mean of the means, the best mapping and its rank in each run,
    and rank and ratio to the best of the identity and intuitive mappings."""
    if not records:
        raise UsageError("no mappings to summarise")
    means = [r["mean_ns"] for r in records]
    singles = [x for r in records for x in r["runs_ns"]]
    best = records[0]
    nruns = len(best["runs_ns"])
    run_ranks = []
    for i in range(nruns):
        order = sorted(records, key=lambda r: (r["runs_ns"][i], r["mapping"]))
        run_ranks.append(1 + next(n for n, r in enumerate(order) if r["mapping"] == best["mapping"]))
    k = len(best["mapping"].strip("[]")) if "," not in best["mapping"] else best["mapping"].count(",") + 1
    by = {r["mapping"]: r for r in records}
    named = {"identity": identity(k)}
    for n, mp in enumerate(INTUITIVE.get(k, ()), 1):
        named[f"intuitive{n}"] = mp
    out: dict[str, Any] = {
        "mappings": len(records),
        "runs": nruns,
        "best": best["mapping"],
        "best_mean_ns": best["mean_ns"],
        "best_rank_in_runs": run_ranks,
        "worst": records[-1]["mapping"],
        "worst_over_best_mean": max(means) / min(means),
        "worst_over_best_single": max(singles) / min(singles),
        "mean_of_all_over_best": statistics.fmean(means) / min(means),
        "median_over_mean": statistics.median(means) / statistics.fmean(means),
    }
    out.update(_spread(records, run_ranks))
    total = math.factorial(k - 1)
    for label, mp in named.items():
        r = by.get(mp)
        if r is not None:
            out[f"{label}"] = mp
            out[f"{label}_rank"] = r["rank"]
            out[f"{label}_rank_of_all"] = rank_of_all(r["rank"], len(records), total)
            out[f"{label}_over_best"] = r["mean_ns"] / min(means)
    return out


def _spread(records: Sequence[dict[str, Any]], best_ranks: Sequence[int]) -> dict[str, float]:
    """How the single runs stray: the best mapping's ranks over the runs (max -
    min, % of the mappings), the worst run rank of the top two (% of the
    mappings), the runs' mean distance from their average (%), the 90th
    percentile of the averages over the best."""
    n = len(records)
    nruns = len(records[0]["runs_ns"])
    top_two = [r["mapping"] for r in records[:2]]
    worst_top = 0
    for i in range(nruns):
        order = sorted(records, key=lambda r: (r["runs_ns"][i], r["mapping"]))
        for pos, r in enumerate(order, 1):
            if r["mapping"] in top_two:
                worst_top = max(worst_top, pos)
    means = sorted(r["mean_ns"] for r in records)
    return {
        "best_run_rank_spread_pct": 100.0 * (max(best_ranks) - min(best_ranks)) / n,
        "top_two_worst_run_rank_pct": 100.0 * worst_top / n,
        "stray_pct": 100.0
        * statistics.fmean(abs(x - r["mean_ns"]) / r["mean_ns"] for r in records for x in r["runs_ns"]),
        "p90_over_best": means[min(n - 1, int(0.9 * (n - 1) + 0.5))] / means[0],
        "mean_of_means_ns": statistics.fmean(means),
    }


def rank_of_all(rank: int, ranked: int, total: int) -> int:
    """A rank among ``ranked`` mappings (a sample) as the rank it estimates
    among all ``total``: the share of the others that beat it, scaled."""
    if ranked >= total or ranked < 2:
        return rank
    return 1 + round((rank - 1) * (total - 1) / (ranked - 1))


def plot_ranks(records: Sequence[dict[str, Any]], path: str | PathLike[str], title: str = "") -> None:
    """Keller and Varbanescu 2010's rank plot: the mean runtime and each run's runtime against
    the rank of the mean, with the summary numbers beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = summary(records)
    ranks = [r["rank"] for r in records]
    fig, ax = plt.subplots(figsize=(10, 5.2), layout="constrained")
    for i in range(s["runs"]):
        ax.plot(ranks, [r["runs_ns"][i] / 1e6 for r in records], lw=0.7, alpha=0.7, label=f"run {i + 1}")
    ax.plot(ranks, [r["mean_ns"] / 1e6 for r in records], color="black", lw=2, label="average")
    ax.set_xlabel("rank (by average runtime)")
    ax.set_ylabel("runtime (simulated ms)")
    r0 = records[0]
    ax.set_title(
        title
        or f"{r0.get('machine', '')} {r0.get('mode', '')}, {r0.get('packet', '')} B packets, "
        f"{r0.get('transmissions', '')} transmissions per SPE"
        + (", unidirectional" if r0.get("unidirectional") else "")
    )
    lines = [
        f"worst/best: mean {s['worst_over_best_mean']:.3f}, single run {s['worst_over_best_single']:.3f}",
        f"mean of all / best: {s['mean_of_all_over_best']:.3f}",
        f"best {s['best']}, its rank in each run: {s['best_rank_in_runs']}",
    ]
    for label in ("identity", "intuitive1", "intuitive2"):
        if f"{label}_rank" in s:
            lines.append(f"{label} {s[label]}: rank {s[f'{label}_rank']}, x{s[f'{label}_over_best']:.3f}")
    ax.text(
        0.02,
        0.98,
        "\n".join(lines),
        transform=ax.transAxes,
        va="top",
        fontsize=8,
        family="monospace",
        bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "#ccc"},
    )
    ax.legend(loc="lower right", fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse(mapping: str, tasks: int) -> tuple[int, ...]:
    """:func:`cellsim.messaging.patterns.parse_mapping` (re-exported for the CLI)."""
    return parse_mapping(mapping, tasks)
