"""``ppe-mem``: the PPE's loads, stores and copies to main memory (Jiménez-González et al. 2007, Figure 7).

The same loops as ``ppe-cache`` over buffers in main memory that no cache
holds (64 K accesses per buffer: 64 KB of 1-byte elements up to 1 MB of
16-byte ones), on one or both hardware threads. On ``blade21`` the buffer sits
in the local bank (behind the MIC) or in the other chip's (through IOIF0 and
the 7 GB/s link) — every page of it, as a NUMA binding would put it. The L2's
line fetches and castouts are bus requests from the PPE's ramp, sharing the
command bus, the rings and the memory with everything else. Stores and copies
start with the L2 full of dirty lines (the steady state of the paper's 128 MB
runs). ``l2_gbs`` is the same loop on an L2-resident buffer (``ppe-cache``'s
``l2`` point), for the paper's comparisons with Figure 4.

>>> from cellsim.experiments import ppe_mem
>>> r = ppe_mem.run(ops=["load"], threads=[2], elements=[16], banks=["local"])[0]
>>> r["bandwidth_gbs"] < 6, abs(r["bandwidth_gbs"] / r["l2_gbs"] - 1) < 0.1
(True, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

from .. import published as pub
from ..exceptions import UsageError
from . import Experiment, Option, Table
from ._common import check_choices, curve_of, draw_published_level, measure_each, plot_simulated
from ._ppe import (
    LOOP_OPTIONS,
    OPS,
    LoopSettings,
    cache_point,
    derived_rows,
    loop_figure,
    loop_points,
    loop_tables,
    mem_point,
)

__all__ = ["BANKS", "EXPERIMENT", "FIELDS", "compare", "plot", "run", "tables"]

BANKS: tuple[str, ...] = ("local", "remote")
FIELDS = (
    "machine",
    "seed",
    "bank",
    "op",
    "threads",
    "element",
    "bytes",
    "cycles",
    "bandwidth_gbs",
    "l2_gbs",
    "l2_misses",
    "prefetches",
    "castouts",
)


def run(*, banks: Iterable[str] = (), **settings: Unpack[LoopSettings]) -> list[dict[str, Any]]:
    """Measures the PPE's memory bandwidth; one record per (bank, op, threads, element)."""
    machine, seed, _native, progress = EXPERIMENT.settings(settings)
    two_banks = machine.facts.chips > 1
    banks_ = check_choices("bank", banks, BANKS)
    if not two_banks:
        if "remote" in banks_ and tuple(banks):
            raise UsageError(f"bank 'remote': machine {machine!r} has one memory bank (use --bank local)")
        banks_ = ("local",)
    points = loop_points(banks_, settings)
    l2: dict[tuple[str, int, int], float] = {}

    def point(p: tuple[str, str, int, int]) -> dict[str, Any]:
        bank, op, t, e = p
        r = mem_point(machine, seed, bank, op, t, e)
        if (op, t, e) not in l2:
            l2[(op, t, e)] = cache_point(machine, seed, "l2", op, t, e)["bandwidth_gbs"]
        r["l2_gbs"] = l2[(op, t, e)]
        return r

    return measure_each(points, point, progress)


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 7 of Jiménez-González et al. 2007 against the records: under 6 GB/s everywhere (the
    largest point of each bank and op), memory loads as fast as L2 loads and
    memory stores much slower than L2 stores (ratios to ``l2_gbs``)."""

    def ratio_to_l2(e: pub.Published) -> list[tuple[str, float, str]]:
        return [
            (
                f"{r['bank']} {r['op']} {r['threads']}t {r['element']} B",
                r["bandwidth_gbs"] / r["l2_gbs"],
                f"{r['bandwidth_gbs']:.2f} / {r['l2_gbs']:.2f} GB/s",
            )
            for r in records
            if pub.matches(e.where, r) and r["l2_gbs"]
        ]

    def largest(e: pub.Published) -> list[tuple[str, float, str]]:
        out = []
        for bank in BANKS:
            for op in OPS:
                pts = [r for r in records if (r["bank"], r["op"]) == (bank, op) and pub.matches(e.where, r)]
                if pts:
                    b = max(pts, key=lambda r: r["bandwidth_gbs"])
                    out.append(
                        (f"{bank} {op}: largest ({b['threads']}t {b['element']} B)", b["bandwidth_gbs"], "")
                    )
        return out

    return derived_rows(
        EXPERIMENT.name,
        records,
        curve=("bank",),
        extra={"mem_over_l2": ratio_to_l2, "bandwidth_gbs": largest},
    )


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Bandwidth by element size, 1 and 2 threads, beside the L2's, one table per bank and op."""
    return loop_tables(
        records,
        "bank",
        BANKS,
        lambda bank, op, machine: f"{EXPERIMENT.name} {bank} bank, {op} (Figure 7): GB/s, {machine}",
        lambda ts: [*(f"memory {t}t" for t in ts), *(f"L2 {t}t" for t in ts)],
        ("bandwidth_gbs", "l2_gbs"),
    )


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figure 7: bandwidth against the element size, one row per bank, one
    panel per op, 1 and 2 threads, the L2's bandwidth dotted, the 6 GB/s
    statement dashed."""

    def draw(ax: Any, bank: str, op: str) -> None:
        for t, color in ((1, "tab:blue"), (2, "tab:orange")):
            pts = curve_of(records, "element", bank=bank, op=op, threads=t)
            if not pts:
                continue
            label = f"simulated memory, {t} thread{'s' if t > 1 else ''}"
            plot_simulated(ax, pts, "element", "bandwidth_gbs", color=color, label=label)
            ax.plot(
                [r["element"] for r in pts],
                [r["l2_gbs"] for r in pts],
                linestyle=":",
                color=color,
                label=f"simulated L2 (Figure 4), {t} thread{'s' if t > 1 else ''}",
            )
        for e in pub.entries(experiment=EXPERIMENT.name, held_out=False):
            if e.quantity == "bandwidth_gbs":
                draw_published_level(ax, e, f"published {e.figure}: {e.text()}")

    loop_figure(
        records,
        path,
        ("bank", BANKS, "local"),
        draw,
        lambda bank, op, machine: f"Figure 7: {bank} bank, {op}, {machine}",
        (
            "Jiménez-González et al., Figure 7: PPE to main memory (simulated lines; published bound dashed)",
            3,
        ),
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option(
            "banks",
            "choice",
            "memory bank",
            BANKS,
            "--bank",
            default=BANKS,
            default_note="local only on one-bank machines",
        ),
        *LOOP_OPTIONS,
    ),
)
