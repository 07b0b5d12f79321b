"""``latency-hist``: DMA latencies under the main-memory hot spot (Kistler et al. 2006, Figure 7).

The ``hotspot`` experiment's memory hot spot (``spes`` SPEs, default 8, each
issuing ``count`` nonblocking 16 KB gets or puts to its own buffer in main
memory, one wait at the end) with every DMA command's latency recorded.

Which latency: the paper calls the distribution's peak "a latency increase"
over an unloaded DMA. The time from the SPU's issue to completion cannot be
that: in a nonblocking stream the SPU keeps its 16-entry queue full, so by
Little's law that time is the queue depth over the SPE's share of the
bandwidth (17 commands in the system x 16 KB / 3.2 GB/s = 87 us with 8 SPEs):
a property of the benchmark's queue, not of the network. The network's answer
is the **service latency**, from the DMAC's start on a command (its first bus
request) to its tag-group update, which grows from the unloaded 16 KB DMA's
when eight SPEs share the memory. That is measured (``*_ns``, ``latencies_ns``,
``increase_ns``: mode minus the unloaded latency); the queue-inclusive latency
is kept beside it (``queued_*``).

One record per op and SPE with the distribution's statistics (``mode_ns``:
the most common latency, to :data:`MODE_BIN_NS`).

>>> from cellsim.experiments import latency_hist
>>> recs = latency_hist.run(ops=["get"], spes=2, count=32)
>>> [r["spe"] for r in recs], len(recs[0]["latencies_ns"])
([0, 1], 32)
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

import numpy as np

from .. import published as pub
from ..machine import Machine
from ..spec import MachineLike
from . import Experiment, Option, RunSettings, Table
from ._common import check_choices, measure_groups, save_figure
from ._contention import DMA_SIZE, Load, check_positive, check_spes, rows_for, run_kernels

__all__ = ["EXPERIMENT", "FIELDS", "MODE_BIN_NS", "compare", "plot", "run", "tables"]

DEFAULT_SPES = 8
DEFAULT_COUNT = 512
MODE_BIN_NS = 20.0
"""Width of the bins (from 0 ns) whose fullest one gives ``mode_ns`` (its centre)."""

_STATISTICS = ("unloaded_ns", "mean_ns", "mode_ns", "p50_ns", "p99_ns", "min_ns", "max_ns")
"""The service latencies each record summarises (ns), in the order the table shows them."""

FIELDS = (
    "machine",
    "seed",
    "op",
    "spe",
    "physical",
    "spes",
    "count",
    "bandwidth_gbs",
    *_STATISTICS,
    "increase_ns",
    "increase_x",
    "latencies_ns",
    "queued_mean_ns",
    "queued_mode_ns",
    "queued_max_ns",
    "transfers",
)


def _mode(lat: np.ndarray, width: float = MODE_BIN_NS) -> float:
    bins = np.floor(lat / width).astype(np.int64)
    values, counts = np.unique(bins, return_counts=True)
    return float((values[int(np.argmax(counts))] + 0.5) * width)


def _hot_spot(machine: MachineLike, seed: int, op: str, spes: int, count: int, native: bool) -> Any:
    """The memory hot spot of ``spes`` SPEs, ``count`` DMAs each, latencies recorded."""

    def setup(m: Machine) -> list[Load]:
        params = {"put": op == "put", "size": DMA_SIZE, "count": count}
        return [
            Load(s, "traffic", {**params, "eas": [int(m.alloc(DMA_SIZE))]}, count * DMA_SIZE)
            for s in range(spes)
        ]

    return run_kernels(machine, seed, [], native=native, setup=setup, latencies=True)


def run(
    *,
    ops: Iterable[str] = (),
    spes: int | None = None,
    count: int | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Records the DMA latency distribution of each SPE under the memory hot
    spot; one record per (op, SPE).
    """
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    ops_ = check_choices("op", ops, ("put", "get"))
    (x,) = check_spes([spes] if spes is not None else [], [DEFAULT_SPES], 1, 8, "SPE count")
    n = int(check_positive("count", count, DEFAULT_COUNT))

    def point(op: str) -> list[dict[str, Any]]:
        records = []
        # The same DMA alone on the machine: the latency the peak is an increase over.
        alone = _hot_spot(machine, seed, op, 1, 1, native)
        unloaded = float(alone.service_ns[0][0])
        res = _hot_spot(machine, seed, op, x, n, native)
        for s in range(x):
            lat = res.service_ns[s]
            queued = res.latencies_ns[s]
            mode = _mode(lat)
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
                    "unloaded_ns": unloaded,
                    "mean_ns": float(lat.mean()),
                    "mode_ns": mode,
                    "p50_ns": float(np.percentile(lat, 50)),
                    "p99_ns": float(np.percentile(lat, 99)),
                    "min_ns": float(lat.min()),
                    "max_ns": float(lat.max()),
                    "increase_ns": mode - unloaded,
                    "increase_x": mode / unloaded,
                    "latencies_ns": [float(v) for v in lat],
                    "queued_mean_ns": float(queued.mean()),
                    "queued_mode_ns": _mode(queued, 100.0),
                    "queued_max_ns": float(queued.max()),
                    "transfers": res.transfers if s == 0 else 0,
                }
            )
        return records

    return measure_groups(ops_, point, progress)


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 7 of Kistler et al. 2006 against the records: no measurable difference
    between SPEs (largest over smallest SPE mean latency, per op), and the
    withheld peak and worst-case latencies (simulated only: the peak's increase
    over the unloaded DMA, mean over the SPEs' modes; the largest service
    latency)."""
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
        unloaded = rs[0]["unloaded_ns"]
        return (
            f"{op}, {len(rs)} SPEs",
            statistics.fmean(r["increase_ns"] for r in rs),
            f"SPE modes {min(modes):.0f}-{max(modes):.0f} ns over {unloaded:.0f} ns unloaded "
            f"({statistics.fmean(modes) / unloaded:.1f}x)",
        )

    def worst(op: str, rs: list[dict[str, Any]]) -> tuple[str, float, str]:
        return (f"{op}, {len(rs)} SPEs", max(r["max_ns"] for r in rs), "")

    return [
        *rows_for(EXPERIMENT.name, "mean_max_over_min", per_op(fair)),
        *rows_for(EXPERIMENT.name, "increase_ns", per_op(peak)),
        *rows_for(EXPERIMENT.name, "max_ns", per_op(worst)),
    ]


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """The distribution's statistics per op and SPE, in microseconds."""
    if not records:
        return []
    shown = (*_STATISTICS, "queued_mean_ns")
    cols = ["op", "SPE", "physical", "GB/s", *(k.removesuffix("_ns").replace("_", " ") for k in shown)]
    rows = [
        [r["op"], str(r["spe"]), str(r["physical"]), f"{r['bandwidth_gbs']:.2f}"]
        + [f"{r[k] / 1000:.2f}" for k in shown]
        for r in records
    ]
    r0 = records[0]
    title = (
        f"{EXPERIMENT.name}: DMA service latency (us, DMAC start to completion; queued: from issue) "
        "under the memory hot spot, "
        f"{r0['spes']} SPEs x {r0['count']} DMAs of 16 KB, {r0['machine']}"
    )
    return [Table(title, cols, rows)]


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figure 7: the latency distribution of each SPE, (a) puts and (b) gets:
    one row per SPE (eight overlaid histograms cannot be told apart), on one
    latency axis, each SPE's mode marked."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    spes = sorted({int(r["spe"]) for r in records}) or [0]
    fig = Figure(figsize=(13, 1.1 * len(spes) + 2), layout="constrained")
    grid = fig.subplots(len(spes), 2, sharex=True, sharey=True, squeeze=False)
    machine = records[0]["machine"] if records else "qs20-1chip"
    top = max((r["max_ns"] for r in records), default=1.0)
    low = min((r["min_ns"] for r in records), default=0.0)
    bins = np.linspace(low * 0.98 / 1000, top * 1.02 / 1000, 81)
    cmap = colormaps["tab10"]
    for col, (panel, op) in enumerate((("a", "put"), ("b", "get"))):
        rs = {int(r["spe"]): r for r in records if r["op"] == op}
        grid[0][col].set_title(f"({panel}) {op}s, {len(rs)} SPEs, {machine}")
        for row, spe in enumerate(spes):
            ax = grid[row][col]
            ax.set(yscale="log")
            ax.set_ylabel(f"SPE {spe}\n(% of DMAs)", rotation=0, ha="right", va="center", fontsize=8)
            r = rs.get(spe)
            if r is None:
                continue
            lat = np.asarray(r["latencies_ns"]) / 1000
            weights = np.full(len(lat), 100.0 / max(len(lat), 1))
            ax.hist(lat, bins=bins, color=cmap(spe % 10), weights=weights, alpha=0.8)
            ax.axvline(r["mode_ns"] / 1000, color="black", linestyle="--", linewidth=1)
        grid[-1][col].set_xlabel("DMA latency (us): DMAC start to completion; dashed: the SPE's mode")
    save_figure(
        fig,
        path,
        (
            "Kistler et al., Figure 7: latency distribution with a main-memory hot spot (simulated; "
            "published peak and worst case withheld)"
        ),
        dpi=90,
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option("ops", "choice", "DMA direction", ("put", "get"), "--op", default=("put", "get")),
        Option("spes", "int", "SPEs in the hot spot", default=DEFAULT_SPES),
        Option("count", "int", "16 KB DMAs per SPE", default=DEFAULT_COUNT),
    ),
)
