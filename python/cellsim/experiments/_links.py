"""What Jiménez-González et al. 2007's ``couples`` and ``cycle`` experiments share: several active
SPEs, each running the SPE-to-SPE loop of ``spe-spe`` (get+put pairs waiting
only at the end) with its logical neighbour, on N seeded logical-to-physical
placements per point; the summary is min, max, median and mean over the
placements, with the best and worst placement named.

An experiment is described by a :class:`Links`: which (active, passive) links
a value of its record key (``pairs`` or ``spes``) gives, the peak, the key's
default values and the paper's figures; the Links declares the experiment
(:meth:`Links.experiment`): its module writes only the docstring and ``run``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any

from .. import published as pub
from . import Experiment, Option, RunSettings, Setup, Table
from ._catalog import name_of
from ._common import (
    bandwidth_panel,
    check_choices,
    curve_of,
    draw_published_span,
    plot_simulated,
    save_figure,
    spe_size_axis,
)
from ._contention import (
    MB,
    PLACEMENT_FIELDS,
    SIZES_002,
    Load,
    check_positive,
    check_sizes_002,
    check_spes,
    mb_per_spe_option,
    pair_load,
    placement_seeds,
    placement_summary,
    port_gbs,
    rows_for,
    run_on_placements,
)

__all__ = ["DEFAULT_MB", "DEFAULT_PLACEMENTS", "MODES", "Links", "LinksSettings"]

MODES: tuple[str, ...] = ("elem", "list")
DEFAULT_PLACEMENTS = 10
"""Placements per point, as the paper."""
DEFAULT_MB = 2
"""MB per active SPE and direction by default (the paper: 32)."""


class LinksSettings(RunSettings, total=False):
    """The ``**settings`` of ``couples`` and ``cycle``: a run's settings and the options
    of :meth:`Links.options` besides the key."""

    modes: Iterable[str]
    sizes: Iterable[int]
    placements: int | None
    mb_per_spe: int | None


@dataclass(frozen=True)
class Links:
    """One links experiment."""

    module: str
    """The experiment's module (its ``__name__``), named after the experiment."""
    links: Callable[[int], list[tuple[int, int]]]
    """(active, passive) logical SPEs for a value of ``key``."""
    peak_ports: Callable[[int], int]
    """The peak in port-directions (16.8 GB/s each on blade21)."""
    key: str
    """The record field and ``run`` keyword that sizes the experiment (``pairs``, ``spes``)."""
    key_help: str
    """What the key's values are, for its option."""
    noun: str
    values: tuple[int, ...]
    """The key's default values, smallest to largest: also the range it may take."""
    figure_avg: str
    figure_spread: str

    @property
    def name(self) -> str:
        return name_of(self.module)

    def experiment(self) -> Experiment:
        """The experiment its module declares: the module's ``run``, and this
        description's options, ``compare``, ``tables`` and ``plot``."""
        return Experiment.of_module(
            self.module, options=self.options(), compare=self.compare, tables=self.tables, plot=self.plot
        )

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields of a record."""
        return (
            "machine",
            "seed",
            self.key,
            "mode",
            "size",
            "mb_per_spe",
            "links",
            *PLACEMENT_FIELDS,
            "peak_gbs",
            "transfers",
        )

    # -- running -------------------------------------------------------------------------

    def run(self, setup: Setup, values: Iterable[int], options: LinksSettings) -> list[dict[str, Any]]:
        """One record per (value of ``key``, mode, size) over the placements;
        ``options`` holds the other options of :meth:`options` (``modes``,
        ``sizes``, ``placements``, ``mb_per_spe``)."""
        machine, seed, native, progress = setup
        values_ = check_spes(values, self.values, self.values[0], self.values[-1], self.noun)
        modes_ = check_choices("mode", options.get("modes", ()), MODES)
        sizes_ = check_sizes_002(options.get("sizes", ()))
        placements = check_positive("placements", options.get("placements"), DEFAULT_PLACEMENTS)
        seeds = placement_seeds(seed, int(placements))
        mb = int(check_positive("mb_per_spe", options.get("mb_per_spe"), DEFAULT_MB))
        points = [(v, mo, s) for v in values_ for mo in modes_ for s in sizes_]

        def loads(point: tuple[int, str, int], seed: int) -> list[Load]:
            v, mode, size = point
            return [pair_load(a, p, size=size, total=mb * MB, lists=mode == "list") for a, p in self.links(v)]

        records = []
        for (v, mode, size), runs in run_on_placements(
            machine, points, seeds, loads, native=native, progress=progress
        ):
            records.append(
                {
                    "machine": runs[0].machine,
                    "seed": seed,
                    self.key: v,
                    "mode": mode,
                    "size": size,
                    "mb_per_spe": mb,
                    "links": [list(link) for link in self.links(v)],
                    **placement_summary(runs),
                    "peak_gbs": self.peak_ports(v) * port_gbs(runs[0].machine),
                    "transfers": sum(r.transfers for r in runs),
                }
            )
        return records

    # -- comparing -----------------------------------------------------------------------

    def compare(self, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows for this experiment's published entries (see the module docstring of
        the experiment)."""
        k = self.key
        by = {(r[k], r["mode"], r["size"]): r for r in records}
        groups = sorted({(r[k], r["mode"]) for r in records}, key=lambda g: (g[0], MODES.index(g[1])))

        def point(v: int, mode: str, size: int | None = None) -> str:
            s = f"{v} {self.noun}{'s' if v > 1 else ''}, DMA-{mode}"
            return s if size is None else f"{s}, {size} B"

        def mean_gbs(e: pub.Published) -> list[tuple[str, float, str]]:
            if not e.held_out:
                return [
                    (point(r[k], r["mode"], r["size"]), r["mean_gbs"], _minmax(r))
                    for r in records
                    if pub.matches(e.where, r)
                ]
            out = []
            for v, mode in groups:
                rs = [r for r in records if r[k] == v and r["mode"] == mode and pub.matches(e.where, r)]
                if rs:
                    vals = [r["mean_gbs"] for r in rs]
                    note = f"mean over {len(rs)} sizes; per size {min(vals):.1f}-{max(vals):.1f} GB/s"
                    out.append((point(v, mode), statistics.fmean(vals), note))
            return out

        def constant(e: pub.Published) -> list[tuple[str, float, str]]:
            out = []
            for v, mode in groups:
                rs = [r for r in records if r[k] == v and r["mode"] == mode and pub.matches(e.where, r)]
                if len(rs) > 1:
                    vals = [r["mean_gbs"] for r in rs]
                    note = f"{min(vals):.1f}-{max(vals):.1f} GB/s over {len(rs)} sizes"
                    out.append((point(v, mode), min(vals) / max(vals), note))
            return out

        def spread_gbs(e: pub.Published) -> list[tuple[str, float, str]]:
            out = []
            for v, mode in groups:
                rs = [r for r in records if r[k] == v and r["mode"] == mode and pub.matches(e.where, r)]
                if rs:
                    widest = max(rs, key=lambda r: r["max_gbs"] - r["min_gbs"])
                    note = (
                        f"mean over {len(rs)} sizes of max - min over {widest['placements']} placements; "
                        f"widest at {widest['size']} B: best {widest['best_placement']} "
                        f"(seed {widest['best_seed']}) {widest['max_gbs']:.1f}, worst "
                        f"{widest['worst_placement']} (seed {widest['worst_seed']}) "
                        f"{widest['min_gbs']:.1f} GB/s"
                    )
                    out.append(
                        (point(v, mode), statistics.fmean(r["max_gbs"] - r["min_gbs"] for r in rs), note)
                    )
            return out

        def list_over_elem(e: pub.Published) -> list[tuple[str, float, str]]:
            out = []
            for r in records:
                if r["mode"] == "list" and pub.matches(e.where, r) and (r[k], "elem", r["size"]) in by:
                    el = by[(r[k], "elem", r["size"])]["mean_gbs"]
                    out.append(
                        (
                            f"{r[k]} {self.noun}s, {r['size']} B",
                            r["mean_gbs"] / el,
                            f"list {r['mean_gbs']:.1f}, elem {el:.1f}",
                        )
                    )
            return out

        def over_1k(e: pub.Published) -> list[tuple[str, float, str]]:
            out = []
            for r in records:
                ref = by.get((r[k], r["mode"], 1024))
                if ref is not None and pub.matches(e.where, r):
                    out.append(
                        (
                            point(r[k], r["mode"], r["size"]),
                            r["mean_gbs"] / ref["mean_gbs"],
                            f"1 KB: {ref['mean_gbs']:.1f} GB/s",
                        )
                    )
            return out

        return [
            *rows_for(self.name, "mean_gbs", mean_gbs),
            *rows_for(self.name, "min_over_max_size", constant),
            *rows_for(self.name, "over_1k", over_1k),
            *rows_for(self.name, "list_over_elem", list_over_elem),
            *rows_for(self.name, "spread_gbs", spread_gbs),
        ]

    # -- tables and plots ----------------------------------------------------------------

    def tables(self, records: Sequence[dict[str, Any]]) -> list[Table]:
        """Mean (min-max) GB/s by size per mode, and the best and worst placement of each point."""
        if not records:
            return []
        k = self.key
        vals = sorted({r[k] for r in records})
        by = {(r[k], r["mode"], r["size"]): r for r in records}
        r0 = records[0]
        out = []
        for mode in MODES:
            if not any(r["mode"] == mode for r in records):
                continue
            rows = []
            for size in sorted({r["size"] for r in records if r["mode"] == mode}):
                cells = [str(size)]
                for v in vals:
                    r = by.get((v, mode, size))
                    cells.append(
                        "" if r is None else f"{r['mean_gbs']:.1f} ({r['min_gbs']:.1f}-{r['max_gbs']:.1f})"
                    )
                rows.append(cells)
            peaks = {r[k]: r["peak_gbs"] for r in records}
            heads = [f"{v} {self.noun}{'s' if v > 1 else ''} (peak {peaks[v]:g})" for v in vals]
            out.append(
                Table(
                    f"{self.name} DMA-{mode}: mean (min-max) GB/s over {r0['placements']} placements "
                    f"from seed {r0['seed']}, {r0['machine']}, {r0['mb_per_spe']} MB per active SPE "
                    "and direction",
                    ["size (B)", *heads],
                    rows,
                )
            )
        rows = [
            [
                str(r[k]),
                r["mode"],
                str(r["size"]),
                f"{r['median_gbs']:.1f}",
                f"{r['best_placement']} (seed {r['best_seed']})",
                f"{r['max_gbs']:.1f}",
                f"{r['worst_placement']} (seed {r['worst_seed']})",
                f"{r['min_gbs']:.1f}",
            ]
            for r in records
        ]
        out.append(
            Table(
                f"{self.name}: best and worst placements (physical SPE of logical SPE 0..7)",
                [self.key, "mode", "size (B)", "median", "best placement", "GB/s", "worst placement", "GB/s"],
                rows,
            )
        )
        return out

    def plot(self, records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
        """Top: mean bandwidth against the element size (min-max band) per value
        of the key, DMA-elem and DMA-list; bottom: min, median, mean and max for
        the largest value, with the peaks and the published statements."""
        from matplotlib import colormaps
        from matplotlib.figure import Figure

        k = self.key
        fig = Figure(figsize=(14, 11), layout="constrained")
        axes = fig.subplots(2, 2, sharey="row")
        machine = records[0]["machine"] if records else "blade21"
        vals = sorted({r[k] for r in records})
        cmap = colormaps["viridis"]
        colors = {v: cmap(0.85 * i / max(len(vals) - 1, 1)) for i, v in enumerate(vals)}
        for j, mode in enumerate(MODES):
            ax = axes[0][j]
            for v in vals:
                curve = curve_of(records, "size", **{k: v, "mode": mode})
                if not curve:
                    continue
                label = f"simulated mean, {v} {self.noun}{'s' if v > 1 else ''}"
                plot_simulated(ax, curve, "size", "mean_gbs", color=colors[v], label=label)
                ax.fill_between(
                    [r["size"] for r in curve],
                    [r["min_gbs"] for r in curve],
                    [r["max_gbs"] for r in curve],
                    color=colors[v],
                    alpha=0.15,
                )
                ax.axhline(curve[0]["peak_gbs"], color=colors[v], linestyle=":", linewidth=1)
            for e in pub.entries(experiment=self.name, held_out=False):
                if e.quantity != "mean_gbs" or e.where.get("mode") != mode:
                    continue
                pts = [r for r in records if pub.matches(e.where, r)]
                if pts:
                    draw_published_span(
                        ax,
                        (r["size"] for r in pts),
                        e,
                        f"published {e.figure}: near peak ({self.key} {e.where[k]})",
                    )
            title = f"({'ab'[j]}) DMA-{mode}: mean over placements, min-max shaded; peaks dotted"
            bandwidth_panel(ax, title, spe_size_axis)
            ax = axes[1][j]
            if vals:
                top = vals[-1]
                curve = curve_of(records, "size", **{k: top, "mode": mode})
                for key, style in (
                    ("min_gbs", "v:"),
                    ("median_gbs", "o-"),
                    ("mean_gbs", "s--"),
                    ("max_gbs", "^:"),
                ):
                    ax.plot(
                        [r["size"] for r in curve],
                        [r[key] for r in curve],
                        style,
                        markersize=5 if key != "median_gbs" else 8,
                        color="tab:blue",
                        label=key.split("_")[0],
                    )
                if curve:
                    ax.axhline(
                        curve[0]["peak_gbs"],
                        color="grey",
                        linestyle=":",
                        label=f"peak {curve[0]['peak_gbs']:g} GB/s",
                    )
                ax.set(
                    ylabel="bandwidth (GB/s)",
                    title=f"DMA-{mode}, {top} {self.noun}s: min, median, mean, max over placements "
                    f"({self.figure_spread})",
                )
            spe_size_axis(ax)
            ax.grid(True, which="both", alpha=0.3)
        save_figure(
            fig,
            path,
            (
                f"Jiménez-González et al., {self.figure_avg} and {self.figure_spread}: {self.name}, "
                f"{machine} (simulated; published dashed)"
            ),
            legend=axes.flat,
            ncol=4,
            dpi=90,
        )

    def options(self) -> tuple[Option, ...]:
        """The command-line options."""
        return (
            Option(self.key, "ints", self.key_help, default=self.values),
            Option("modes", "choice", "DMA-elem or DMA-list of 16 KB", MODES, "--mode", default=MODES),
            Option("sizes", "ints", "element sizes", default=SIZES_002, unit="B"),
            Option(
                "placements",
                "int",
                "seeded logical-to-physical placements per point",
                default=DEFAULT_PLACEMENTS,
            ),
            mb_per_spe_option("data per active SPE and direction", DEFAULT_MB, "the paper: 32"),
        )


def _minmax(r: dict[str, Any]) -> str:
    return (
        f"{r['placements']} placements: {r['min_gbs']:.1f}-{r['max_gbs']:.1f}, "
        f"median {r['median_gbs']:.1f} GB/s"
    )
