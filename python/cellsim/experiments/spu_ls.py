"""``spu-ls``: an SPU's loads, stores and copies to its local store (Jiménez-González et al. 2007, §4.2.2).

Logical SPE 0 runs a loop of loads, stores or copies of 1- to 16-byte
elements over 32 KB of its local store (:func:`cellsim.spu.ls_access_loop`,
simulated access by access). The SPU moves 16 bytes per cycle with a 6-cycle
load latency; it has only quadword loads and stores, so narrower elements
cost extra issue slots. With ``dma=in`` logical SPE 1 streams 16 KB puts into
another part of SPE 0's local store meanwhile (at the port's 16 B per bus
cycle); every 128-byte DMA request takes the local store's port for a cycle,
ahead of the SPU. A copy's bytes count twice (read and written).

>>> from cellsim.experiments import spu_ls
>>> round(spu_ls.run(ops=["load"], elements=[16], dma=["none"])[0]["bandwidth_gbs"], 1)
33.5
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

from .. import spu
from ..kernels import load_dma_bench
from ..machine import Machine
from ..spec import MachineLike, MachineSpec
from . import Experiment, Option, RunSettings, Table
from ._common import bandwidth_panel, check_choices, curve_of, measure_each, plot_simulated, save_figure
from ._ppe import (
    ELEMENTS,
    ELEMENTS_OPTION,
    OPS,
    OPS_OPTION,
    check_ints,
    derived_rows,
    element_axis,
    element_rows,
    record_ghz,
)

__all__ = ["DMA", "EXPERIMENT", "FIELDS", "compare", "plot", "run", "tables"]

DMA: tuple[str, ...] = ("none", "in")
FIELDS = ("machine", "seed", "op", "element", "dma", "bytes", "cycles", "bandwidth_gbs")
BYTES = 32 << 10
_SRC, _DST, _DMA_LSA = 0x10000, 0x20000, 0x30000
_START = 3000  # cycles: the partner's puts are flowing by then


def _point(machine: MachineLike, seed: int, native: bool, op: str, element: int, dma: str) -> dict[str, Any]:
    m = MachineSpec.of(machine).machine(seed)

    def program(speid: int, argp: int, envp: int) -> int:
        spu.compute(_START)
        return spu.ls_access_loop(op, _SRC, BYTES, element, dst=_DST, fill=0x5A)

    m.load(0, program)
    if dma == "in":
        # 16 KB puts into SPE 0's local store for longer than the slowest loop (1 B stores).
        load_dma_bench(
            m, 1, put=True, ea=Machine.ls_ea(0) + _DMA_LSA, size=16384, batch=0, count=160, native=native
        )
    result = m.run()
    code = next(p.exit_code for p in result.programs if p.spe == 0)
    assert code is not None  # the program returned its cycle count
    cycles = int(code)
    moved = BYTES * (2 if op == "copy" else 1)
    return {
        "machine": m.name,
        "seed": seed,
        "op": op,
        "element": element,
        "dma": dma,
        "bytes": moved,
        "cycles": cycles,
        "bandwidth_gbs": moved / cycles * m.core_hz / 1e9,
    }


def run(
    *,
    ops: Iterable[str] = (),
    elements: Iterable[int] = (),
    dma: Iterable[str] = (),
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Measures an SPU's local-store bandwidth; one record per (dma, op, element)."""
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    ops_ = check_choices("op", ops, OPS)
    elements_ = check_ints("element size", elements, ELEMENTS)
    dma_ = check_choices("dma", dma, DMA)
    points = [(d, o, e) for d in dma_ for o in ops_ for e in elements_]
    return measure_each(
        points, lambda p: _point(machine, seed, native, op=p[1], element=p[2], dma=p[0]), progress
    )


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Section 4.2.2 of Jiménez-González et al. 2007: 16-byte accesses reach the 33.6 GB/s peak."""
    return derived_rows(EXPERIMENT.name, records, curve=("dma",))


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Bandwidth by element size, one column per op, one table per DMA load."""
    out = []
    for d in DMA:
        pts = {(r["op"], r["element"]): r for r in records if r["dma"] == d}
        if not pts:
            continue
        ops = [o for o in OPS if any(o == op for op, _ in pts)]
        rows = element_rows(pts, ops)
        what = "quiet local store" if d == "none" else "another SPE's puts into the same local store"
        out.append(
            Table(
                f"{EXPERIMENT.name}, {what}: GB/s, {next(iter(pts.values()))['machine']}",
                ["element (B)", *ops],
                rows,
            )
        )
    return out


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Bandwidth against the element size, one panel per op, with and without
    DMA into the local store, with the published 16 B peak."""
    from matplotlib.figure import Figure

    ops = [o for o in OPS if any(r["op"] == o for r in records)] or ["load"]
    fig = Figure(figsize=(4.6 * len(ops), 4.6), layout="constrained")
    axes = fig.subplots(1, len(ops), squeeze=False)[0]
    machine = records[0]["machine"] if records else "blade21"
    peak = 16 * record_ghz(records[0]) if records else 33.6
    for ax, op in zip(axes, ops, strict=True):
        for d, style in (("none", "-"), ("in", "--")):
            pts = curve_of(records, "element", op=op, dma=d)
            if pts:
                label = "simulated" + (", DMA into the local store" if d == "in" else "")
                plot_simulated(ax, pts, "element", "bandwidth_gbs", style, label=label)
        ax.plot(
            [16],
            [peak],
            linestyle="none",
            marker="*",
            markersize=13,
            markerfacecolor="none",
            markeredgecolor="crimson",
            label=f"published (Sec 4.2.2): 16 B reach the {peak:.1f} GB/s peak",
        )
        bandwidth_panel(ax, f"SPU {op} to its local store, {machine}", element_axis)
    save_figure(
        fig,
        path,
        "Jiménez-González et al., section 4.2.2: SPU to local store (lines simulated, star published)",
        legend=axes,
        ncol=3,
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        OPS_OPTION,
        ELEMENTS_OPTION,
        Option("dma", "choice", "none or in: DMA puts into the same local store", DMA, default=DMA),
    ),
)
