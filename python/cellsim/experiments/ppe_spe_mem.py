"""``ppe-spe-mem``: the PPE and the SPEs streaming to main memory at once.

Not in the papers; asked by users of the chip: when the PPE streams through
memory while SPEs do too, who slows whom, and by how much?

The PPE runs its best memory loop — 16-byte elements on both hardware
threads, ``load`` or ``copy`` (or ``store``) over fresh buffers of
``ppe_kb`` KB — while 1 to 8 SPEs run Jiménez-González et al. 2007's bandwidth loop (16 KB
DMA-elem ``get``, ``put`` or ``copy`` on their own regions, as in
``spe-mem``). The PPE starts the SPEs' programs (after filling its L2 with
dirty lines for a store or copy: the steady state of a long run), waits
10 us for their streams to run at full rate, and its loop is the measurement
window: ``ppe_gbs`` is its
bandwidth, ``spe_gbs`` the bytes all SPEs moved during the window over its
length. ``ppe_alone_gbs`` is the same PPE loop with no SPE running,
``spe_alone_gbs`` the SPEs over a window of the same length with the PPE idle;
the slowdowns are alone over together (1 = unaffected, 2 = half the speed).
``spes_outlasted`` says whether every SPE was still streaming when the
window ended (it should be). Memory is placed as the machine places it (on
``blade21`` 70% of the pages in the local bank, 30% in the other chip's).

>>> from cellsim.experiments import ppe_spe_mem
>>> r = ppe_spe_mem.run(ppe_ops=["load"], spe_ops=["get"], spes=[8], mb_per_spe=2, ppe_kb=128)[0]
>>> r["ppe_slowdown"] > 1.5, r["spes_outlasted"]
(True, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from os import PathLike
from typing import Any, Unpack

from .. import ppe
from ..exceptions import UsageError
from ..kernels import Kernel, region
from ..spec import MachineLike, MachineSpec
from . import Experiment, Option, RunSettings, Table
from ._common import check_choices, measure_each, save_figure
from ._contention import MB, check_positive, mb_per_spe_option, memory_region

__all__ = ["EXPERIMENT", "FIELDS", "compare", "plot", "run", "tables"]

PPE_OPS: tuple[str, ...] = ("load", "store", "copy")
SPE_OPS: tuple[str, ...] = ("get", "put", "copy")
PPE_DEFAULT: tuple[str, ...] = ("load", "copy")
SPE_DEFAULT: tuple[str, ...] = ("get", "put")
SPES: tuple[int, ...] = (1, 2, 4, 8)
DEFAULT_PPE_KB = 256
FIRST_MB = 2
"""MB per SPE and direction tried first; doubled until the SPEs outlast the window."""
MAX_MB = 32
_DELAY = 20_000  # cycles (about 10 us on blade21) before the PPE starts
FIELDS = (
    "machine",
    "seed",
    "ppe_op",
    "spe_op",
    "spes",
    "ppe_gbs",
    "ppe_alone_gbs",
    "ppe_slowdown",
    "spe_gbs",
    "spe_alone_gbs",
    "spe_slowdown",
    "window_us",
    "spes_outlasted",
)


def _window(
    machine: MachineLike,
    seed: int,
    native: bool,
    *,
    ppe_op: str | None,
    spe_op: str,
    spes: int,
    ppe_kb: int,
    mb: int,
    idle_cycles: int = 0,
) -> dict[str, Any]:
    """One run: ``spes`` SPEs stream; the PPE runs its loop (or idles
    ``idle_cycles``) after the delay. Returns the window's length and what
    the PPE and the SPEs moved in it."""
    m = MachineSpec.of(machine).machine(seed)
    # The PPE's buffers first: the same addresses (and memory banks) in every run.
    nbytes = ppe_kb << 10
    l2 = m.facts.ppe_l2_bytes
    junk, src, dst = m.alloc(l2, 4096), m.alloc(nbytes, 4096), m.alloc(nbytes, 4096)
    total = mb * MB
    programs = []
    for _ in range(spes):
        params = memory_region(m, spe_op, span=total, total=total, size=16384)
        programs.append(Kernel("region", **params) if native else partial(region, **params))
    out: dict[str, Any] = {}

    def moved() -> int:
        s = m.stats()
        return int(s["get_bytes"]) + int(s["put_bytes"])

    def main() -> None:
        if ppe_op in ("store", "copy"):
            ppe.access_loop("store", junk, l2, 16, 2)  # the L2 full of dirty lines: the steady state
        for spe, program in enumerate(programs):
            m.start_spe(spe, program)
        ppe.compute(_DELAY)
        before, t0 = moved(), m.cycles
        if ppe_op is None:
            ppe.compute(idle_cycles)
        else:
            ppe.access_loop(ppe_op, src, nbytes, 16, 2, dst=dst, fill=0x5A)
        out["cycles"] = m.cycles - t0
        out["spe_bytes"] = moved() - before
        out["end"] = m.cycles

    result = m.run(main)
    ends = [p.end_cycle or 0 for p in result.programs if p.spe is not None]
    ghz = m.core_hz / 1e9
    ppe_bytes = nbytes * (2 if ppe_op == "copy" else 1) if ppe_op else 0
    return {
        "machine": m.name,
        "cycles": out["cycles"],
        "window_us": out["cycles"] / ghz / 1e3,
        "ppe_gbs": ppe_bytes / out["cycles"] * ghz,
        "spe_gbs": out["spe_bytes"] / out["cycles"] * ghz,
        "outlasted": all(e >= out["end"] for e in ends),
    }


def run(
    *,
    ppe_ops: Iterable[str] = (),
    spe_ops: Iterable[str] = (),
    spes: Iterable[int] = (),
    ppe_kb: int | None = None,
    mb_per_spe: int | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Measures the PPE and the SPEs streaming to memory together and alone;
    one record per (PPE op, SPE op, SPE count).
    """
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    ppe_ops_ = check_choices("PPE op", ppe_ops, PPE_OPS) if ppe_ops else PPE_DEFAULT
    spe_ops_ = check_choices("SPE op", spe_ops, SPE_OPS) if spe_ops else SPE_DEFAULT
    spes_ = tuple(int(x) for x in spes) or SPES
    for x in spes_:
        if not 1 <= x <= 8:
            raise UsageError(f"SPE count {x} is not 1 to 8")
    kb = int(check_positive("ppe_kb", ppe_kb, DEFAULT_PPE_KB))
    fixed_mb = None if mb_per_spe is None else int(check_positive("mb_per_spe", mb_per_spe, FIRST_MB))

    def window(**kw: Any) -> dict[str, Any]:
        mb = fixed_mb or FIRST_MB
        while True:
            w = _window(machine, seed, native, ppe_kb=kb, mb=mb, **kw)
            if w["outlasted"] or fixed_mb is not None or mb >= MAX_MB:
                return w
            mb *= 2

    points = [(p, s, x) for p in ppe_ops_ for s in spe_ops_ for x in spes_]
    alone_ppe: dict[str, dict[str, Any]] = {}

    def point(pt: tuple[str, str, int]) -> dict[str, Any]:
        p, s, x = pt
        if p not in alone_ppe:
            alone_ppe[p] = window(ppe_op=p, spe_op="get", spes=0)
        together = window(ppe_op=p, spe_op=s, spes=x)
        spe_alone = window(ppe_op=None, spe_op=s, spes=x, idle_cycles=together["cycles"])
        return {
            "machine": together["machine"],
            "seed": seed,
            "ppe_op": p,
            "spe_op": s,
            "spes": x,
            "ppe_gbs": together["ppe_gbs"],
            "ppe_alone_gbs": alone_ppe[p]["ppe_gbs"],
            "ppe_slowdown": alone_ppe[p]["ppe_gbs"] / together["ppe_gbs"],
            "spe_gbs": together["spe_gbs"],
            "spe_alone_gbs": spe_alone["spe_gbs"],
            "spe_slowdown": spe_alone["spe_gbs"] / together["spe_gbs"],
            "window_us": together["window_us"],
            "spes_outlasted": together["outlasted"] and spe_alone["outlasted"],
        }

    return measure_each(points, point, progress)


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nothing published: the papers did not measure this."""
    return []


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """One table per PPE op and SPE op: bandwidths alone and together, and the slowdowns."""
    out = []
    for p in PPE_OPS:
        for s in SPE_OPS:
            pts = sorted(
                (r for r in records if (r["ppe_op"], r["spe_op"]) == (p, s)), key=lambda r: r["spes"]
            )
            if not pts:
                continue
            rows = [
                [
                    str(r["spes"]),
                    f"{r['ppe_alone_gbs']:.2f}",
                    f"{r['ppe_gbs']:.2f}",
                    f"{r['ppe_slowdown']:.2f}x",
                    f"{r['spe_alone_gbs']:.2f}",
                    f"{r['spe_gbs']:.2f}",
                    f"{r['spe_slowdown']:.2f}x",
                    f"{r['window_us']:.0f}" + ("" if r["spes_outlasted"] else " (SPEs ended first)"),
                ]
                for r in pts
            ]
            out.append(
                Table(
                    f"{EXPERIMENT.name}: PPE {p} (16 B, 2 threads) with SPEs {s} (16 KB DMAs), "
                    f"{pts[0]['machine']}",
                    [
                        "SPEs",
                        "PPE alone GB/s",
                        "PPE with SPEs",
                        "PPE slowdown",
                        "SPEs alone GB/s",
                        "SPEs with PPE",
                        "SPE slowdown",
                        "window (us)",
                    ],
                    rows,
                )
            )
    return out


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """(a) the PPE's bandwidth and (b) the SPEs' aggregate against the SPE
    count, alone (dotted) and together (solid), one colour per op pair."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 5.5), layout="constrained")
    ax_p, ax_s = fig.subplots(1, 2)
    pairs = sorted({(r["ppe_op"], r["spe_op"]) for r in records})
    cmap = colormaps["tab10"]
    for k, (p, s) in enumerate(pairs):
        pts = sorted((r for r in records if (r["ppe_op"], r["spe_op"]) == (p, s)), key=lambda r: r["spes"])
        xs = [r["spes"] for r in pts]
        c = cmap(k % 10)
        lab = f"PPE {p}, SPEs {s}"
        ax_p.plot(xs, [r["ppe_gbs"] for r in pts], marker="o", color=c, label=f"{lab}: together")
        ax_p.plot(xs, [r["ppe_alone_gbs"] for r in pts], linestyle=":", color=c, label=f"{lab}: PPE alone")
        ax_s.plot(xs, [r["spe_gbs"] for r in pts], marker="o", color=c, label=f"{lab}: together")
        ax_s.plot(xs, [r["spe_alone_gbs"] for r in pts], linestyle=":", color=c, label=f"{lab}: SPEs alone")
    machine = records[0]["machine"] if records else "blade21"
    ax_p.set(xlabel="SPEs streaming", ylabel="GB/s", title=f"(a) the PPE's loop (16 B, 2 threads), {machine}")
    ax_s.set(xlabel="SPEs streaming", ylabel="GB/s", title=f"(b) all SPEs together, {machine}")
    for ax in (ax_p, ax_s):
        ax.set_xticks(sorted({r["spes"] for r in records}) or [1])
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    save_figure(
        fig,
        path,
        "The PPE and the SPEs streaming to memory at once (no published data)",
        legend=(ax_p, ax_s),
        ncol=4,
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option(
            "ppe_ops", "choice", "the PPE's load, store or copy", PPE_OPS, "--ppe-op", default=PPE_DEFAULT
        ),
        Option("spe_ops", "choice", "the SPEs' get, put or copy", SPE_OPS, "--spe-op", default=SPE_DEFAULT),
        Option("spes", "ints", "SPE counts, comma-separated", default=SPES),
        Option("ppe_kb", "int", "size of each PPE buffer", default=DEFAULT_PPE_KB, unit="KB"),
        mb_per_spe_option(
            "data each SPE moves per direction", FIRST_MB, "doubled until the SPEs outlast the PPE"
        ),
    ),
)
