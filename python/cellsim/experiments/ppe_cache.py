"""``ppe-cache``: the PPE's loads, stores and copies to its caches (Jiménez-González et al. 2007, Figs 3-5).

The PPU runs a tight loop of loads, stores or copies (load from one buffer,
store into another) of 1- to 16-byte elements over a buffer that fits the
selected cache level, on one or both of its hardware threads (each takes
half), after a warm-up lap that reads every location (Jiménez-González et al. 2007's method). The
loop is described once (:func:`cellsim.ppe.access_loop`) and simulated access
by access through the PPE's caches (see ``docs/model.md``, "The PPE").

``level``: ``l1`` — a 16 KB buffer (Figure 3); ``l2`` — 192 KB, beyond the L1,
within the L2, every byte accessed (Figure 4); ``l1-l2`` — one access per
128-byte line of a 192 KB buffer, counting the line each load brings from the
L2 (Figure 5; a store brings none: the L1 writes through without allocating,
so its element is what crosses). ``bandwidth_gbs`` counts a copy's bytes
twice (read and written), as Jiménez-González et al. 2007 counts SPE copies; the path between the
L1 and the core is 16 B/cycle, 33.6 GB/s on ``blade21``.

>>> from cellsim.experiments import ppe_cache
>>> [round(r["bandwidth_gbs"], 1) for r in ppe_cache.run(levels=["l1"], ops=["load"], threads=[1])]
[2.1, 4.2, 8.4, 16.8, 16.8]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

from .. import published as pub
from . import Experiment, Option, Table
from ._common import check_choices, curve_of, measure_each, plot_simulated
from ._ppe import (
    LEVELS,
    LOOP_OPTIONS,
    LoopSettings,
    cache_point,
    derived_rows,
    loop_figure,
    loop_points,
    loop_tables,
    record_ghz,
)

__all__ = ["EXPERIMENT", "FIELDS", "compare", "plot", "run", "tables"]

FIELDS = (
    "machine",
    "seed",
    "level",
    "op",
    "threads",
    "element",
    "bytes",
    "cycles",
    "bandwidth_gbs",
    "l1_misses",
    "l2_misses",
)
_FIGURE = {"l1": "Figure 3", "l2": "Figure 4", "l1-l2": "Figure 5"}


def run(*, levels: Iterable[str] = (), **settings: Unpack[LoopSettings]) -> list[dict[str, Any]]:
    """Measures the PPE's cache bandwidth; one record per (level, op, threads, element)."""
    machine, seed, _native, progress = EXPERIMENT.settings(settings)
    points = loop_points(check_choices("level", levels, LEVELS), settings)
    return measure_each(points, lambda p: cache_point(machine, seed, *p), progress)


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figures 3-5 of Jiménez-González et al. 2007 against the records: the L1 load bandwidths by
    element size, and the text's other statements as ratios between points
    (stores below loads and proportional to the element size, the 1-thread
    16 B copy at half the peak, 2 threads helping, L2 below L1, L2 stores
    about twice L2 loads, L1-L2 above L2 and below its bus peak)."""
    return derived_rows(EXPERIMENT.name, records, curve=("level",))


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Bandwidth by element size, 1 and 2 threads, one table per level and op."""
    return loop_tables(
        records,
        "level",
        LEVELS,
        lambda level, op, machine: f"{EXPERIMENT.name} {level} {op} ({_FIGURE[level]}): GB/s, {machine}",
        lambda ts: [f"{t} thread{'s' if t > 1 else ''}" for t in ts],
    )


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figures 3-5: bandwidth against the element size, one row per level,
    one panel per op, 1 and 2 threads, with the published values and the
    16 B/cycle peak."""
    ghz = record_ghz(records[0]) if records else None

    def draw(ax: Any, level: str, op: str) -> None:
        for t, style in ((1, "-"), (2, "--")):
            pts = curve_of(records, "element", level=level, op=op, threads=t)
            if pts:
                color = "tab:blue" if t == 1 else "tab:orange"
                label = f"simulated, {t} thread{'s' if t > 1 else ''}"
                plot_simulated(ax, pts, "element", "bandwidth_gbs", style, color=color, label=label)
        if ghz:
            ax.axhline(16 * ghz, color="grey", linestyle=":", linewidth=1, label="16 B/cycle peak")
        for e in pub.entries(experiment=EXPERIMENT.name, held_out=False):
            if e.quantity != "bandwidth_gbs" or e.kind != "value":
                continue
            if e.where.get("level") != level or e.where.get("op") != op:
                continue
            ax.plot(
                [e.where["element"]],
                [float(e.value)],  # type: ignore[arg-type]
                linestyle="none",
                marker="*",
                markersize=13,
                markerfacecolor="none",
                markeredgecolor="crimson",
                label="published (Jiménez-González et al. text)",
            )

    loop_figure(
        records,
        path,
        ("level", LEVELS, "l1"),
        draw,
        lambda level, op, machine: f"{_FIGURE[level]}: {level} {op}, {machine}",
        ("Jiménez-González et al., Figures 3-5: PPE to its caches (lines simulated, stars published)", 4),
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option("levels", "choice", "l1, l2 or l1-l2", LEVELS, "--level", default=LEVELS),
        *LOOP_OPTIONS,
    ),
)
