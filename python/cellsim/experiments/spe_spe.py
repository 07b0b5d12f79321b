"""``spe-spe``: one active SPE, one passive partner (Jiménez-González et al. 2007, Figures 10-11).

Logical SPE 0 runs Jiménez-González et al. 2007's bandwidth loop (the ``region`` kernel) against
a passive SPE's local store: get+put pairs of ``size`` bytes between two of
its own 16 KB buffers and two 32 KB regions of the partner's local store,
``mb`` MB in each direction, waiting for completion after every
``wait_every`` pairs (1, 2, 4, ..., 32) or only at the end (0). The peak is
both directions of one EIB port, 33.6 GB/s on blade21. The paper ran SPE 0
against each of the 7 others and reports the average ("very small
variation"); ``--partners 1,2,...,7`` does the same, the default is logical
SPE 1. ``bandwidth_gbs`` is the mean over partners (bytes of both directions
over the elapsed time).

>>> from cellsim.experiments import spe_spe
>>> r = spe_spe.run(sizes=[16384], waits=[0], mb=1)[0]
>>> r["machine"], round(r["bandwidth_gbs"], 1)  # the puts wait for the passive SPE's credits
('blade21', 30.5)
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

from .. import published as pub
from ..exceptions import UsageError
from . import Experiment, Option, RunSettings, Table
from ._common import (
    bandwidth_panel,
    curve_of,
    draw_published_span,
    plot_simulated,
    save_figure,
    spe_size_axis,
)
from ._contention import (
    MB,
    SIZES_002,
    check_positive,
    check_sizes_002,
    check_spes,
    pair_load,
    port_gbs,
    rows_for,
    run_kernels,
)

__all__ = ["DEFAULT_MB", "EXPERIMENT", "FIELDS", "WAITS", "compare", "plot", "run", "tables"]

WAITS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 0)
DEFAULT_MB = 32
"""MB per direction: the paper's 32 MB."""

FIELDS = (
    "machine",
    "seed",
    "size",
    "wait_every",
    "mb",
    "partners",
    "per_partner_gbs",
    "bandwidth_gbs",
    "placement",
    "transfers",
)


def wait_name(wait_every: int) -> str:
    """``end`` for 0, else ``every N``."""
    return "end" if wait_every == 0 else f"every {wait_every}"


def run(
    *,
    sizes: Iterable[int] = (),
    waits: Iterable[int] = (),
    partners: Iterable[int] = (),
    mb: int | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Measures SPE-to-SPE bandwidth by element size and synchronisation; one
    record per (size, wait_every).
    """
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    sizes_ = check_sizes_002(sizes)
    waits_ = tuple(int(w) for w in waits) or WAITS
    for w in waits_:
        if w < 0:
            raise UsageError(f"wait_every {w} is negative (0 means only at the end)")
    partners_ = check_spes(partners, (1,), 1, 7, "partner SPE")
    total = int(check_positive("mb", mb, DEFAULT_MB)) * MB
    points = [(s, w) for s in sizes_ for w in waits_]
    n_runs = len(points) * len(partners_)
    records = []
    done = 0
    for size, w in points:
        gbs = []
        transfers = 0
        placement: list[int] = []
        for p in partners_:
            res = run_kernels(
                machine, seed, [pair_load(0, p, size=size, total=total, wait_every=w)], native=native
            )
            gbs.append(res.gbs[0])
            transfers += res.transfers
            placement = res.placement
            done += 1
            if progress is not None:
                progress(done, n_runs)
        records.append(
            {
                "machine": res.machine,
                "seed": seed,
                "size": size,
                "wait_every": w,
                "mb": total // MB,
                "partners": list(partners_),
                "per_partner_gbs": gbs,
                "bandwidth_gbs": statistics.fmean(gbs),
                "placement": placement,
                "transfers": transfers,
            }
        )
    return records


def losses(records: Sequence[dict[str, Any]]) -> dict[int, float]:
    """GB/s lost at each size by waiting after every pair rather than at the end."""
    bw = {(r["size"], r["wait_every"]): r["bandwidth_gbs"] for r in records}
    return {s: bw[(s, 0)] - bw[(s, 1)] for (s, w) in bw if w == 0 and (s, 1) in bw}


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 11 of Jiménez-González et al. 2007 against the records: almost the 33.6 GB/s peak
    from 1 KB when waiting at the end (one row per size), the drop below 1 KB
    (bandwidth over 1 KB's), and early waits costing most at 1-8 KB (the
    largest loss at other sizes over the largest loss at 1-8 KB, in GB/s lost
    by waiting after every pair)."""
    bw = {(r["size"], r["wait_every"]): r["bandwidth_gbs"] for r in records}

    def over_1k(e: pub.Published) -> list[tuple[str, float, str]]:
        if (1024, 0) not in bw:
            return []
        return [
            (
                f"{r['size']} B, wait at the end",
                r["bandwidth_gbs"] / bw[(1024, 0)],
                f"1 KB: {bw[(1024, 0)]:.2f} GB/s",
            )
            for r in records
            if pub.matches(e.where, r)
        ]

    def early(e: pub.Published) -> list[tuple[str, float, str]]:
        loss = losses(records)
        inside = {s: v for s, v in loss.items() if 1024 <= s <= 8192}
        outside = {s: v for s, v in loss.items() if not 1024 <= s <= 8192}
        if not inside or not outside or max(inside.values()) <= 0:
            return []
        note = ", ".join(f"{s} B: {v:.1f}" for s, v in sorted(loss.items())) + " GB/s lost"
        return [("wait every pair vs at the end", max(outside.values()) / max(inside.values()), note)]

    return [
        *rows_for(
            EXPERIMENT.name,
            "bandwidth_gbs",
            lambda e: [
                (f"{r['size']} B, wait at the end", r["bandwidth_gbs"], "")
                for r in records
                if pub.matches(e.where, r)
            ],
        ),
        *rows_for(EXPERIMENT.name, "over_1k", over_1k),
        *rows_for(EXPERIMENT.name, "loss_outside_over_inside", early),
    ]


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Bandwidth by element size, one column per synchronisation."""
    if not records:
        return []
    waits = sorted({r["wait_every"] for r in records}, key=lambda w: 1 << 30 if w == 0 else w)
    bw = {(r["size"], r["wait_every"]): r["bandwidth_gbs"] for r in records}
    rows = [
        [str(s), *(f"{bw[(s, w)]:.2f}" if (s, w) in bw else "" for w in waits)]
        for s in sorted({r["size"] for r in records})
    ]
    r0 = records[0]
    title = (
        f"{EXPERIMENT.name}: GB/s (get+put) of SPE 0 with passive SPE(s) {r0['partners']}, "
        f"by element size and pairs between waits, {r0['machine']}, {r0['mb']} MB each way"
    )
    return [Table(title, ["size (B)", *(f"wait {wait_name(w)}" for w in waits)], rows)]


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figure 11: bandwidth against the element size, one curve per
    synchronisation, with the 33.6 GB/s peak and the published statements."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 7), layout="constrained")
    ax = fig.subplots()
    machine = records[0]["machine"] if records else "blade21"
    waits = sorted({r["wait_every"] for r in records}, key=lambda w: 1 << 30 if w == 0 else w)
    cmap = colormaps["viridis"]
    for i, w in enumerate(waits):
        color = cmap(0.9 * i / max(len(waits) - 1, 1))
        curve = curve_of(records, "size", wait_every=w)
        plot_simulated(
            ax, curve, "size", "bandwidth_gbs", color=color, label=f"simulated, wait {wait_name(w)}"
        )
    peak = 2 * port_gbs(machine)
    ax.axhline(peak, color="grey", linestyle=":", label=f"{peak:g} GB/s: get+put peak of one port")
    for e in pub.entries(experiment=EXPERIMENT.name, held_out=False):
        if e.quantity == "bandwidth_gbs":
            sizes = [s for s in e.where["size"] if any(r["size"] == s for r in records)]
            if sizes:
                draw_published_span(ax, sizes, e, f"published {e.figure}: {e.description}")
    ax.axvspan(1024, 8192, color="crimson", alpha=0.06, label="published: waiting early costs most at 1-8 KB")
    bandwidth_panel(ax, f"SPE 0 <-> passive SPE, DMA-elem get+put pairs, {machine}", spe_size_axis)
    save_figure(
        fig,
        path,
        "Jiménez-González et al., Figure 11: delayed synchronisation in SPE-to-SPE transfers",
        legend=[ax],
        ncol=3,
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option("sizes", "ints", "element sizes", default=SIZES_002, unit="B"),
        Option(
            "waits",
            "ints",
            "pairs between waits, 0 = at the end",
            default=WAITS,
            flag="--wait-every",
        ),
        Option(
            "partners",
            "ints",
            "passive logical SPEs, averaged",
            default=(1,),
            default_note="the paper: 1, ..., 7",
        ),
        Option("mb", "int", "data per direction", default=DEFAULT_MB, default_note="as the paper", unit="MB"),
    ),
)
