"""``collective``: 8 SPEs, each both source and target (seed 000, Figure 6b).

Every logical SPE ``i`` issues ``count`` nonblocking 16 KB gets from (or puts
to) the local store of its target SPE (the ``traffic`` kernel), with target:

``complement``   ``7 - i`` (the 3-bit id complemented);
``pairwise``     ``i ^ 1`` (pairs ``<i, i+1>`` for even ``i``);
``uniform``      a random SPE among the 7 others for every DMA;
``transpose``    the id's high and low halves swapped: ``(b2 | b1 b0) -> (b1 b0 | b2)``,
                 i.e. ``((i << 1) | (i >> 2)) & 7``, the transpose of a 2 x 4 matrix of
                 SPEs stored by rows (with 3 bits the halves have 1 and 2 bits);
``neighbor``     ``(i + 1) % 8``;
``bit-reverse``  the 3 bits reversed.

Transpose (SPEs 0 and 7) and bit-reverse (0, 2, 5, 7) map some SPEs to
themselves: those SPEs access their own local store through its EA mapping,
over the EIB like the others. The aggregate bandwidth is the sum over SPEs of
each SPE's bytes over its own elapsed time. With ``placements`` N > 1 each
point runs on N seeded logical-to-physical placements; ``aggregate_gbs`` is
then their mean, with min/max/median and the best and worst placement.

>>> from cellsim.experiments import collective
>>> [collective.target_of("transpose", i) for i in range(8)]
[0, 2, 4, 6, 1, 3, 5, 7]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any

from .. import published as pub
from ..machine import Machine
from . import Experiment, Option, Table
from ._common import OPS, ProgressFn, check_choices, figure_legend
from ._contention import (
    DMA_SIZE,
    LS_TARGET,
    PLACEMENT_FIELDS,
    Load,
    check_positive,
    eib_gbs,
    placement_seeds,
    placement_summary,
    rows_for,
    run_on_placements,
)

__all__ = ["EXPERIMENT", "FIELDS", "PATTERNS", "compare", "plot", "run", "tables", "target_of"]

NAME = "collective"
PATTERNS: tuple[str, ...] = ("complement", "pairwise", "uniform", "transpose", "neighbor", "bit-reverse")
SPES = 8
DEFAULT_COUNT = 512

FIELDS = (
    "machine",
    "seed",
    "pattern",
    "op",
    "count",
    "targets",
    "aggregate_gbs",
    "per_spe_gbs",
    *PLACEMENT_FIELDS,
    "transfers",
)


def target_of(pattern: str, spe: int) -> int | None:
    """The target SPE of logical SPE ``spe`` (0-7) in a static ``pattern``;
    None for ``uniform`` (a random target per DMA)."""
    if pattern == "complement":
        return 7 - spe
    if pattern == "pairwise":
        return spe ^ 1
    if pattern == "neighbor":
        return (spe + 1) % SPES
    if pattern == "transpose":
        return ((spe << 1) | (spe >> 2)) & 7
    if pattern == "bit-reverse":
        return int(f"{spe:03b}"[::-1], 2)
    if pattern == "uniform":
        return None
    raise ValueError(f"unknown pattern {pattern!r}")


def _loads(pattern: str, op: str, count: int, seed: int) -> list[Load]:
    loads = []
    for s in range(SPES):
        params: dict[str, int] = {"put": int(op == "put"), "size": DMA_SIZE, "count": count}
        t = target_of(pattern, s)
        if t is None:
            others = [o for o in range(SPES) if o != s]
            params.update(targets=len(others), random=1, seed=seed * 16 + s + 1)
            params.update({f"ea{k}": Machine.ls_ea(o) + LS_TARGET for k, o in enumerate(others)})
        else:
            params.update(targets=1, ea0=Machine.ls_ea(t) + LS_TARGET)
        loads.append(Load(s, "traffic", params, count * DMA_SIZE))
    return loads


def run(
    machine: str = "qs20",
    seed: int = 0,
    native: bool = True,
    progress: ProgressFn | None = None,
    *,
    patterns: Iterable[str] = (),
    ops: Iterable[str] = (),
    placements: int | None = None,
    count: int | None = None,
) -> list[dict[str, Any]]:
    """Measures the aggregate bandwidth of collective patterns; one record per (pattern, op).

    Args:
        machine: machine name or TOML path.
        seed: seed of the first placement (placement ``k`` uses seed ``seed + k``)
            and of the uniform pattern's random targets.
        native: run the native kernels, else their Python twins.
        progress: ``progress(done, total)`` after each run.
        patterns: some of :data:`PATTERNS` (default all).
        ops: ``get`` and/or ``put`` (default both).
        placements: logical-to-physical placements per point (default 1: the seed's).
        count: 16 KB DMAs per SPE (default 512).
    """
    patterns_ = check_choices("pattern", patterns, PATTERNS)
    ops_ = check_choices("op", ops, OPS)
    n_place = int(check_positive("placements", placements, 1))
    n = int(check_positive("count", count, DEFAULT_COUNT))
    seeds = placement_seeds(seed, n_place)
    points = [(p, o) for p in patterns_ for o in ops_]
    records = []
    for (pattern, op), runs in run_on_placements(
        machine, points, seeds, lambda p, s: _loads(*p, n, s), native=native, progress=progress
    ):
        summary = placement_summary(runs)
        records.append(
            {
                "machine": runs[0].machine,
                "seed": seed,
                "pattern": pattern,
                "op": op,
                "count": n,
                "targets": [target_of(pattern, s) for s in range(SPES)],
                "aggregate_gbs": summary["mean_gbs"],
                "per_spe_gbs": [runs[0].gbs[s] for s in range(SPES)],
                **summary,
                "transfers": sum(r.transfers for r in runs),
            }
        )
    return records


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 6b of seed 000 against the records: pairwise gets at least as
    good as puts (put over get), the other static patterns in uniform's range
    (aggregate over uniform's, same op), and the held-out complement, pairwise
    gap and uniform aggregates (simulated only)."""
    agg = {(r["pattern"], r["op"]): r["aggregate_gbs"] for r in records}

    def aggregate(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (f"{r['pattern']}, {r['op']}", r["aggregate_gbs"], _placements_note(r))
            for r in records
            if pub.matches(e.where, r)
        ]

    def put_over_get(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (
                f"{p}: put / get",
                agg[(p, "put")] / agg[(p, "get")],
                f"put {agg[(p, 'put')]:.1f}, get {agg[(p, 'get')]:.1f} GB/s",
            )
            for p in PATTERNS
            if pub.matches(e.where, {"pattern": p}) and (p, "put") in agg and (p, "get") in agg
        ]

    def gap(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (f"{p}: get - put", agg[(p, "get")] - agg[(p, "put")], "")
            for p in PATTERNS
            if pub.matches(e.where, {"pattern": p}) and (p, "put") in agg and (p, "get") in agg
        ]

    def over_uniform(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (
                f"{r['pattern']}, {r['op']}",
                r["aggregate_gbs"] / agg[("uniform", r["op"])],
                f"uniform {agg[('uniform', r['op'])]:.1f} GB/s",
            )
            for r in records
            if pub.matches(e.where, r) and ("uniform", r["op"]) in agg
        ]

    return [
        *rows_for(NAME, "put_over_get", put_over_get),
        *rows_for(NAME, "over_uniform", over_uniform),
        *rows_for(NAME, "aggregate_gbs", aggregate),
        *rows_for(NAME, "get_minus_put_gbs", gap),
    ]


def _placements_note(r: dict[str, Any]) -> str:
    if r["placements"] <= 1:
        return f"placement {r['best_placement']}"
    return (
        f"{r['placements']} placements: {r['min_gbs']:.1f}-{r['max_gbs']:.1f} GB/s, "
        f"best {r['best_placement']}, worst {r['worst_placement']}"
    )


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Aggregate bandwidth by pattern (get and put), with the spread over
    placements when there are several."""
    if not records:
        return []
    by = {(r["pattern"], r["op"]): r for r in records}
    pats = [p for p in PATTERNS if any(r["pattern"] == p for r in records)]
    ops = [o for o in OPS if any(r["op"] == o for r in records)]
    many = any(r["placements"] > 1 for r in records)
    cols = ["pattern", "targets"]
    for o in ops:
        cols.append(f"{o} GB/s")
        if many:
            cols += [f"{o} min", f"{o} max"]
    rows = []
    for p in pats:
        first = next(r for r in records if r["pattern"] == p)
        tg = "random" if p == "uniform" else " ".join(str(t) for t in first["targets"])
        cells = [p, tg]
        for o in ops:
            r = by.get((p, o))
            cells.append("" if r is None else f"{r['aggregate_gbs']:.2f}")
            if many:
                cells += ["", ""] if r is None else [f"{r['min_gbs']:.2f}", f"{r['max_gbs']:.2f}"]
        rows.append(cells)
    r0 = records[0]
    where = (
        f"{r0['placements']} placements from seed {r0['seed']}"
        if many
        else f"placement {r0['best_placement']}"
    )
    out = [Table(f"{NAME}: aggregate bandwidth of 8 SPEs, {r0['machine']}, {where}", cols, rows)]
    if many:
        out.append(
            Table(
                f"{NAME}: best and worst placements (physical SPE of logical SPE 0..7)",
                ["pattern", "op", "best", "GB/s", "worst", "GB/s"],
                [
                    [
                        r["pattern"],
                        r["op"],
                        str(r["best_placement"]),
                        f"{r['max_gbs']:.2f}",
                        str(r["worst_placement"]),
                        f"{r['min_gbs']:.2f}",
                    ]
                    for r in records
                ],
            )
        )
    return out


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figure 6b: aggregate bandwidth of each pattern, gets and puts side by
    side (min-max over placements as error bars), with the EIB peak."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 6), layout="constrained")
    ax = fig.subplots()
    machine = records[0]["machine"] if records else "qs20"
    pats = [p for p in PATTERNS if any(r["pattern"] == p for r in records)]
    colors = {"get": "tab:blue", "put": "tab:orange"}
    width = 0.38
    for j, op in enumerate(OPS):
        pts = [next((r for r in records if r["pattern"] == p and r["op"] == op), None) for p in pats]
        xs = [i + (j - 0.5) * width for i, r in enumerate(pts) if r is not None]
        rs = [r for r in pts if r is not None]
        if not rs:
            continue
        ys = [r["aggregate_gbs"] for r in rs]
        err = [
            [y - r["min_gbs"] for y, r in zip(ys, rs, strict=True)],
            [r["max_gbs"] - y for y, r in zip(ys, rs, strict=True)],
        ]
        ax.bar(
            xs,
            ys,
            width,
            color=colors[op],
            label=f"simulated {op}",
            yerr=err if any(r["placements"] > 1 for r in rs) else None,
            capsize=3,
        )
        for x, y in zip(xs, ys, strict=True):
            ax.annotate(f"{y:.0f}", (x, y), ha="center", va="bottom", fontsize=8)
    peak = eib_gbs(machine)
    ax.axhline(
        peak, color="grey", linestyle=":", label=f"{peak:g} GB/s: EIB peak (one command per bus cycle)"
    )
    ax.set_xticks(range(len(pats)), pats)
    ax.set(ylabel="aggregate bandwidth (GB/s)", title=f"collective patterns, 8 SPEs, {machine}")
    ax.set_ylim(0, peak * 1.12)
    ax.grid(True, axis="y", alpha=0.3)
    figure_legend(fig, [ax], ncol=3)
    fig.suptitle(
        "seed 000, Figure 6b: collective patterns, 16 KB nonblocking DMAs (simulated; "
        "the published aggregates are held out)"
    )
    fig.savefig(path, dpi=100)


EXPERIMENT = Experiment(
    name=NAME,
    title="Collective patterns: 8 SPEs, each source and target",
    paper="000",
    figure="Figure 6b",
    description=(
        "8 SPEs each issue nonblocking 16 KB gets or puts to another SPE's local store: complement "
        "(7-i), pairwise (i^1), uniform (a random other SPE per DMA), transpose (id halves swapped, "
        "((i<<1)|(i>>2))&7), neighbor (i+1) and bit-reverse; aggregate = sum over SPEs. "
        "--placements N runs each point on N seeded placements."
    ),
    run=run,
    plot=plot,
    compare=compare,
    tables=tables,
    options=(
        Option("patterns", "choice", "communication pattern (default all)", PATTERNS, "--pattern"),
        Option("ops", "choice", "DMA direction (default both)", OPS, "--op"),
        Option("placements", "int", "seeded logical-to-physical placements per point (default 1)"),
        Option("count", "int", f"16 KB DMAs per SPE (default {DEFAULT_COUNT})"),
    ),
)
