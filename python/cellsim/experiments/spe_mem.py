"""``spe-mem``: 1 to 8 SPEs streaming to and from main memory (Jiménez-González et al. 2007, Figure 9).

Each of ``spes`` SPEs runs Jiménez-González et al. 2007's bandwidth loop (the ``region`` kernel):
it moves ``mb_per_spe`` MB in each direction between eight 16 KB local-store
buffers and its own region of main memory with DMA-elem transfers of ``size``
bytes, issuing as fast as its MFC queue allows (the paper's loop issues 32
DMAs, or 32 gets and 32 puts, per iteration; the 16-entry queue blocks it)
and waiting only at the end. ``get`` reads, ``put`` writes, ``copy``
interleaves gets and puts to a second region (weak scaling: every SPE has its
own regions). ``bandwidth_gbs`` is the sum over SPEs of each SPE's bytes (both
directions for copy) over its own elapsed time.

On ``blade21`` memory sits in two banks: the local one behind the MIC and the
other chip's behind IOIF0 and a 7 GB/s link; 64 KB pages are spread over them
by a hash of their page number (the machine's ``numa.policy``, ``weighted:300``: 30% of them remote).
``remote_share`` is the share of the run's DRAM bytes the remote bank served.

Each SPE moves the paper's 32 MB per direction by default (``--mb-per-spe``
for less). Regions that would not fit in memory together (copy with 8 SPEs:
sixteen 32 MB regions in 512 MB) wrap around within the largest span that
fits (``span_mb``, 31.9 MB there).

>>> from cellsim.experiments import spe_mem
>>> r = spe_mem.run(ops=["get"], spes=[1], sizes=[16384], mb_per_spe=1)[0]
>>> r["machine"], 8 < r["bandwidth_gbs"] < 12
('blade21', True)
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any, Unpack

from .. import published as pub
from ..machine import Machine
from ..spec import MachineLike, MachineSpec
from . import Experiment, Option, RunSettings, Table
from ._common import (
    bandwidth_panel,
    check_choices,
    curve_of,
    draw_published_level,
    draw_published_span,
    measure_each,
    plot_simulated,
    save_figure,
    spe_size_axis,
)
from ._contention import (
    MB,
    PAGE,
    SIZES_002,
    Load,
    check_positive,
    check_sizes_002,
    check_spes,
    mb_per_spe_option,
    memory_load,
    memory_region,
    port_gbs,
    rows_for,
    run_kernels,
)

__all__ = ["DEFAULT_MB", "EXPERIMENT", "FIELDS", "OPS", "compare", "plot", "region_span", "run", "tables"]

OPS: tuple[str, ...] = ("get", "put", "copy")
SPES: tuple[int, ...] = (1, 2, 4, 8)
DEFAULT_MB = 32
"""MB moved per SPE and direction by default: the paper's 32 MB."""


FIELDS = (
    "machine",
    "seed",
    "op",
    "spes",
    "size",
    "mb_per_spe",
    "span_mb",
    "bandwidth_gbs",
    "per_spe_gbs",
    "remote_share",
    "placement",
    "transfers",
)


def region_span(machine: MachineLike, total: int, regions: int) -> int:
    """Bytes of each of ``regions`` remote regions: ``total``, or the largest
    whole number of 64 KB pages that lets them all fit in the machine's memory."""
    room = MachineSpec.of(machine).facts.memory_bytes - MB  # what the allocator can give, with slack
    return min(total, room // regions // PAGE * PAGE)


def run(
    *,
    ops: Iterable[str] = (),
    spes: Iterable[int] = (),
    sizes: Iterable[int] = (),
    mb_per_spe: int | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Measures SPE-to-memory bandwidth; one record per (op, SPE count, element size)."""
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    ops_ = check_choices("op", ops, OPS)
    spes_ = check_spes(spes, SPES, 1, 8, "SPE count")
    sizes_ = check_sizes_002(sizes)
    mb = int(check_positive("mb_per_spe", mb_per_spe, DEFAULT_MB))
    total = mb * MB
    points = [(o, x, s) for o in ops_ for x in spes_ for s in sizes_]

    def point(p: tuple[str, int, int]) -> dict[str, Any]:
        op, x, size = p
        dirs = 2 if op == "copy" else 1
        span = region_span(machine, total, x * dirs)

        def setup(m: Machine, op: str = op, x: int = x, size: int = size, span: int = span) -> list[Load]:
            return [memory_load(s, memory_region(m, op, span=span, total=total, size=size)) for s in range(x)]

        res = run_kernels(machine, seed, [], native=native, setup=setup)
        banks = [
            a + b for a, b in zip(res.stats["bank_read_bytes"], res.stats["bank_write_bytes"], strict=True)
        ]
        return {
            "machine": res.machine,
            "seed": seed,
            "op": op,
            "spes": x,
            "size": size,
            "mb_per_spe": mb,
            "span_mb": span / MB,
            "bandwidth_gbs": res.aggregate_gbs,
            "per_spe_gbs": [res.gbs[s] for s in range(x)],
            "remote_share": (sum(banks[1:]) / sum(banks)) if sum(banks) else 0.0,
            "placement": res.placement,
            "transfers": res.transfers,
        }

    return measure_each(points, point, progress)


def _mean_over(records: Sequence[dict[str, Any]], where: Mapping[str, Any], op: str, x: int) -> float | None:
    vals = [r["bandwidth_gbs"] for r in records if r["op"] == op and r["spes"] == x and pub.matches(where, r)]
    return statistics.fmean(vals) if vals else None


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 9 of Jiménez-González et al. 2007 against the records: one SPE ~10 GB/s and 2+ SPEs
    ~20 GB/s (GET, PUT) at 2 KB and larger (one row per point), copy up to
    23 GB/s (the largest copy bandwidth with 2+ SPEs), growth from 2 to 4 SPEs
    and the drop at 8 (ratios of the mean over 2 KB and larger, per op)."""
    rows = rows_for(
        EXPERIMENT.name,
        "bandwidth_gbs",
        lambda e: [
            (
                f"{r['op']}, {r['spes']} SPE{'s' if r['spes'] > 1 else ''}, {r['size']} B",
                r["bandwidth_gbs"],
                "",
            )
            for r in records
            if pub.matches(e.where, r)
        ],
    )

    def copy_max(e: pub.Published) -> list[tuple[str, float, str]]:
        pts = [r for r in records if pub.matches(e.where, r)]
        if not pts:
            return []
        best = max(pts, key=lambda r: r["bandwidth_gbs"])
        return [
            (f"copy, {best['spes']} SPEs, {best['size']} B", best["bandwidth_gbs"], "the largest copy point")
        ]

    def ratio(a: int, b: int) -> Any:
        def measure(e: pub.Published) -> list[tuple[str, float, str]]:
            out = []
            for op in OPS:
                va, vb = _mean_over(records, e.where, op, a), _mean_over(records, e.where, op, b)
                if va is not None and vb is not None:
                    out.append((f"{op}: {a} SPEs / {b} SPEs", va / vb, f"{va:.2f} / {vb:.2f} GB/s"))
            return out

        return measure

    rows += rows_for(EXPERIMENT.name, "max_bandwidth_gbs", copy_max)
    rows += rows_for(EXPERIMENT.name, "bw2_over_bw4", ratio(2, 4))
    rows += rows_for(EXPERIMENT.name, "bw8_over_bw4", ratio(8, 4))
    return rows


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Bandwidth by element size, one column per SPE count, one table per op."""
    out = []
    for op in OPS:
        pts = [r for r in records if r["op"] == op]
        if not pts:
            continue
        xs = sorted({r["spes"] for r in pts})
        bw = {(r["spes"], r["size"]): r for r in pts}
        rows = [
            [str(size), *(f"{bw[(x, size)]['bandwidth_gbs']:.2f}" if (x, size) in bw else "" for x in xs)]
            for size in sorted({r["size"] for r in pts})
        ]
        share = statistics.fmean(r["remote_share"] for r in pts)
        out.append(
            Table(
                f"{EXPERIMENT.name} {op}: GB/s by element size and SPE count, {pts[0]['machine']}, "
                f"{pts[0]['mb_per_spe']} MB per SPE, remote bank served {100 * share:.0f}% of DRAM bytes",
                ["size (B)", *(f"{x} SPE{'s' if x > 1 else ''}" for x in xs)],
                rows,
            )
        )
    return out


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figure 9: bandwidth against the element size, one panel per op, one
    curve per SPE count, with the published values and the bank limits."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 6), layout="constrained")
    axes = fig.subplots(1, 3, sharey=True)
    machine = records[0]["machine"] if records else "blade21"
    xs_all = sorted({r["spes"] for r in records})
    cmap = colormaps["viridis"]
    colors = {x: cmap(0.85 * i / max(len(xs_all) - 1, 1)) for i, x in enumerate(xs_all)}
    port = port_gbs(machine)
    for ax, (panel, op) in zip(axes, (("a", "get"), ("b", "put"), ("c", "copy")), strict=True):
        pts = [r for r in records if r["op"] == op]
        for x in xs_all:
            curve = curve_of(pts, "size", spes=x)
            if curve:
                label = f"simulated, {x} SPE{'s' if x > 1 else ''}"
                plot_simulated(ax, curve, "size", "bandwidth_gbs", color=colors[x], label=label)
        ax.axhline(
            port, color="grey", linestyle=":", linewidth=1, label=f"{port:g} GB/s: one bank (MIC port)"
        )
        ax.axhline(23.8, color="grey", linestyle="-.", linewidth=1, label="23.8 GB/s: both banks (16.8 + 7)")
        for e in pub.entries(experiment=EXPERIMENT.name, held_out=False):
            if not any(pub.matches(e.where, r) for r in pts):
                continue
            if e.quantity == "bandwidth_gbs":
                sizes = [s for s in e.where["size"] if any(r["size"] == s for r in pts)]
                draw_published_span(
                    ax,
                    sizes,
                    e,
                    f"published {e.figure}: {e.description}, {e.text()}",
                    color="crimson" if e.where["spes"] == 1 else "darkred",
                )
            elif e.quantity == "max_bandwidth_gbs":
                draw_published_level(ax, e, f"published {e.figure}: copy up to {e.text()}", "darkred")
        bandwidth_panel(ax, f"({panel}) SPE {op.upper()}, {machine}", spe_size_axis)
    save_figure(
        fig,
        path,
        "Jiménez-González et al., Figure 9: SPEs to memory, DMA-elem (simulated lines; published dashed)",
        legend=axes,
        ncol=3,
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option("ops", "choice", "get, put or copy", OPS, "--op", default=OPS),
        Option("spes", "ints", "SPE counts, comma-separated", default=SPES),
        Option("sizes", "ints", "element sizes", default=SIZES_002, unit="B"),
        mb_per_spe_option("data per SPE and direction", DEFAULT_MB, "as the paper"),
    ),
)
