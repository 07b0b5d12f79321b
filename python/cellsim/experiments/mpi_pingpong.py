"""``mpi-pingpong``: MPI latency and bandwidth between two SPEs (Kumar et al. 2007, Figures 2 and 3).

mpptest's ping-pong, modified as Kumar et al. 2007 did to keep its data in main
memory: rank 0 sends ``size`` bytes to rank 1, which sends them back, ``reps``
times; the latency is half a round trip (the time of the ``reps`` round
trips, by ``MPI.Wtime`` on the decrementer at 14.318 MHz as on Kumar et al. 2007's
board, over ``2 * reps``) and the bandwidth ``size`` over it. Both protocols
run on the same simulated chip: ``kumar`` (Kumar et al. 2007's buffered-mode design:
buffered up to 2 KB, synchronous above) and ``direct`` (cellsim's default).

>>> from cellsim.experiments import mpi_pingpong
>>> rs = mpi_pingpong.run(sizes=[0, 4096], reps=5, pages=["first-touch"], chips=["one"])
>>> [(r["protocol"], r["size"]) for r in rs]
[('kumar', 0), ('kumar', 4096), ('direct', 0), ('direct', 4096)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

from .. import mpi
from .. import published as pub
from ..exceptions import UsageError
from ..spec import MachineLike, MachineSpec
from . import Experiment, Option, RunSettings, Table
from ._common import check_choices, compare_row, measure_groups, save_figure
from ._mpi import (
    PAGES,
    PROTOCOL_OPTION,
    STYLE,
    check_protocols,
    page_overrides,
    protocols_in,
    run_ranks,
    side_by_side,
)

__all__ = ["EXPERIMENT", "SIZES", "compare", "default_reps", "plot", "run", "tables"]

SIZES: tuple[int, ...] = (0, *(1 << i for i in range(21)))
"""0 B, then 1 B to 1 MB by powers of two."""
EAGER_LIMIT = 2048
FIELDS = ("machine", "seed", "protocol", "size", "mode", "reps", "latency_us", "bandwidth_gbs")


def default_reps(size: int) -> int:
    """Round trips per size: about 100 us of simulated time, between 5 and 100 (100 round
    trips of a small message are 200 half trips between two decrementer readings: the 70 ns
    tick is 0.35 ns of a latency)."""
    return max(5, min(100, 100_000 // max(size, 1_000)))


def _pingpong(sizes: Sequence[int], reps: dict[int, int]) -> dict[int, float]:
    """The rank program: returns {size: half round trip in seconds} on rank 0."""
    comm = mpi.COMM_WORLD
    rank = comm.Get_rank()
    buf = mpi.alloc(max(sizes) or 1, dtype="u1")  # in main memory, as Kumar et al. 2007's modified pingpong
    buf[:] = rank + 1
    out: dict[int, float] = {}

    def round_trip(msg: list[Any], tag: int) -> None:
        if rank == 0:
            comm.Send(msg, dest=1, tag=tag)
            comm.Recv(msg, source=1, tag=tag)
        elif rank == 1:
            comm.Recv(msg, source=0, tag=tag)
            comm.Send(msg, dest=0, tag=tag)

    for size in sizes:
        msg = [buf, size, mpi.BYTE]
        for _ in range(2):  # warm-up round trips
            round_trip(msg, size % 1000)
        comm.Barrier()
        t0 = mpi.Wtime()
        for _ in range(reps[size]):
            round_trip(msg, size % 1000)
        t = mpi.Wtime() - t0
        out[size] = t / (2 * reps[size])
    return out


def run(
    *,
    protocols: Iterable[str] = (),
    sizes: Iterable[int] = (),
    reps: int | None = None,
    pages: Iterable[str] = (),
    chips: Iterable[str] = (),
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Ping-pong between ranks 0 and 1 (two SPEs), data in main memory."""
    machine, seed, _native, progress = EXPERIMENT.settings(settings)
    protos = check_protocols(protocols)
    sizes_ = tuple(int(s) for s in sizes) or SIZES
    for s in sizes_:
        if s < 0 or s > 64 << 20:
            raise UsageError(f"message size {s} is not between 0 and 64 MB")
    if reps is not None and reps < 1:
        raise UsageError(f"reps must be positive, not {reps}")
    nreps = {s: reps or default_reps(s) for s in sizes_}
    configs = _configs(machine, pages, chips)
    runs = [(c, proto) for c in configs for proto in protos]

    def point(p: tuple[tuple[str, str], str]) -> list[dict[str, Any]]:
        (pg, ch), proto = p
        res = run_ranks(
            lambda: _pingpong(sizes_, nreps),
            2,
            protocol=proto,
            machine=machine,
            seed=seed,
            overrides=[*page_overrides(pg), *_on_chips(machine, ch)],
        )
        times = res.values[0]
        return [
            {
                "machine": res.machine.name,
                "seed": seed,
                "protocol": proto,
                "pages": pg,
                "chips": ch,
                "size": s,
                "mode": _mode(proto, s),
                "reps": nreps[s],
                "latency_us": times[s] * 1e6,
                "bandwidth_gbs": s / times[s] / 1e9 if times[s] > 0 else 0.0,
            }
            for s in sizes_
        ]

    return measure_groups(runs, point, progress)


CHIPS: tuple[str, ...] = ("one", "two")


def _configs(machine: MachineLike, pages: Iterable[str], chips: Iterable[str]) -> list[tuple[str, str]]:
    """(pages, chips) of the runs: the paper's first, then on a blade what NUMA adds."""
    pages_, chips_ = tuple(pages), tuple(chips)
    if pages_ or chips_:
        return [
            (pg, ch)
            for pg in check_choices("pages", pages_, PAGES)
            for ch in check_choices("chips", chips_, CHIPS)
        ]
    if MachineSpec.of(machine).facts.chips < 2:
        return [("first-touch", "one")]
    return [("first-touch", "one"), ("remote", "one"), ("interleave", "one"), ("first-touch", "two")]


def _on_chips(machine: MachineLike, chips: str) -> list[str]:
    """Placement overrides putting rank 1 on chip 1 (``two``), or nothing."""
    if chips == "one":
        return []
    m = MachineSpec.of(machine).machine()  # its default placement: drawn by the engine
    if m.chips < 2:
        raise UsageError(f"chips 'two': machine {machine!r} has one chip")
    order = [0, 8, *(p for p in sorted(m.placement) if p not in (0, 8))]
    return [f"placement=[{', '.join(map(str, order))}]"]


def _mode(protocol: str, size: int) -> str:
    if protocol == "kumar":
        return "buffered" if size <= EAGER_LIMIT else "synchronous"
    return "eager" if size <= EAGER_LIMIT else "pull"


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kumar et al. 2007's withheld latency and bandwidth: kumar's smallest latency and
    largest bandwidth (simulated values only), with direct's beside them in the note."""
    rows = []
    for entry in pub.entries(experiment=EXPERIMENT.name):
        sel = [r for r in records if pub.matches(entry.where, r)]
        if not sel:
            continue
        same = {k: v for k, v in entry.where.items() if k != "protocol"}
        other = [r for r in records if r["protocol"] == "direct" and pub.matches(same, r)]
        if entry.quantity == "min_latency_us":
            best = min(sel, key=lambda r: r["latency_us"])
            notes = []
            # the smallest size of Fig 2 is not in the text (mpptest starts at 0 B; a log axis
            # at 1 B): from 1 B on the data goes through P_i, so give that latency too
            one = [r for r in sel if r["size"] == min((x["size"] for x in sel if x["size"] > 0), default=-1)]
            if one and best["size"] == 0:
                notes.append(f"kumar at {one[0]['size']} B: {one[0]['latency_us']:.3f} us")
            if other:
                d = min(other, key=lambda r: r["latency_us"])
                notes.append(f"direct: {d['latency_us']:.3f} us at {d['size']} B")
            rows.append(compare_row(entry, f"kumar, {best['size']} B", best["latency_us"], "; ".join(notes)))
        elif entry.quantity == "max_bandwidth_gbs":
            best = max(sel, key=lambda r: r["bandwidth_gbs"])
            note = ""
            if other:
                d = max(other, key=lambda r: r["bandwidth_gbs"])
                note = f"direct: {d['bandwidth_gbs']:.2f} GB/s at {d['size']} B"
            rows.append(compare_row(entry, f"kumar, {best['size']} B", best["bandwidth_gbs"], note))
    return rows


def _config(r: dict[str, Any]) -> str:
    return f"pages {r['pages']}, {'both ranks on chip 0' if r['chips'] == 'one' else 'rank 1 on chip 1'}"


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Latency and bandwidth by size, the two protocols side by side; a table
    per page placement and chip configuration."""
    out = []
    for cfg in dict.fromkeys(_config(r) for r in records):
        rs = [r for r in records if _config(r) == cfg]
        lat = side_by_side(rs, lambda r: r["size"], "latency_us")
        bw = side_by_side(rs, lambda r: r["size"], "bandwidth_gbs")
        protos = protocols_in(rs)
        cols = ["size (B)"]
        cols += [f"{p} latency (us)" for p in protos] + [f"{p} GB/s" for p in protos]
        if len(protos) == 2:
            cols.append("kumar / direct time")
        rows = []
        for s in sorted(lat):
            cells = [str(s)]
            cells += [f"{lat[s][p]:.3f}" if p in lat[s] else "" for p in protos]
            cells += [f"{bw[s][p]:.2f}" if p in bw[s] else "" for p in protos]
            if len(protos) == 2 and all(p in lat[s] for p in protos):
                cells.append(f"{lat[s]['kumar'] / lat[s]['direct']:.2f}x")
            rows.append(cells)
        m = rs[0]["machine"]
        title = f"{EXPERIMENT.name}: half round trip and bandwidth, data in main memory, {m}, {cfg}"
        out.append(Table(title, cols, rows))
    return out


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figures 2 and 3: latency and bandwidth against message size, both protocols."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 5), layout="constrained")
    ax_l, ax_b = fig.subplots(1, 2)
    configs = list(dict.fromkeys(_config(r) for r in records))
    styles = ["-", "--", ":", "-."]
    for k, cfg in enumerate(configs):
        for proto in ("kumar", "direct"):
            pts = sorted(
                (r for r in records if r["protocol"] == proto and _config(r) == cfg), key=lambda r: r["size"]
            )
            if not pts:
                continue
            st = STYLE[proto]
            label = st["label"] if k == 0 else f"{st['label']}, {cfg}"
            kw = {
                "color": st["color"],
                "marker": st["marker"] if k == 0 else None,
                "markersize": 4,
                "linestyle": styles[k % len(styles)],
                "alpha": 1.0 if k == 0 else 0.6,
                "label": label,
            }
            ax_l.plot([max(r["size"], 0.5) for r in pts], [r["latency_us"] for r in pts], **kw)
            big = [r for r in pts if r["size"] > 0]
            ax_b.plot([r["size"] for r in big], [r["bandwidth_gbs"] for r in big], **kw)
    for ax in (ax_l, ax_b):
        ax.set_xscale("log", base=2)
        ax.axvline(EAGER_LIMIT, color="gray", linestyle=":", linewidth=1)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_xlabel("message size (bytes; 0 B drawn at 0.5)")
        ax.legend(fontsize=8)
    m = records[0]["machine"] if records else "?"
    ax_l.set(yscale="log", ylabel="latency: half round trip (us)", title=f"(Fig 2) latency, {m}")
    ax_b.set(ylabel="bandwidth (GB/s)", title=f"(Fig 3) bandwidth, {m}")
    save_figure(
        fig,
        path,
        "Kumar et al.: MPI ping-pong between two SPEs, data in main memory (dotted: 2 KB, the mode switch)",
        dpi=110,
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        PROTOCOL_OPTION,
        Option("sizes", "ints", "message sizes", default_note="0 and 1 B to 1 MB by powers of two", unit="B"),
        Option("reps", "int", "round trips per size", default_note="about 100 us of simulated time"),
        Option(
            "pages",
            "choice",
            "where main memory's pages go",
            PAGES,
            default_note="first-touch; on a blade also remote and interleave",
        ),
        Option(
            "chips",
            "choice",
            "both ranks on chip 0, or rank 1 on chip 1",
            CHIPS,
            default_note="one; on a blade also two",
        ),
    ),
)
