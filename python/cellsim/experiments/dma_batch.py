"""``dma-batch``: batched and nonblocking DMA bandwidth (Kistler et al. 2006, Figure 5).

Like ``dma-latency``, but logical SPE 0 waits for completion only after every
``batch`` DMAs (1: blocking; 0: nonblocking, waiting only at the end, as the
paper's batch of 16,384). ``latency_ns`` is the time per DMA. The MFC holds 16
commands, so at most 16 DMAs are in flight whatever the batch.

>>> from cellsim.experiments import dma_batch
>>> recs = dma_batch.run(ops=["put"], targets=["ls"], sizes=[2048], batches=[0])
>>> round(recs[0]["bandwidth_gbs"])  # the port's 25.6 less what the receiver's credits cost
23
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from statistics import mean
from typing import Any, Unpack

from .. import published as pub
from ..exceptions import UsageError
from . import Experiment, Option
from ._common import (
    DMA_SWEEP_OPTIONS,
    OPS,
    STYLE,
    TARGETS,
    DmaSweepSettings,
    bandwidth_panel,
    batch_name,
    check_dma_sweep,
    compare_row,
    curve_of,
    dma_sweep,
    draw_published,
    label,
    plot_simulated,
    save_figure,
    simple_compare,
    size_axis,
)

__all__ = ["BATCHES", "EXPERIMENT", "compare", "default_count", "plot", "run"]

BATCHES: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 0)
PORT_GBS = 25.6
"""One SPE's EIB port: 16 bytes per bus cycle at 1.6 GHz (qs20)."""

FIELDS = ("machine", "seed", "op", "target", "size", "batch", "count", "ticks", "latency_ns", "bandwidth_gbs")


def default_count(size: int) -> int:
    """DMAs per point: about 4 MB of data, between 256 and 4096 DMAs (a
    multiple of 32, so every batch size divides it)."""
    c = max(256, min(4096, (4 << 20) // max(size, 1)))
    return c - c % 32


def run(*, batches: Iterable[int] = (), **settings: Unpack[DmaSweepSettings]) -> list[dict[str, Any]]:
    """Measures DMA bandwidth by batch size; one record per (target, op, batch, size)."""
    setup = EXPERIMENT.settings(settings)
    sweep = check_dma_sweep(settings, default_count)
    batches_ = tuple(int(b) for b in batches) or BATCHES
    for b in batches_:
        if b < 0:
            raise UsageError(f"batch size {b} is negative (0 means nonblocking)")
    return dma_sweep(setup, sweep, batches_)


def speedups(records: Sequence[dict[str, Any]]) -> dict[tuple[str, str, int, int], float]:
    """Bandwidth of each batched point over the blocking bandwidth at the same
    op, target and size: ``{(op, target, size, batch): ratio}``."""
    blocking = {(r["op"], r["target"], r["size"]): r["bandwidth_gbs"] for r in records if r["batch"] == 1}
    out = {}
    for r in records:
        base = blocking.get((r["op"], r["target"], r["size"]))
        if base:
            out[(r["op"], r["target"], r["size"], r["batch"])] = r["bandwidth_gbs"] / base
    return out


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 5 of Kistler et al. 2006 against the records.

    The 25.6 GB/s nonblocking puts give one row per point. The batching
    statement ("a factor of two or even three" at 256 B) gives one row per
    batch size: the mean speedup over the op/target curves measured, with
    their spread in ``note``.
    """
    rows = simple_compare(records, EXPERIMENT.name)
    ratios = speedups(records)
    for entry in pub.entries(experiment=EXPERIMENT.name):
        if entry.quantity != "batch_speedup":
            continue
        batches = sorted({r["batch"] for r in records if pub.matches(entry.where, r)}, key=_batch_order)
        for batch in batches:
            vals = {
                (op, tgt): v
                for (op, tgt, size, b), v in ratios.items()
                if b == batch
                and pub.matches(entry.where, {"op": op, "target": tgt, "size": size, "batch": b})
            }
            if not vals:
                continue
            spread = ", ".join(f"{label(op, tgt)} {v:.2f}x" for (op, tgt), v in sorted(vals.items()))
            size = entry.where.get("size")
            rows.append(
                compare_row(entry, f"{size} B, {batch_name(batch)}", mean(vals.values()), note=spread)
            )
    return rows


def _batch_order(batch: int) -> int:
    return 1 << 30 if batch == 0 else batch


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figure 5: bandwidth against DMA size by batch size, one panel per op and
    target, with the 25.6 GB/s port limit and the published statements."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 11), layout="constrained")
    axes = fig.subplots(2, 2, sharey=True, squeeze=False)
    batches = sorted({r["batch"] for r in records}, key=_batch_order)
    cmap = colormaps["viridis"]
    colors = {b: cmap(0.9 * i / max(len(batches) - 1, 1)) for i, b in enumerate(batches)}
    ratios = speedups(records)
    machine = records[0]["machine"] if records else "?"
    for i, target in enumerate(TARGETS):
        for j, op in enumerate(OPS):
            ax = axes[i][j]
            pts = [r for r in records if r["op"] == op and r["target"] == target]
            ax.axhline(
                PORT_GBS, color="grey", linestyle=":", linewidth=1, label="25.6 GB/s: one SPE's EIB port"
            )
            for b in batches:
                curve = curve_of(pts, "size", batch=b)
                if curve:
                    marker = STYLE[(op, target)]["marker"]
                    name = f"simulated {batch_name(b)}"
                    plot_simulated(
                        ax, curve, "size", "bandwidth_gbs", color=colors[b], marker=marker, label=name
                    )
            for entry in pub.entries(experiment=EXPERIMENT.name, held_out=False):
                if (
                    entry.where.get("op") == op
                    and entry.where.get("target") == target
                    and any(pub.matches(entry.where, r) for r in pts)
                ):
                    draw_published(ax, entry)
                if entry.kind == "range" and entry.quantity == "batch_speedup":
                    size = entry.where["size"]
                    base = next(
                        (r["bandwidth_gbs"] for r in pts if r["batch"] == 1 and r["size"] == size), None
                    )
                    if base is not None and any(
                        (op, target, size, b) in ratios for b in entry.where["batch"]
                    ):
                        lo, hi = entry.value  # type: ignore[misc]
                        ax.plot(
                            [size, size],
                            [lo * base, hi * base],
                            color="crimson",
                            linewidth=5,
                            alpha=0.5,
                            solid_capstyle="butt",
                            label=f"published {entry.figure}: batching gives {lo:g}-{hi:g}x blocking "
                            f"at {size} B",
                        )
            bandwidth_panel(ax, f"{label(op, target)}, {machine}", size_axis)
    save_figure(
        fig,
        path,
        "Kistler et al., Figure 5: bandwidth by batch size (simulated lines, published in crimson)",
        legend=axes.flat,
        ncol=4,
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        *DMA_SWEEP_OPTIONS,
        Option(
            "batches",
            "ints",
            "DMAs between waits, comma-separated; 1 blocking, 0 nonblocking",
            default=BATCHES,
        ),
        Option("count", "int", "DMAs per point", default_note="about 4 MB, 256 to 4096 DMAs"),
    ),
)
