"""``latency-hist``: DMA latencies under the main-memory hot spot (seed 000, Figure 7).

The ``hotspot`` experiment's memory hot spot (``spes`` SPEs, default 8, each
issuing ``count`` nonblocking 16 KB gets or puts to its own buffer in main
memory, one wait at the end) with every DMA command's latency recorded: from
its entry into the SPE's 16-entry MFC queue to its tag-group update (the SPU
stalls while the queue is full, so a command enters as soon as an older one
retires). One record per op and SPE with the distribution's statistics
(``mode_ns``: the most common latency, to :data:`MODE_BIN_NS`) and every
latency (``latencies_ns``, in retirement order).

>>> from cellsim.experiments import latency_hist
>>> recs = latency_hist.run(ops=["get"], spes=2, count=32)
>>> [r["spe"] for r in recs], len(recs[0]["latencies_ns"])
([0, 1], 32)
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any

import numpy as np

from .. import published as pub
from ..machine import Machine
from . import Experiment, Option, Table
from ._common import ProgressFn, check_choices, figure_legend
from ._contention import DMA_SIZE, Load, check_positive, check_spes, rows_for, run_kernels

__all__ = ["EXPERIMENT", "FIELDS", "MODE_BIN_NS", "compare", "plot", "run", "tables"]

NAME = "latency-hist"
DEFAULT_SPES = 8
DEFAULT_COUNT = 512
MODE_BIN_NS = 100.0
"""Width of the bins (from 0 ns) whose fullest one gives ``mode_ns`` (its centre)."""

FIELDS = (
    "machine",
    "seed",
    "op",
    "spe",
    "physical",
    "spes",
    "count",
    "bandwidth_gbs",
    "mean_ns",
    "mode_ns",
    "p50_ns",
    "p99_ns",
    "min_ns",
    "max_ns",
    "latencies_ns",
    "transfers",
)


def _mode(lat: np.ndarray) -> float:
    bins = np.floor(lat / MODE_BIN_NS).astype(np.int64)
    values, counts = np.unique(bins, return_counts=True)
    return float((values[int(np.argmax(counts))] + 0.5) * MODE_BIN_NS)


def run(
    machine: str = "qs20",
    seed: int = 0,
    native: bool = True,
    progress: ProgressFn | None = None,
    *,
    ops: Iterable[str] = (),
    spes: int | None = None,
    count: int | None = None,
) -> list[dict[str, Any]]:
    """Records the DMA latency distribution of each SPE under the memory hot
    spot; one record per (op, SPE).

    Args:
        machine: machine name or TOML path.
        seed: seed of every machine (its placement).
        native: run the native kernels, else their Python twins.
        progress: ``progress(done, total)`` after each op.
        ops: ``put`` and/or ``get`` (default both, puts first as Figure 7).
        spes: SPEs in the hot spot (default 8).
        count: 16 KB DMAs per SPE (default 512).
    """
    ops_ = check_choices("op", ops, ("put", "get"))
    (x,) = check_spes([spes] if spes is not None else [], [DEFAULT_SPES], 1, 8, "SPE count")
    n = int(check_positive("count", count, DEFAULT_COUNT))
    records = []
    for i, op in enumerate(ops_):

        def setup(m: Machine, op: str = op) -> list[Load]:
            params = {"put": int(op == "put"), "targets": 1, "size": DMA_SIZE, "count": n}
            return [
                Load(s, "traffic", {**params, "ea0": int(m.alloc(DMA_SIZE))}, n * DMA_SIZE) for s in range(x)
            ]

        res = run_kernels(machine, seed, [], native=native, setup=setup, latencies=True)
        for s in range(x):
            lat = res.latencies_ns[s]
            records.append(
                {
                    "machine": res.machine,
                    "seed": seed,
                    "op": op,
                    "spe": s,
                    "physical": res.placement[s],
                    "spes": x,
                    "count": n,
                    "bandwidth_gbs": res.gbs[s],
                    "mean_ns": float(lat.mean()),
                    "mode_ns": _mode(lat),
                    "p50_ns": float(np.percentile(lat, 50)),
                    "p99_ns": float(np.percentile(lat, 99)),
                    "min_ns": float(lat.min()),
                    "max_ns": float(lat.max()),
                    "latencies_ns": [float(v) for v in lat],
                    "transfers": res.transfers if s == 0 else 0,
                }
            )
        if progress is not None:
            progress(i + 1, len(ops_))
    return records


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 7 of seed 000 against the records: no measurable difference
    between SPEs (largest over smallest SPE mean latency, per op), and the
    held-out peak and worst-case latencies (simulated only: the mean of the
    SPEs' modes, the largest latency)."""
    ops = [o for o in ("put", "get") if any(r["op"] == o for r in records)]

    def per_op(fn: Any) -> Any:
        def measure(e: pub.Published) -> list[tuple[str, float, str]]:
            out = []
            for op in ops:
                rs = [r for r in records if r["op"] == op and pub.matches(e.where, r)]
                if rs:
                    out.append(fn(op, rs))
            return out

        return measure

    def fair(op: str, rs: list[dict[str, Any]]) -> tuple[str, float, str]:
        means = [r["mean_ns"] for r in rs]
        note = f"SPE means {min(means):.0f}-{max(means):.0f} ns"
        return (f"{op}, {len(rs)} SPEs", max(means) / min(means), note)

    def peak(op: str, rs: list[dict[str, Any]]) -> tuple[str, float, str]:
        modes = [r["mode_ns"] for r in rs]
        return (
            f"{op}, {len(rs)} SPEs",
            statistics.fmean(modes),
            f"SPE modes {min(modes):.0f}-{max(modes):.0f} ns",
        )

    def worst(op: str, rs: list[dict[str, Any]]) -> tuple[str, float, str]:
        return (f"{op}, {len(rs)} SPEs", max(r["max_ns"] for r in rs), "")

    return [
        *rows_for(NAME, "mean_max_over_min", per_op(fair)),
        *rows_for(NAME, "mode_ns", per_op(peak)),
        *rows_for(NAME, "max_ns", per_op(worst)),
    ]


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """The distribution's statistics per op and SPE, in microseconds."""
    if not records:
        return []
    cols = ["op", "SPE", "physical", "GB/s", "mean", "mode", "p50", "p99", "min", "max"]
    rows = [
        [
            r["op"],
            str(r["spe"]),
            str(r["physical"]),
            f"{r['bandwidth_gbs']:.2f}",
            *(f"{r[k] / 1000:.2f}" for k in ("mean_ns", "mode_ns", "p50_ns", "p99_ns", "min_ns", "max_ns")),
        ]
        for r in records
    ]
    r0 = records[0]
    title = (
        f"{NAME}: DMA latency (us, queue entry to completion) under the memory hot spot, "
        f"{r0['spes']} SPEs x {r0['count']} DMAs of 16 KB, {r0['machine']}"
    )
    return [Table(title, cols, rows)]


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figure 7: the latency distribution of each SPE, (a) puts and (b) gets."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    machine = records[0]["machine"] if records else "qs20"
    top = max((r["max_ns"] for r in records), default=1.0)
    bins = np.linspace(0.0, top * 1.02 / 1000, 81)
    cmap = colormaps["tab10"]
    for ax, (panel, op) in zip(axes, (("a", "put"), ("b", "get")), strict=True):
        rs = [r for r in records if r["op"] == op]
        for r in rs:
            lat = np.asarray(r["latencies_ns"]) / 1000
            ax.hist(
                lat,
                bins=bins,
                histtype="step",
                color=cmap(r["spe"] % 10),
                weights=np.full(len(lat), 100.0 / max(len(lat), 1)),
                label=f"SPE {r['spe']}",
            )
        if rs:
            peak = statistics.fmean(r["mode_ns"] for r in rs) / 1000
            ax.axvline(peak, color="black", linestyle="--", linewidth=1, label="mode (mean over SPEs)")
        ax.set(
            yscale="log",
            xlabel="DMA latency (us): queue entry to completion",
            ylabel="DMAs (%)",
            title=f"({panel}) {op}s, {len(rs)} SPEs, {machine}",
        )
        ax.grid(True, alpha=0.3)
    figure_legend(fig, axes, ncol=9)
    fig.suptitle(
        "seed 000, Figure 7: latency distribution with a main-memory hot spot (simulated; "
        "published peak and worst case held out)"
    )
    fig.savefig(path, dpi=100)


EXPERIMENT = Experiment(
    name=NAME,
    title="DMA latency distribution under the main-memory hot spot",
    paper="000",
    figure="Figure 7",
    description=(
        "8 SPEs issue nonblocking 16 KB puts or gets to main memory; every DMA's latency (MFC queue "
        "entry to completion) is recorded: mean, mode, median, 99th percentile and worst case per SPE."
    ),
    run=run,
    plot=plot,
    compare=compare,
    tables=tables,
    options=(
        Option("ops", "choice", "DMA direction (default both)", ("put", "get"), "--op"),
        Option("spes", "int", f"SPEs in the hot spot (default {DEFAULT_SPES})"),
        Option("count", "int", f"16 KB DMAs per SPE (default {DEFAULT_COUNT})"),
    ),
)
