"""``hotspot``: many SPEs against main memory or one local store (Kistler et al. 2006, Figure 6a).

``spes`` SPEs each issue ``count`` nonblocking 16 KB gets or puts (one wait at
the end, the ``traffic`` kernel) to main memory (each SPE its own buffer) or
to the local store of logical SPE 0, the hot SPE. As in the paper, the SPE
count includes the hot SPE: with ``x`` SPEs, the hot SPE and ``x - 1``
partners all access the hot SPE's local store (the hot SPE through its own
EA mapping, over the EIB like the others). The aggregate bandwidth is the sum
over SPEs of each SPE's bytes over its own elapsed time.

>>> from cellsim.experiments import hotspot
>>> r = hotspot.run(targets=["ls"], ops=["get"], spes=[2], count=64)[0]
>>> round(r["aggregate_gbs"], 1), len(r["per_spe_gbs"])
(25.6, 2)
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any, Unpack

from .. import published as pub
from ..machine import Machine
from . import Experiment, Option, RunSettings, Table
from ._common import OPS, TARGETS, check_choices, draw_published_span, label, measure_each, save_figure
from ._contention import (
    DMA_SIZE,
    LS_TARGET,
    Load,
    check_positive,
    check_spes,
    port_gbs,
    rows_for,
    run_kernels,
)

__all__ = ["EXPERIMENT", "FIELDS", "compare", "plot", "run", "tables"]

SPES: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
DEFAULT_COUNT = 512
"""16 KB DMAs per SPE: 8 MB each, about 2.6 ms with 8 SPEs sharing 25.6 GB/s."""

FIELDS = (
    "machine",
    "seed",
    "target",
    "op",
    "spes",
    "count",
    "aggregate_gbs",
    "per_spe_gbs",
    "placement",
    "transfers",
)


def run(
    *,
    targets: Iterable[str] = (),
    ops: Iterable[str] = (),
    spes: Iterable[int] = (),
    count: int | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Measures the hot-spot aggregate bandwidth; one record per (target, op, SPE count)."""
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    targets_ = check_choices("target", targets, TARGETS)
    ops_ = check_choices("op", ops, OPS)
    spes_ = check_spes(spes, SPES, 1, 8, "SPE count")
    n = int(check_positive("count", count, DEFAULT_COUNT))
    points = [(t, o, x) for t in targets_ for o in ops_ for x in spes_]

    def point(p: tuple[str, str, int]) -> dict[str, Any]:
        target, op, x = p
        params = {"put": op == "put", "size": DMA_SIZE, "count": n}
        if target == "ls":
            ea = Machine.ls_ea(0) + LS_TARGET
            loads = [Load(s, "traffic", {**params, "eas": [ea]}, n * DMA_SIZE) for s in range(x)]
            res = run_kernels(machine, seed, loads, native=native)
        else:

            def setup(m: Machine, x: int = x, params: dict[str, Any] = params) -> list[Load]:
                return [
                    Load(s, "traffic", {**params, "eas": [int(m.alloc(DMA_SIZE))]}, n * DMA_SIZE)
                    for s in range(x)
                ]

            res = run_kernels(machine, seed, [], native=native, setup=setup)
        return {
            "machine": res.machine,
            "seed": seed,
            "target": target,
            "op": op,
            "spes": x,
            "count": n,
            "aggregate_gbs": res.aggregate_gbs,
            "per_spe_gbs": [res.gbs[s] for s in range(x)],
            "placement": res.placement,
            "transfers": res.transfers,
        }

    return measure_each(points, point, progress)


def _agg(records: Sequence[dict[str, Any]], where: Mapping[str, Any]) -> dict[tuple[str, str, int], float]:
    return {(r["target"], r["op"], r["spes"]): r["aggregate_gbs"] for r in records if pub.matches(where, r)}


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 6a of Kistler et al. 2006 against the records: the LS hot spot and the
    memory get hot spot at 25.6 GB/s with 2+ SPEs (one row per point), gets
    outperforming puts (put over get, mean over 2+ SPEs, per target) and the
    withheld put degradation (simulated only)."""
    rows = rows_for(
        EXPERIMENT.name,
        "aggregate_gbs",
        lambda e: [
            (f"{label(r['op'], r['target'])}, {r['spes']} SPEs", r["aggregate_gbs"], "")
            for r in records
            if pub.matches(e.where, r)
        ],
    )

    def put_over_get(e: pub.Published) -> list[tuple[str, float, str]]:
        agg = _agg(records, e.where)
        out = []
        for target in TARGETS:
            xs = sorted(x for (t, o, x) in agg if t == target and o == "put" and (t, "get", x) in agg)
            if xs:
                ratios = [agg[(target, "put", x)] / agg[(target, "get", x)] for x in xs]
                note = ", ".join(f"{x}: {v:.3f}" for x, v in zip(xs, ratios, strict=True))
                out.append((f"{target}, {xs[0]}-{xs[-1]} SPEs", statistics.fmean(ratios), note))
        return out

    def degradation(e: pub.Published) -> list[tuple[str, float, str]]:
        out = []
        for target in TARGETS:
            pts = [r for r in records if r["target"] == target and pub.matches(e.where, r)]
            if pts:
                limit = port_gbs(pts[0]["machine"])
                vals = [100.0 * (1.0 - r["aggregate_gbs"] / limit) for r in pts]
                note = ", ".join(f"{r['spes']}: {v:.2f}%" for r, v in zip(pts, vals, strict=True))
                out.append(
                    (
                        f"put to {target}, {pts[0]['spes']}-{pts[-1]['spes']} SPEs",
                        statistics.fmean(vals),
                        note,
                    )
                )
        return out

    rows += rows_for(EXPERIMENT.name, "put_over_get", put_over_get)
    rows += rows_for(EXPERIMENT.name, "put_degradation_pct", degradation)
    return rows


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Aggregate bandwidth by SPE count, one column per target and op, and the
    per-SPE bandwidths of the largest SPE count."""
    if not records:
        return []
    curves = sorted({(r["target"], r["op"]) for r in records}, key=lambda c: (TARGETS.index(c[0]), c[1]))
    agg = {(r["target"], r["op"], r["spes"]): r for r in records}
    xs = sorted({r["spes"] for r in records})
    rows = [
        [str(x), *(f"{agg[(t, o, x)]['aggregate_gbs']:.2f}" if (t, o, x) in agg else "" for t, o in curves)]
        for x in xs
    ]
    machine = records[0]["machine"]
    out = [
        Table(
            f"{EXPERIMENT.name}: aggregate GB/s by SPE count, {machine}",
            ["SPEs", *(label(o, t) for t, o in curves)],
            rows,
        )
    ]
    top = xs[-1]
    per = [
        [label(o, t), *(f"{v:.2f}" for v in agg[(t, o, top)]["per_spe_gbs"])]
        for t, o in curves
        if (t, o, top) in agg
    ]
    out.append(
        Table(
            f"{EXPERIMENT.name}: GB/s of each SPE with {top} SPEs",
            ["curve", *(f"SPE {s}" for s in range(top))],
            per,
        )
    )
    return out


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figure 6a: aggregate bandwidth against the SPE count, memory and LS hot
    spots, gets and puts, with the port limit and the published asymptote."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    machine = records[0]["machine"] if records else "qs20-1chip"
    limit = port_gbs(machine)
    styles = {
        "get": {"color": "tab:blue", "marker": "o", "markersize": 9, "linewidth": 3},
        "put": {"color": "tab:orange", "marker": "s", "markersize": 5, "linewidth": 1.5},
    }
    for ax, target in zip(axes, TARGETS, strict=True):
        ax.axhline(limit, color="grey", linestyle=":", linewidth=1, label=f"{limit:g} GB/s: one EIB port")
        for op in OPS:
            pts = sorted(
                (r for r in records if r["target"] == target and r["op"] == op), key=lambda r: r["spes"]
            )
            if pts:
                ax.plot(
                    [r["spes"] for r in pts],
                    [r["aggregate_gbs"] for r in pts],
                    **styles[op],  # type: ignore[arg-type]
                    label=f"simulated {op}",
                )
        for e in pub.entries(experiment=EXPERIMENT.name, held_out=False):
            if e.quantity != "aggregate_gbs" or e.where.get("target") != target:
                continue
            xs = [
                x for x in e.where["spes"] if any(r["spes"] == x and r["target"] == target for r in records)
            ]
            if xs:
                draw_published_span(ax, xs, e, f"published {e.figure}: {e.description}")
        where = "main memory" if target == "memory" else "one local store (hot SPE included)"
        ax.set(xlabel="SPEs", ylabel="aggregate bandwidth (GB/s)", title=f"hot spot on {where}, {machine}")
        ax.set_ylim(0, limit * 1.15)
        ax.set_xticks(sorted({r["spes"] for r in records}))
        ax.grid(True, alpha=0.3)
    save_figure(
        fig,
        path,
        "Kistler et al., Figure 6a: hot spots, 16 KB nonblocking DMAs (simulated; published in crimson)",
        legend=axes,
        ncol=2,
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option("targets", "choice", "memory or one SPE's local store", TARGETS, "--target", default=TARGETS),
        Option("ops", "choice", "DMA direction", OPS, "--op", default=OPS),
        Option("spes", "ints", "SPE counts, comma-separated", default=SPES),
        Option("count", "int", "16 KB DMAs per SPE", default=DEFAULT_COUNT),
    ),
)
