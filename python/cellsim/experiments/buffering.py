"""``buffering``: single, double and triple buffering on one SPE (Chen et al. 2006, Figures 10-12).

Chen et al. 2006's test kernels t1-t4 (two 8-byte reads and one 8-byte write per
iteration, ``C_inner`` = 0.51, 1.73, 2.83, 3.93 ns, ``C_outer`` = 300 ns)
are generated for 1, 2 and 3 buffers (:mod:`cellsim.buffering.loop`) and run
on logical SPE 0 with their data checked, each point for ``blocks`` blocks
(default 256, so that the prologue and epilogue weigh well under 1%):

- **Figure 10**: throughput against the block factor for 1b, 2b and 3b; the
  same loop without computation gives the DMA-bound ceiling (``dma_only_mbs``);
- **Figure 11**: the same space for every scheme: the x axis is the 1b block
  factor ``B``; 2b uses ``B/2`` and 3b ``B/3``;
- **Figure 12**: 2b simulated against the model, with ``C`` as given and
  10% less and more (``c_scale``).

The model uses ``S`` and ``D1`` fitted on the simulated machine
(:mod:`cellsim.buffering.fitting`) unless ``S``/``D1`` are given (the paper's:
``--S 130 --D1 0.0877``); ``paper_predicted_mbs`` always has the prediction
with the paper's constants. Throughput counts the bytes of all three streams
(MB/s, 10^6 bytes per second).

>>> from cellsim.experiments import buffering
>>> recs = buffering.run(kernels=["t3"], figures=["12"], blocks=32)
>>> sorted({r["c_scale"] for r in recs})
[0.9, 1.0, 1.1]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from os import PathLike
from statistics import mean
from typing import Any, NamedTuple, Unpack

from .. import published as pub
from ..buffering import BLOCKS_PER_POINT as DEFAULT_BLOCKS
from ..buffering import (
    C_OUTER_NS,
    KERNELS,
    PAPER,
    constants_for,
    fitted_constants,
    predict,
    run_loop,
    seed004_loop,
)
from ..buffering import SEED004_BLOCK_FACTORS as FIG10_BLOCKS
from ..exceptions import UsageError
from ..spec import MachineSpec
from . import Experiment, Option, RunSettings, Table
from ._common import check_choices, compare_row, save_figure

__all__ = [
    "C_SCALES",
    "DEFAULT_BLOCKS",
    "EXPERIMENT",
    "FIELDS",
    "FIG10_BLOCKS",
    "FIG11_SPACE_BLOCKS",
    "FIGURES",
    "SCHEMES",
    "Statement",
    "compare",
    "plot",
    "run",
    "tables",
]

FIGURES: tuple[str, ...] = ("10", "11", "12")
SCHEMES: tuple[int, ...] = (1, 2, 3)
FIG11_SPACE_BLOCKS: tuple[int, ...] = (12, 24, 48, 96, 192, 384, 768, 1536, 3072, 6144, 9216)
"""Figure 11's x axis: the 1b block factor ``B`` (space ``24 B`` bytes); multiples of 12,
so that ``B/2`` and ``B/3`` are whole, even block factors."""
C_SCALES: tuple[float, ...] = (0.9, 1.0, 1.1)
BYTES_PER_ITER = 24

FIELDS = (
    "figure",
    "kernel",
    "scheme",
    "block",
    "space_bytes",
    "c_scale",
    "simulated_mbs",
    "predicted_mbs",
    "paper_predicted_mbs",
    "regime",
    "dma_only_mbs",
    "n",
    "blocks",
    "c_inner_ns",
    "c_outer_ns",
    "S_ns",
    "D1_ns_per_byte",
    "constants",
    "fit_S_ns",
    "fit_D1_ns_per_byte",
    "machine",
    "seed",
)

_COLORS = {1: "tab:red", 2: "tab:blue", 3: "tab:green"}
_MARKERS = {1: "s", 2: "o", 3: "^"}
_WIDTHS = {1: 1.5, 2: 3.5, 3: 1.2}  # 2b wide under 3b: the two often coincide


def run(
    *,
    kernels: Iterable[str] = (),
    figures: Iterable[str | int] = (),
    blocks: int | None = None,
    S: float | None = None,
    D1: float | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """Simulates Chen et al. 2006's Figures 10-12; one record per plotted point."""
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    kernels_ = check_choices("kernel", kernels, tuple(KERNELS))
    figs = check_choices("figure", [str(f) for f in figures], FIGURES)
    nblocks = DEFAULT_BLOCKS if blocks is None else blocks
    if not (isinstance(nblocks, int) and nblocks >= 1):
        raise UsageError(f"blocks must be a positive integer, not {nblocks!r}")
    m = MachineSpec.of(machine).machine(seed)
    fit = fitted_constants(machine, seed=seed)
    constants = constants_for(machine, S, D1)

    # every simulation needed: (kernel or None for DMA only, k, bf)
    sims: dict[tuple[str | None, int, int], float] = {}
    points: list[tuple[int, str, int, int, int]] = []  # figure, kernel, k, bf, space (1b bf)
    for kern in kernels_:
        if "10" in figs:
            points += [(10, kern, k, bf, k * bf) for k in SCHEMES for bf in FIG10_BLOCKS]
        if "11" in figs:
            points += [(11, kern, k, big // k, big) for big in FIG11_SPACE_BLOCKS for k in SCHEMES]
        if "12" in figs:
            points += [(12, kern, 2, bf, 2 * bf) for bf in FIG10_BLOCKS]
    for fig, kern, k, bf, _ in points:
        sims[(kern, k, bf)] = 0.0
        if fig == 10:
            sims[(None, k, bf)] = 0.0
    todo = list(sims)
    for i, (kern_or_dma, k, bf) in enumerate(todo):
        loop = seed004_loop(kern_or_dma or "t1", nblocks * bf)
        dma_only = (0.0, 0.0) if kern_or_dma is None else None
        r = run_loop(loop, k, bf, machine=machine, seed=seed, native=native, c_cycles=dma_only)
        sims[(kern_or_dma, k, bf)] = r.throughput_mbs
        if progress is not None:
            progress(i + 1, len(todo))

    records = []
    for fig, kern, k, bf, space in points:
        loop = seed004_loop(kern, nblocks * bf)
        costs = loop.costs(m.core_hz)
        for scale in C_SCALES if fig == 12 else (1.0,):
            c = costs.scaled(scale)
            p = predict(c, k, bf, constants)
            records.append(
                {
                    "figure": fig,
                    "kernel": kern,
                    "scheme": k,
                    "block": bf,
                    "space_bytes": space * BYTES_PER_ITER,
                    "c_scale": scale,
                    "simulated_mbs": sims[(kern, k, bf)],
                    "predicted_mbs": p.throughput_mbs,
                    "paper_predicted_mbs": predict(c, k, bf, PAPER).throughput_mbs,
                    "regime": p.regime,
                    "dma_only_mbs": sims[(None, k, bf)] if fig == 10 else None,
                    "n": loop.n,
                    "blocks": nblocks,
                    "c_inner_ns": c.c_inner_ns,
                    "c_outer_ns": c.c_outer_ns,
                    "S_ns": constants.S_ns,
                    "D1_ns_per_byte": constants.D1_ns_per_byte,
                    "constants": constants.source,
                    "fit_S_ns": fit.S_ns,
                    "fit_D1_ns_per_byte": fit.D1_ns_per_byte,
                    "machine": m.name,
                    "seed": seed,
                }
            )
    return records


# -- comparison with the paper's statements ---------------------------------------------------


def _sim(records: Sequence[dict[str, Any]], fig: int, kern: str, k: int) -> dict[int, dict[str, Any]]:
    """``{block: record}`` of one curve (``c_scale`` 1.0)."""
    return {
        r["block"]: r
        for r in records
        if r["figure"] == fig and r["kernel"] == kern and r["scheme"] == k and r["c_scale"] == 1.0
    }


def _space(records: Sequence[dict[str, Any]], kern: str, k: int) -> dict[int, dict[str, Any]]:
    """Figure 11: ``{space_bytes: record}`` of one scheme."""
    return {
        r["space_bytes"]: r for r in records if r["figure"] == 11 and r["kernel"] == kern and r["scheme"] == k
    }


def _kernels(records: Sequence[dict[str, Any]]) -> list[str]:
    return [k for k in KERNELS if any(r["kernel"] == k for r in records)]


class Statement(NamedTuple):
    """One quantity that a published statement is checked on."""

    quantity: str
    """As in :mod:`cellsim.published`."""
    point: str
    value: float
    note: str = ""
    kernel: str | None = None


def statements(records: Sequence[dict[str, Any]]) -> list[Statement]:
    """The quantities that the paper's statements are checked on."""
    out: list[Statement] = []
    if records:
        out.append(
            Statement("fit_S_ns", f"fit on {records[0]['machine']}", float(records[0]["fit_S_ns"]), "")
        )
        out.append(
            Statement(
                "fit_D1_ns_per_byte",
                f"fit on {records[0]['machine']}",
                float(records[0]["fit_D1_ns_per_byte"]),
                f"D1 = {float(records[0]['fit_D1_ns_per_byte']):.4f} ns/B: D = "
                f"{24 * float(records[0]['fit_D1_ns_per_byte']):.3f} ns per iteration (paper 2.112)",
            )
        )
    peaks: dict[str, float] = {}
    for kern in _kernels(records):
        curves = {k: _sim(records, 10, kern, k) for k in SCHEMES}
        two = curves[2]
        if two:
            top = max(two)
            r = two[top]
            peaks[kern] = r["simulated_mbs"]
            if r["dma_only_mbs"]:
                out.append(
                    Statement(
                        "peak_over_dma_only",
                        f"{kern}, 2b, bf {top}",
                        r["simulated_mbs"] / r["dma_only_mbs"],
                        f"{r['simulated_mbs']:.0f} vs {r['dma_only_mbs']:.0f} MB/s without computation",
                        kern,
                    )
                )
            rate = 1000.0 * BYTES_PER_ITER / KERNELS[kern]
            out.append(
                Statement(
                    "peak_over_compute_rate",
                    f"{kern}, 2b, bf {top}",
                    r["simulated_mbs"] / rate,
                    f"{r['simulated_mbs']:.0f} vs 24 B / C_inner = {rate:.0f} MB/s",
                    kern,
                )
            )
        for k in (2, 3):
            c = curves[k]
            if len(c) >= 2:
                a, b = sorted(c)[-2:]
                out.append(
                    Statement(
                        "flatness",
                        f"{kern}, {k}b, bf {b} over {a}",
                        c[b]["simulated_mbs"] / c[a]["simulated_mbs"],
                        "",
                        kern,
                    )
                )
        common = sorted(set(curves[2]) & set(curves[3]))
        if common:
            ratios = [curves[3][b]["simulated_mbs"] / curves[2][b]["simulated_mbs"] for b in common]
            out.append(
                Statement(
                    "3b_over_2b",
                    f"{kern}, mean over {len(common)} bf",
                    mean(ratios),
                    f"range {min(ratios):.3f}-{max(ratios):.3f}",
                    kern,
                )
            )
        common = sorted(set(curves[1]) & set(curves[2]))
        if common:
            b = common[-1]
            out.append(
                Statement(
                    "1b_over_2b",
                    f"{kern}, bf {b}",
                    curves[1][b]["simulated_mbs"] / curves[2][b]["simulated_mbs"],
                    "",
                    kern,
                )
            )
        space = {k: _space(records, kern, k) for k in SCHEMES}
        common = sorted(set(space[1]) & set(space[2]) & set(space[3]))
        if common:
            small, large = common[0], common[-1]
            for k in (2, 3):
                out.append(
                    Statement(
                        "kb_over_1b_small",
                        f"{kern}, {k}b over 1b, {small} B",
                        space[k][small]["simulated_mbs"] / space[1][small]["simulated_mbs"],
                        f"1b bf {space[1][small]['block']}, {k}b bf {space[k][small]['block']}",
                        kern,
                    )
                )
            out.append(
                Statement(
                    "1b_over_2b_large",
                    f"{kern}, {large} B",
                    space[1][large]["simulated_mbs"] / space[2][large]["simulated_mbs"],
                    "",
                    kern,
                )
            )
    if "t1" in peaks and "t2" in peaks:
        out.append(Statement("t2_over_t1_peak", "2b, largest bf", peaks["t2"] / peaks["t1"], ""))
    fig12 = [r for r in records if r["figure"] == 12]
    if fig12:
        base = [r for r in fig12 if r["c_scale"] == 1.0]
        over = [100.0 * (r["predicted_mbs"] / r["simulated_mbs"] - 1) for r in base]
        out.append(
            Statement(
                "overestimate_pct",
                f"2b, {len(base)} points",
                mean(over),
                f"model ({base[0]['constants']}) over simulation: min {min(over):+.1f}%, "
                f"max {max(over):+.1f}%",
            )
        )
        pred = {(r["kernel"], r["block"]): r["predicted_mbs"] for r in base}
        var = [
            100.0 * abs(r["predicted_mbs"] / pred[(r["kernel"], r["block"])] - 1)
            for r in fig12
            if r["c_scale"] != 1.0 and (r["kernel"], r["block"]) in pred
        ]
        if var:
            out.append(
                Statement("c_variation_mean_pct", f"2b, C +-10%, {len(var)} predictions", mean(var), "")
            )
            out.append(Statement("c_variation_max_pct", f"2b, C +-10%, {len(var)} predictions", max(var), ""))
        agree, pairs = _rank_agreement(base)
        if pairs:
            out.append(
                Statement(
                    "rank_agreement",
                    f"2b, {pairs} kernel pairs x bf",
                    agree / pairs,
                    f"{agree} of {pairs} agree",
                )
            )
    return out


def _rank_agreement(base: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """Kernel pairs at the same block factor that the model orders as the
    simulation does (a predicted tie, within 0.5%, agrees with any order)."""
    by = {(r["kernel"], r["block"]): r for r in base}
    agree = pairs = 0
    for bf in sorted({r["block"] for r in base}):
        ks = [k for k in KERNELS if (k, bf) in by]
        for a, b in combinations(ks, 2):
            ra, rb = by[(a, bf)], by[(b, bf)]
            pairs += 1
            dp = ra["predicted_mbs"] - rb["predicted_mbs"]
            ds = ra["simulated_mbs"] - rb["simulated_mbs"]
            if abs(dp) <= 0.005 * max(ra["predicted_mbs"], rb["predicted_mbs"]) or dp * ds > 0:
                agree += 1
    return agree, pairs


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chen et al. 2006's constants and statements about Figures 10-12 against the records.

    The visible statements are checked as ratios of simulated throughputs
    (see :mod:`cellsim.published`); the withheld results get the simulated
    value only.
    """
    values = statements(records)
    rows = []
    for entry in pub.entries(experiment=EXPERIMENT.name):
        for st in values:
            if st.quantity != entry.quantity:
                continue
            per_kernel = st.kernel is not None and "kernel" in entry.where
            if per_kernel and not pub.matches({"kernel": entry.where["kernel"]}, {"kernel": st.kernel}):
                continue
            rows.append(compare_row(entry, st.point, st.value, st.note))
    return rows


# -- tables and figure ---------------------------------------------------------------------


def _f(v: float | None) -> str:
    return "" if v is None else f"{v:,.0f}"


def _against(r: dict[str, Any] | None, note: str = "") -> str:
    """A table cell: a point's simulated MB/s over the model's prediction (blank if not run)."""
    return "" if r is None else f"{_f(r['simulated_mbs'])} / {_f(r['predicted_mbs'])}{note}"


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """Figure 10 and 11 (simulated / predicted MB/s by scheme) and Figure 12
    (2b, simulated against the predictions with C x 0.9, 1.0, 1.1)."""
    out: list[Table] = []
    if not records:
        return out
    src = records[0]["constants"]
    kernels = _kernels(records)
    if any(r["figure"] == 10 for r in records):
        rows = []
        for kern in kernels:
            curves = {k: _sim(records, 10, kern, k) for k in SCHEMES}
            for bf in sorted(set().union(*curves.values())):
                cells = [kern, str(bf)]
                cells += [_against(curves[k].get(bf)) for k in SCHEMES]
                r2 = curves[2].get(bf)
                cells.append("" if r2 is None else _f(r2["dma_only_mbs"]))
                rows.append(cells)
        out.append(
            Table(
                f"Figure 10: MB/s simulated / predicted ({src}) by block factor",
                ["kernel", "bf", "1b", "2b", "3b", "2b DMA only"],
                rows,
            )
        )
    if any(r["figure"] == 11 for r in records):
        rows = []
        for kern in kernels:
            space = {k: _space(records, kern, k) for k in SCHEMES}
            for sp in sorted(set().union(*space.values())):
                cells = [kern, f"{sp / 1024:.2f}", str(sp // BYTES_PER_ITER)]
                for k in SCHEMES:
                    r = space[k].get(sp)
                    cells.append(_against(r, "" if r is None else f" (bf {r['block']})"))
                rows.append(cells)
        out.append(
            Table(
                f"Figure 11: fixed space, MB/s simulated / predicted ({src})",
                ["kernel", "space (KB)", "1b bf", "1b", "2b", "3b"],
                rows,
            )
        )
    if any(r["figure"] == 12 for r in records):
        rows = []
        for kern in kernels:
            pts: dict[int, dict[float, dict[str, Any]]] = {}
            for r in records:
                if r["figure"] == 12 and r["kernel"] == kern:
                    pts.setdefault(r["block"], {})[r["c_scale"]] = r
            for bf in sorted(pts):
                p = pts[bf]
                base = p.get(1.0) or next(iter(p.values()))
                err = 100.0 * (base["predicted_mbs"] / base["simulated_mbs"] - 1)
                rows.append(
                    [
                        kern,
                        str(bf),
                        _f(base["simulated_mbs"]),
                        *(_f(p[s]["predicted_mbs"]) if s in p else "" for s in C_SCALES),
                        f"{err:+.1f}%",
                        _f(base["paper_predicted_mbs"]),
                        base["regime"],
                    ]
                )
        out.append(
            Table(
                f"Figure 12: 2b, MB/s simulated and predicted ({src}) with C x 0.9 / 1.0 / 1.1",
                [
                    "kernel",
                    "bf",
                    "simulated",
                    "C x 0.9",
                    "C x 1.0",
                    "C x 1.1",
                    "error",
                    "paper S, D1",
                    "regime",
                ],
                rows,
            )
        )
    return out


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Figures 10, 11 and 12 as three rows of four panels (t1-t4): simulated
    lines, the model dashed; Figure 12 with the C +-10% band and the paper's
    constants dotted."""
    from matplotlib.figure import Figure

    figs = [f for f in (10, 11, 12) if any(r["figure"] == f for r in records)] or [10]
    kernels = _kernels(records) or list(KERNELS)
    fig = Figure(figsize=(4.2 * len(kernels), 3.6 * len(figs) + 1.2), layout="constrained")
    axes = fig.subplots(len(figs), len(kernels), squeeze=False)
    machine = records[0]["machine"] if records else "?"
    src = records[0]["constants"] if records else "?"
    for i, f in enumerate(figs):
        for j, kern in enumerate(kernels):
            ax = axes[i][j]
            if f in (10, 11):
                for k in SCHEMES:
                    if f == 10:
                        c = _sim(records, 10, kern, k)
                        xs = sorted(c)
                        curve = [c[x] for x in xs]
                    else:
                        c = _space(records, kern, k)
                        curve = [c[s] for s in sorted(c)]
                        xs = [p["space_bytes"] // BYTES_PER_ITER for p in curve]
                    if not curve:
                        continue
                    ax.plot(
                        xs,
                        [p["simulated_mbs"] for p in curve],
                        color=_COLORS[k],
                        linewidth=_WIDTHS[k],
                        alpha=0.6 if k == 2 else 1.0,
                        marker=_MARKERS[k],
                        markersize=4,
                        label=f"{k}b simulated",
                    )
                    ax.plot(
                        xs,
                        [p["predicted_mbs"] for p in curve],
                        color=_COLORS[k],
                        linestyle="--",
                        linewidth=1,
                        label=f"{k}b model ({src})",
                    )
                if f == 10:
                    c = _sim(records, 10, kern, 2)
                    xs = [x for x in sorted(c) if c[x]["dma_only_mbs"]]
                    if xs:
                        ax.plot(
                            xs,
                            [c[x]["dma_only_mbs"] for x in xs],
                            color="grey",
                            linestyle=":",
                            label="2b without computation (DMA only)",
                        )
                ax.set_xlabel("block factor" if f == 10 else "1b block factor (same space for 2b, 3b)")
            else:
                pts: dict[int, dict[float, dict[str, Any]]] = {}
                for r in records:
                    if r["figure"] == 12 and r["kernel"] == kern:
                        pts.setdefault(r["block"], {})[r["c_scale"]] = r
                xs = sorted(pts)
                if xs:
                    ax.plot(
                        xs,
                        [pts[x][1.0]["simulated_mbs"] for x in xs],
                        color="tab:blue",
                        marker="o",
                        markersize=4,
                        label="2b simulated",
                    )
                    ax.plot(
                        xs,
                        [pts[x][1.0]["predicted_mbs"] for x in xs],
                        color="black",
                        linestyle="--",
                        label=f"2b model ({src})",
                    )
                    ax.fill_between(
                        xs,
                        [pts[x][1.1]["predicted_mbs"] for x in xs],
                        [pts[x][0.9]["predicted_mbs"] for x in xs],
                        color="grey",
                        alpha=0.3,
                        label="model with C +-10%",
                    )
                    ax.plot(
                        xs,
                        [pts[x][1.0]["paper_predicted_mbs"] for x in xs],
                        color="crimson",
                        linestyle=":",
                        label="2b model, paper's S = 130 ns, D1 = 0.0877 ns/B",
                    )
                ax.set_xlabel("block factor")
            ax.set_xscale("log", base=2)
            ax.set_ylabel("MB/s")
            ax.set_title(
                f"Fig {f}: {kern} (C_inner {KERNELS[kern]} ns, C_outer {C_OUTER_NS:g} ns)", fontsize=9
            )
            ax.grid(True, which="both", alpha=0.3)
    save_figure(
        fig,
        path,
        f"Chen et al., Figures 10-12: DMA buffering on one SPE of {machine} (simulated, model dashed)",
        legend=axes.flat,
        ncol=4,
        dpi=90,
    )


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option(
            "kernels",
            "choice",
            "Chen et al. test kernel",
            tuple(KERNELS),
            "--kernel",
            default=tuple(KERNELS),
        ),
        Option(
            "figures",
            "choice",
            "figure to simulate",
            FIGURES,
            "--figure",
            default=FIGURES,
        ),
        Option("blocks", "int", "blocks per simulated point", default=DEFAULT_BLOCKS),
        Option(
            "S",
            "float",
            "the model's DMA set-up time",
            flag="--S",
            default_note="fitted on the machine",
            unit="ns",
        ),
        Option(
            "D1",
            "float",
            "the model's DMA time per byte",
            flag="--D1",
            default_note="fitted on the machine",
            unit="ns",
        ),
    ),
)
