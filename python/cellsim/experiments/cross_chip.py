"""``cross-chip``: what crossing from one chip of a blade to the other costs.

The blades of Jiménez-González et al. (``blade21``), Kumar et al. and Chen et
al. (``qs20``) have two Cell chips joined by the Broadband Interface through
their IOIF0s, each with its own memory. The paper of Jiménez-González et al.
measured the second chip's memory "through the IO ... at 7 GB/s" and warned
that "SPEs could be allocated in different chips, and they would have to
communicate through the IO, limited to 7 GB/s". This experiment measures both
sides of the link from an SPE of chip 0:

``memory``
    16 KB DMAs streamed (no wait until the end) by 1 or 2 SPEs to regions
    in chip 0's memory (``local``) or chip 1's (``remote``): get, put, copy.
``spe``
    SPE 0 moves get+put pairs of 16 KB with a passive SPE on chip 0
    (``local``) or on chip 1 (``remote``) (the software of the paper saw one
    chip's SPEs: this point lets chip 1's SPEs be used).
``latency``
    a blocking 128-byte get from memory or from another SPE's local store,
    local or remote.

``bandwidth_gbs`` is the sum over the active SPEs of each one's bytes (both
directions for copy and get+put) over its own elapsed time; ``per_direction_gbs``
divides a two-way transfer between its directions, each of which has its own
lane of the link.

>>> from cellsim.experiments import cross_chip
>>> r = cross_chip.run(paths=["memory"], ops=["get"], spes=[1], where=["remote"], mb_per_spe=1)[0]
>>> r["where"], r["path"], round(r["bandwidth_gbs"]) <= 7
('remote', 'memory', True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

from .. import published as pub
from ..machine import Machine
from ..spec import MachineLike, MachineSpec
from . import Experiment, Option, RunSettings, Table
from ._common import check_choices, figure_legend, measure_each, save_figure
from ._contention import (
    LS_GET,
    MB,
    Load,
    check_positive,
    check_spes,
    mb_per_spe_option,
    memory_load,
    memory_region,
    pair_load,
    rows_for,
    run_kernels,
)

__all__ = ["EXPERIMENT", "FIELDS", "PATHS", "compare", "plot", "run", "tables"]

PATHS: tuple[str, ...] = ("memory", "spe", "latency")
WHERE: tuple[str, ...] = ("local", "remote")
OPS: tuple[str, ...] = ("get", "put", "copy")
DEFAULT_MB = 4
SPES: tuple[int, ...] = (1, 2)
"""MB per SPE and direction: the steady state of a 16 KB stream (the link's bound is reached long before)."""
DMA = 16384
LATENCY_DMAS = 64
"""Blocking 128-byte gets whose mean is the latency."""


FIELDS = (
    "machine",
    "seed",
    "path",
    "where",
    "op",
    "spes",
    "bandwidth_gbs",
    "per_direction_gbs",
    "latency_ns",
    "placement",
    "bif_bytes",
)


def _both_chips(machine: MachineLike) -> list[str]:
    """Overrides that let software use every SPE of both chips, placed by
    number (logical SPE n on physical SPE n: 0-7 on chip 0, 8-15 on chip 1)."""
    chips = MachineSpec.of(machine).facts.chips
    if chips < 2:
        from ..exceptions import UsageError

        raise UsageError(f"machine {machine!r} has one chip: cross-chip needs a blade (qs20, blade21, qs22)")
    return [f"spes=[{', '.join(str(s) for s in range(8 * chips))}]", 'placement="identity"']


def _memory(
    machine: MachineLike, seed: int, op: str, x: int, where: str, total: int, native: bool
) -> dict[str, Any]:
    node = 0 if where == "local" else 1

    def setup(m: Machine) -> list[Load]:
        return [
            memory_load(s, memory_region(m, op, span=total, total=total, size=DMA, node=node))
            for s in range(x)
        ]

    res = run_kernels(machine, seed, [], native=native, setup=setup, overrides=_both_chips(machine))
    dirs = 2 if op == "copy" else 1
    return _record(res, "memory", where, op, x, res.aggregate_gbs, res.aggregate_gbs / dirs)


def _spe(machine: MachineLike, seed: int, where: str, total: int, native: bool) -> dict[str, Any]:
    partner = 1 if where == "local" else 9
    res = run_kernels(
        machine,
        seed,
        [pair_load(0, partner, size=DMA, total=total)],
        native=native,
        overrides=_both_chips(machine),
    )
    return _record(res, "spe", where, "get+put", 1, res.aggregate_gbs, res.aggregate_gbs / 2)


def _latency(machine: MachineLike, seed: int, target: str, where: str, native: bool) -> dict[str, Any]:
    def setup(m: Machine) -> list[Load]:
        if target == "memory":
            ea = int(m.alloc(4096, 128, node=0 if where == "local" else 1))
        else:
            ea = Machine.ls_ea(1 if where == "local" else 9) + LS_GET
        params = {"put": False, "ea": ea, "size": 128, "batch": 1, "count": LATENCY_DMAS}
        return [Load(0, "dma_bench", params, LATENCY_DMAS * 128)]

    res = run_kernels(machine, seed, [], native=native, setup=setup, overrides=_both_chips(machine))
    rec = _record(
        res, "latency", where, f"get from {'memory' if target == 'memory' else 'an LS'}", 1, 0.0, 0.0
    )
    rec["latency_ns"] = res.elapsed_ns[0] / LATENCY_DMAS
    return rec


def _record(res: Any, path: str, where: str, op: str, x: int, gbs: float, per_dir: float) -> dict[str, Any]:
    return {
        "machine": res.machine,
        "seed": res.seed,
        "path": path,
        "where": where,
        "op": op,
        "spes": x,
        "bandwidth_gbs": gbs,
        "per_direction_gbs": per_dir,
        "latency_ns": None,
        "placement": res.placement[:x] if path == "memory" else res.placement[:2],
        "bif_bytes": list(res.stats.get("bif_bytes", [0, 0])),
    }


def run(
    *,
    paths: Iterable[str] = (),
    ops: Iterable[str] = (),
    spes: Iterable[int] = (),
    where: Iterable[str] = (),
    mb_per_spe: int | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Measures the paths between the chips of a blade; one record per point."""
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    paths_ = check_choices("path", paths, PATHS)
    ops_ = check_choices("op", ops, OPS)
    spes_ = check_spes(spes, SPES, 1, 8, "SPE count")
    where_ = check_choices("where", where, WHERE)
    total = int(check_positive("mb_per_spe", mb_per_spe, DEFAULT_MB)) * MB
    jobs: list[Any] = []
    for w in where_:
        if "memory" in paths_:
            jobs += [
                lambda o=o, x=x, w=w: _memory(machine, seed, o, x, w, total, native)
                for o in ops_
                for x in spes_
            ]
        if "spe" in paths_:
            jobs.append(lambda w=w: _spe(machine, seed, w, total, native))
        if "latency" in paths_:
            jobs += [lambda t=t, w=w: _latency(machine, seed, t, w, native) for t in ("memory", "ls")]
    return measure_each(jobs, lambda job: job(), progress)


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paper's link: the other chip's memory and SPEs reached at about
    7 GB/s each way (on its blade; on another machine a reference)."""

    def remote_gbs(e: pub.Published) -> list[tuple[str, float, str]]:
        out = []
        for r in records:
            if r["where"] == "remote" and pub.matches(e.where, r):
                local = [
                    q["per_direction_gbs"]
                    for q in records
                    if (q["where"], q["path"], q["op"], q["spes"]) == ("local", r["path"], r["op"], r["spes"])
                ]
                note = f"local: {local[0]:.1f} GB/s" if local else ""
                out.append((f"{r['path']}, {r['op']}, {r['spes']} SPE(s)", r["per_direction_gbs"], note))
        return out

    return rows_for(EXPERIMENT.name, "per_direction_gbs", remote_gbs)


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Bandwidth and latency, local beside remote."""
    if not records:
        return []
    rows = []
    for r in records:
        value = f"{r['latency_ns']:.1f} ns" if r["path"] == "latency" else f"{r['bandwidth_gbs']:.2f} GB/s"
        per_dir = "" if r["path"] == "latency" else f"{r['per_direction_gbs']:.2f}"
        link = r["bif_bytes"]
        rows.append(
            [
                r["path"],
                r["op"],
                str(r["spes"]),
                r["where"],
                value,
                per_dir,
                f"{link[0] >> 10} / {link[1] >> 10}",
            ]
        )
    title = f"{EXPERIMENT.name}: chip 0's SPEs to chip 0 (local) and chip 1 (remote), {records[0]['machine']}"
    cols = ["path", "op", "SPEs", "where", "result", "GB/s per direction", "BIF KB 0->1 / 1->0"]
    return [Table(title, cols, rows)]


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Bars: each bandwidth point local and remote, and the latencies."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 5), layout="constrained")
    ax_bw, ax_lat = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 1]})
    bw = [r for r in records if r["path"] != "latency"]
    labels = list(dict.fromkeys(f"{r['path']} {r['op']}\n{r['spes']} SPE" for r in bw))
    for j, w in enumerate(WHERE):
        ys = [
            next(
                (
                    r["per_direction_gbs"]
                    for r in bw
                    if r["where"] == w and f"{r['path']} {r['op']}\n{r['spes']} SPE" == lb
                ),
                0.0,
            )
            for lb in labels
        ]
        ax_bw.bar([i + (j - 0.5) * 0.4 for i in range(len(labels))], ys, 0.4, label=w)
    ax_bw.set_xticks(range(len(labels)), labels, fontsize=8)
    ax_bw.set(ylabel="GB/s per direction", title="bandwidth")
    for e in pub.entries(experiment=EXPERIMENT.name):
        if isinstance(e.value, float):
            ax_bw.axhline(
                e.value, color="black", linestyle="--", linewidth=1, label=f"published: {e.value:g} GB/s"
            )
            break
    lat = [r for r in records if r["path"] == "latency"]
    lat_labels = list(dict.fromkeys(r["op"] for r in lat))
    for j, w in enumerate(WHERE):
        ys = [
            next((r["latency_ns"] for r in lat if r["where"] == w and r["op"] == lb), 0.0)
            for lb in lat_labels
        ]
        ax_lat.bar([i + (j - 0.5) * 0.4 for i in range(len(lat_labels))], ys, 0.4, label=w)
    ax_lat.set_xticks(range(len(lat_labels)), lat_labels, fontsize=8)
    ax_lat.set(ylabel="ns", title="128-byte get, blocking")
    for ax in (ax_bw, ax_lat):
        ax.grid(True, axis="y", alpha=0.3)
    figure_legend(fig, [ax_bw, ax_lat], ncol=3)
    machine = records[0]["machine"] if records else "blade21"
    save_figure(
        fig,
        path,
        f"Between the chips of a blade ({machine}): chip 0's SPEs to local and remote memory and SPEs",
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option("paths", "choice", "memory, spe or latency", PATHS, "--path", default=PATHS),
        Option("ops", "choice", "memory op", OPS, "--op", default=OPS),
        Option("spes", "ints", "SPEs streaming to memory", default=SPES),
        Option("where", "choice", "local or remote", WHERE, "--where", default=WHERE),
        mb_per_spe_option("data per SPE and direction", DEFAULT_MB),
    ),
)
