"""``collective``: 8 SPEs, each both source and target (Kistler et al. 2006, Figure 6b).

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
each SPE's bytes over its own elapsed time.

Which SPE is "SPE i"? The paper warns that "SPEs with numerically consecutive
numbers might not be physically adjacent" and found "no performance difference
attributable to SPE location" for single transfers. Both readings run
(``numbering``): ``physical``, SPE i is physical SPE i (the numbers the
hardware and Linux give the SPEs: consecutive ones sit on opposite sides of
the rings, and every complement pair is exactly halfway round, which four
rings can carry two by two — the paper's "mapped to the four rings"); and
``random``, libspe-style seeded placements (``placements`` of them, default
10): ``aggregate_gbs`` is then their mean, with min/max/median and the best
and worst placement.

>>> from cellsim.experiments import collective
>>> [collective.target_of("transpose", i) for i in range(8)]
[0, 2, 4, 6, 1, 3, 5, 7]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

from .. import published as pub
from ..machine import Machine
from . import Experiment, Option, RunSettings, Table
from ._common import OPS, check_choices, save_figure
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

PATTERNS: tuple[str, ...] = ("complement", "pairwise", "uniform", "transpose", "neighbor", "bit-reverse")
SPES = 8
DEFAULT_COUNT = 512
FIGURE_6B: tuple[str, ...] = ("complement", "pairwise", "uniform")
"""The patterns Figure 6b shows; the others were "explored" beside them."""
NUMBERINGS: tuple[str, ...] = ("physical", "random")
DEFAULT_PLACEMENTS = 10
"""Random placements per point under the ``random`` numbering (Jiménez-González et al. 2007's 10 runs)."""

FIELDS = (
    "machine",
    "seed",
    "numbering",
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
        params: dict[str, Any] = {"put": op == "put", "size": DMA_SIZE, "count": count}
        t = target_of(pattern, s)
        if t is None:
            others = [o for o in range(SPES) if o != s]
            params.update(random=True, seed=seed * 16 + s + 1)
            params["eas"] = [Machine.ls_ea(o) + LS_TARGET for o in others]
        else:
            params["eas"] = [Machine.ls_ea(t) + LS_TARGET]
        loads.append(Load(s, "traffic", params, count * DMA_SIZE))
    return loads


def run(
    *,
    patterns: Iterable[str] = (),
    ops: Iterable[str] = (),
    numberings: Iterable[str] = (),
    placements: int | None = None,
    count: int | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Measures the aggregate bandwidth of collective patterns; one record per
    (numbering, pattern, op).
    """
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    patterns_ = check_choices("pattern", patterns, PATTERNS)
    ops_ = check_choices("op", ops, OPS)
    numberings_ = check_choices("numbering", numberings, NUMBERINGS)
    n_place = int(check_positive("placements", placements, DEFAULT_PLACEMENTS))
    n = int(check_positive("count", count, DEFAULT_COUNT))
    points = [(p, o) for p in patterns_ for o in ops_]
    records = []
    done = 0
    total = len(points) * sum(1 if nb == "physical" else n_place for nb in numberings_)

    def step(_done: int, _total: int) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    for numbering in numberings_:
        physical = numbering == "physical"
        seeds = placement_seeds(seed, 1 if physical else n_place)
        for (pattern, op), runs in run_on_placements(
            machine,
            points,
            seeds,
            lambda p, s: _loads(*p, n, s),
            native=native,
            progress=step,
            placement=list(range(SPES)) if physical else None,
        ):
            records.append(_record(runs, seed, numbering, pattern, op, n))
    return records


def _record(runs: Sequence[Any], seed: int, numbering: str, pattern: str, op: str, n: int) -> dict[str, Any]:
    summary = placement_summary(runs)
    return {
        "machine": runs[0].machine,
        "seed": seed,
        "numbering": numbering,
        "pattern": pattern,
        "op": op,
        "count": n,
        "targets": [target_of(pattern, s) for s in range(SPES)],
        "aggregate_gbs": summary["mean_gbs"],
        "per_spe_gbs": [runs[0].gbs[s] for s in range(SPES)],
        **summary,
        "transfers": sum(r.transfers for r in runs),
    }


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 6b of Kistler et al. 2006 against the records, under each numbering:
    pairwise gets at least as good as puts (put over get), the other static
    patterns "in the same aggregate-performance range" as the figure's
    (between its lowest and its highest pattern, same op), and the withheld
    complement, pairwise gap and uniform aggregates (simulated only)."""
    agg = {(r["numbering"], r["pattern"], r["op"]): r["aggregate_gbs"] for r in records}
    numberings = [nb for nb in NUMBERINGS if any(r["numbering"] == nb for r in records)]

    def both(nb: str, p: str) -> bool:
        return (nb, p, "put") in agg and (nb, p, "get") in agg

    def aggregate(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (f"{r['pattern']}, {r['op']} ({r['numbering']})", r["aggregate_gbs"], _placements_note(r))
            for r in records
            if pub.matches(e.where, r)
        ]

    def put_over_get(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (
                f"{p}: put / get ({nb})",
                agg[(nb, p, "put")] / agg[(nb, p, "get")],
                f"put {agg[(nb, p, 'put')]:.1f}, get {agg[(nb, p, 'get')]:.1f} GB/s",
            )
            for nb in numberings
            for p in PATTERNS
            if pub.matches(e.where, {"pattern": p}) and both(nb, p)
        ]

    def gap(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (f"{p}: get - put ({nb})", agg[(nb, p, "get")] - agg[(nb, p, "put")], "")
            for nb in numberings
            for p in PATTERNS
            if pub.matches(e.where, {"pattern": p}) and both(nb, p)
        ]

    def figure_range(r: dict[str, Any]) -> list[float]:
        return [
            v for (nb, p, o), v in agg.items() if nb == r["numbering"] and o == r["op"] and p in FIGURE_6B
        ]

    def lowest_over(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (
                f"{r['pattern']}, {r['op']} ({r['numbering']})",
                min(fig) / r["aggregate_gbs"],
                f"{r['aggregate_gbs']:.1f} GB/s; the figure's patterns {min(fig):.1f}-{max(fig):.1f}",
            )
            for r in records
            if pub.matches(e.where, r) and len(fig := figure_range(r)) == len(FIGURE_6B)
        ]

    def over_highest(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (
                f"{r['pattern']}, {r['op']} ({r['numbering']})",
                r["aggregate_gbs"] / max(fig),
                f"{r['aggregate_gbs']:.1f} GB/s; the figure's patterns {min(fig):.1f}-{max(fig):.1f}",
            )
            for r in records
            if pub.matches(e.where, r) and len(fig := figure_range(r)) == len(FIGURE_6B)
        ]

    return [
        *rows_for(EXPERIMENT.name, "put_over_get", put_over_get),
        *rows_for(EXPERIMENT.name, "figure_lowest_over", lowest_over),
        *rows_for(EXPERIMENT.name, "over_figure_highest", over_highest),
        *rows_for(EXPERIMENT.name, "aggregate_gbs", aggregate),
        *rows_for(EXPERIMENT.name, "get_minus_put_gbs", gap),
    ]


def _placements_note(r: dict[str, Any]) -> str:
    if r["placements"] <= 1:
        return f"placement {r['best_placement']}"
    return (
        f"{r['placements']} placements: {r['min_gbs']:.1f}-{r['max_gbs']:.1f} GB/s, "
        f"best {r['best_placement']}, worst {r['worst_placement']}"
    )


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Aggregate bandwidth by pattern (get and put), one table per numbering,
    with the spread over placements when there are several."""
    out = []
    for nb in NUMBERINGS:
        rs = [r for r in records if r["numbering"] == nb]
        if rs:
            out += _tables_of(nb, rs)
    return out


def _tables_of(numbering: str, records: Sequence[dict[str, Any]]) -> list[Table]:
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
        f"{r0['placements']} random placements from seed {r0['seed']}"
        if many
        else f"placement {r0['best_placement']}"
    )
    title = (
        f"{EXPERIMENT.name}: aggregate bandwidth of 8 SPEs, {numbering} numbering, {r0['machine']}, {where}"
    )
    out = [Table(title, cols, rows)]
    if many:
        out.append(
            Table(
                f"{EXPERIMENT.name}: best and worst placements (physical SPE of logical SPE 0..7)",
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
    side, one panel per numbering (min-max over placements as error bars),
    with the EIB peak."""
    from matplotlib.figure import Figure

    numberings = [nb for nb in NUMBERINGS if any(r["numbering"] == nb for r in records)] or ["physical"]
    fig = Figure(figsize=(7 * len(numberings), 6), layout="constrained")
    axes = fig.subplots(1, len(numberings), sharey=True, squeeze=False)[0]
    machine = records[0]["machine"] if records else "qs20-1chip"
    peak = eib_gbs(machine)
    for ax, nb in zip(axes, numberings, strict=True):
        _plot_panel(ax, [r for r in records if r["numbering"] == nb], peak)
        many = any(r["placements"] > 1 for r in records if r["numbering"] == nb)
        ax.set_title(f"{nb} numbering" + (" (mean, min-max over placements)" if many else ""))
    axes[0].set_ylabel("aggregate bandwidth (GB/s)")
    save_figure(
        fig,
        path,
        (
            f"Kistler et al., Figure 6b: collective patterns, 8 SPEs, 16 KB nonblocking DMAs, {machine} "
            "(simulated; the published aggregates are withheld)"
        ),
        legend=list(axes),
        ncol=3,
    )


def _plot_panel(ax: Any, records: Sequence[dict[str, Any]], peak: float) -> None:
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
    ax.axhline(
        peak, color="grey", linestyle=":", label=f"{peak:g} GB/s: EIB peak (one command per bus cycle)"
    )
    ax.set_xticks(range(len(pats)), pats, rotation=20)
    ax.set_ylim(0, peak * 1.12)
    ax.grid(True, axis="y", alpha=0.3)


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option("patterns", "choice", "communication pattern", PATTERNS, "--pattern", default=PATTERNS),
        Option("ops", "choice", "DMA direction", OPS, "--op", default=OPS),
        Option(
            "numberings",
            "choice",
            "which SPE is SPE i: physical numbering or random placement",
            NUMBERINGS,
            "--numbering",
            default=NUMBERINGS,
        ),
        Option(
            "placements",
            "int",
            "seeded random placements per point under --numbering random",
            default=DEFAULT_PLACEMENTS,
        ),
        Option("count", "int", "16 KB DMAs per SPE", default=DEFAULT_COUNT),
    ),
)
