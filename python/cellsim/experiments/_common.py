"""Helpers shared by the experiments: one DMA benchmark point, a sweep over
points, the published-vs-simulated comparison rows, and plot styling."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from .. import published as pub
from ..exceptions import UsageError
from ..kernels import load_dma_bench
from ..machine import Machine
from ..spec import MachineLike, MachineSpec
from ..style import PUBLISHED, PUBLISHED_COLOR
from . import Option, ProgressFn, RunSettings, Setup

__all__ = [
    "DMA_SWEEP_OPTIONS",
    "LS_OFFSET",
    "OPS",
    "SIZES",
    "STYLE",
    "TARGETS",
    "DmaSweep",
    "DmaSweepSettings",
    "ProgressFn",
    "bandwidth_panel",
    "batch_name",
    "check_choices",
    "check_dma_sweep",
    "check_sizes",
    "compare_row",
    "curve_of",
    "dma_point",
    "dma_sweep",
    "draw_published",
    "draw_published_level",
    "draw_published_span",
    "figure_legend",
    "label",
    "measure_each",
    "measure_groups",
    "plot_simulated",
    "save_figure",
    "simple_compare",
    "size_axis",
    "spe_size_axis",
]


P = TypeVar("P")

OPS: tuple[str, ...] = ("get", "put")
TARGETS: tuple[str, ...] = ("memory", "ls")
SIZES: tuple[int, ...] = tuple(8 << i for i in range(12))  # 8 B .. 16 KB

DMA_SWEEP_OPTIONS: tuple[Option, ...] = (
    Option("ops", "choice", "DMA direction", OPS, "--op", default=OPS),
    Option("targets", "choice", "memory or another SPE's local store", TARGETS, "--target", default=TARGETS),
    Option("sizes", "ints", "DMA sizes, comma-separated", default=SIZES, unit="B"),
)
"""The options of a sweep of :func:`dma_point` over ops, targets and sizes."""

LS_OFFSET = 0x10000
"""Offset of the target buffer in the partner SPE's local store (past the
reserved bottom of the LS, 128-byte aligned)."""

MAX_DMA = 16384

# one colour per curve, as in Kistler et al. 2006's Figure 4
STYLE: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "memory"): {"color": "tab:blue", "marker": "o"},
    ("put", "memory"): {"color": "tab:orange", "marker": "s"},
    ("get", "ls"): {"color": "tab:green", "marker": "^"},
    ("put", "ls"): {"color": "tab:red", "marker": "v"},
}


def label(op: str, target: str) -> str:
    """``get from memory``, ``put to LS``..."""
    where = "memory" if target == "memory" else "LS"
    return f"{op} {'from' if op == 'get' else 'to'} {where}"


def batch_name(batch: int) -> str:
    """``blocking``, ``batch 4``, ``nonblocking``."""
    return "nonblocking" if batch == 0 else "blocking" if batch == 1 else f"batch {batch}"


def check_choices(name: str, values: Iterable[str], allowed: Sequence[str]) -> tuple[str, ...]:
    """Validates a multiple-choice option; empty means all of ``allowed``."""
    vals = tuple(values) or tuple(allowed)
    for v in vals:
        if v not in allowed:
            raise UsageError(f"{name} {v!r} is not one of {', '.join(allowed)}")
    return vals


class DmaSweepSettings(RunSettings, total=False):
    """The ``**settings`` of a sweep of :func:`dma_point` (``dma-latency``, ``dma-batch``):
    a run's settings, :data:`DMA_SWEEP_OPTIONS` and ``count``, the DMAs of a point."""

    ops: Iterable[str]
    targets: Iterable[str]
    sizes: Iterable[int]
    count: int | None


class DmaSweep(NamedTuple):
    """The points of a sweep of :func:`dma_point` that its settings choose."""

    ops: tuple[str, ...]
    targets: tuple[str, ...]
    sizes: tuple[int, ...]
    count: Callable[[int], int]
    """The DMAs of a point, by size."""


def check_dma_sweep(settings: DmaSweepSettings, default_count: Callable[[int], int]) -> DmaSweep:
    """The sweep that ``settings`` choose, checked: each of :data:`DMA_SWEEP_OPTIONS`
    not given is its default, and ``count`` not given is ``default_count(size)``."""
    count = settings.get("count")
    return DmaSweep(
        check_choices("op", settings.get("ops", ()), OPS),
        check_choices("target", settings.get("targets", ()), TARGETS),
        check_sizes(settings.get("sizes") or SIZES),
        default_count if count is None else lambda size: count,
    )


def check_sizes(sizes: Iterable[int]) -> tuple[int, ...]:
    """Validates DMA sizes: 1, 2, 4, 8 bytes or a multiple of 16 up to 16 KB."""
    out = tuple(int(s) for s in sizes)
    if not out:
        raise UsageError("no DMA sizes given")
    for s in out:
        if not (s in (1, 2, 4, 8) or (s % 16 == 0 and 0 < s <= MAX_DMA)):
            raise UsageError(f"DMA size {s} is not 1, 2, 4, 8 or a multiple of 16 up to {MAX_DMA}")
    return out


def dma_point(
    machine: MachineLike, seed: int, native: bool, *, op: str, target: str, size: int, batch: int, count: int
) -> dict[str, Any]:
    """Runs Kistler et al. 2006's DMA benchmark once on a fresh machine and returns the point.

    Logical SPE 0 issues ``count`` DMAs of ``size`` bytes, waiting after every
    ``batch`` of them (0: only at the end), to a main-memory buffer or to
    logical SPE 1's local store. ``latency_ns`` is the elapsed decrementer time
    divided by ``count`` (the time per DMA), ``bandwidth_gbs`` is ``size`` over it.
    """
    if count <= 0:
        raise UsageError(f"count must be positive, not {count}")
    m = MachineSpec.of(machine).machine(seed)
    ea = Machine.ls_ea(1) + LS_OFFSET if target == "ls" else int(m.alloc(MAX_DMA))
    load_dma_bench(m, 0, put=op == "put", ea=ea, size=size, batch=batch, count=count, native=native)
    result = m.run()
    ticks = result.programs[0].exit_code
    if ticks is None or ticks <= 0:
        raise UsageError(
            f"the DMA benchmark ({op} {target} {size} B x {count}) measured {ticks} decrementer ticks; "
            "use a larger count"
        )
    tick_ns = 1e9 / m.facts.timebase_hz
    time_ns = ticks * tick_ns / count
    return {
        "machine": m.name,
        "seed": seed,
        "op": op,
        "target": target,
        "size": size,
        "batch": batch,
        "count": count,
        "ticks": int(ticks),
        "latency_ns": time_ns,
        "bandwidth_gbs": size / time_ns,
    }


def dma_sweep(setup: Setup, sweep: DmaSweep, batches: Sequence[int]) -> list[dict[str, Any]]:
    """:func:`dma_point` over the targets, ops, batches and sizes of ``sweep``
    (:func:`check_dma_sweep`), ``sweep.count(size)`` DMAs a point."""
    machine, seed, native, progress = setup
    ops, targets, sizes, count = sweep
    points = [(t, o, b, s) for t in targets for o in ops for b in batches for s in sizes]

    def point(p: tuple[str, str, int, int]) -> dict[str, Any]:
        target, op, batch, size = p
        return dma_point(
            machine, seed, native, op=op, target=target, size=size, batch=batch, count=count(size)
        )

    return measure_each(points, point, progress)


def measure_each(
    points: Sequence[P], measure: Callable[[P], dict[str, Any]], progress: ProgressFn | None
) -> list[dict[str, Any]]:
    """The records of a sweep: ``measure(point)`` for each point in turn, with
    ``progress(done, total)`` after each."""
    return measure_groups(points, lambda p: [measure(p)], progress)


def measure_groups(
    points: Sequence[P], measure: Callable[[P], list[dict[str, Any]]], progress: ProgressFn | None
) -> list[dict[str, Any]]:
    """:func:`measure_each` where one run measures several records (an MPI run times
    every size): ``measure(point)``'s records for each point in turn."""
    records = []
    for i, point in enumerate(points):
        records += measure(point)
        if progress is not None:
            progress(i + 1, len(points))
    return records


def compare_row(entry: pub.Published, point: str, simulated: float, note: str = "") -> dict[str, Any]:
    """One row of a published-vs-simulated comparison.

    ``error_pct`` is the signed error relative to the published value (for a
    bound: how far above it; for a range: how far outside it, 0 inside);
    ``within`` says whether it agrees: within the tolerance for values and
    ranges, at or under the bound for upper bounds, above it for lower bounds. Withheld results have
    neither.
    """
    tol = pub.TOLERANCE_PCT
    error: float | None = None
    within: bool | None = None
    value: float | list[float] | None = None
    if not entry.held_out and entry.value is not None:
        if entry.kind == "range":
            lo, hi = entry.value  # type: ignore[misc]
            value = [float(lo), float(hi)]
            if simulated < lo:
                error = 100.0 * (simulated - lo) / lo
            elif simulated > hi:
                error = 100.0 * (simulated - hi) / hi
            else:
                error = 0.0
            within = abs(error) <= tol
        else:
            v = float(entry.value)  # type: ignore[arg-type]
            value = v
            error = 100.0 * (simulated - v) / v
            if entry.kind == "upper_bound":
                within = simulated <= v
            elif entry.kind == "lower_bound":
                within = simulated > v
            else:
                within = abs(error) <= tol
    return {
        "id": entry.id,
        "paper": entry.paper,
        "figure": entry.figure,
        "description": entry.description,
        "point": point,
        "kind": entry.kind,
        "published": value,
        "published_text": entry.text(),
        "simulated": float(simulated),
        "unit": entry.unit,
        "error_pct": error,
        "within": within,
        "held_out": entry.held_out,
        "note": note,
    }


def simple_compare(records: Sequence[Mapping[str, Any]], experiment: str) -> list[dict[str, Any]]:
    """Compares every record that a published entry of ``experiment`` selects
    (entries on ``latency_ns`` or ``bandwidth_gbs``), one row per record."""
    rows = []
    for entry in pub.entries(experiment=experiment):
        if entry.quantity not in ("latency_ns", "bandwidth_gbs"):
            continue
        for r in records:
            if pub.matches(entry.where, r):
                point = f"{r['op']} {r['target']} {r['size']} B"
                if "batch" in entry.where:
                    point += f", {batch_name(int(r['batch']))}"
                rows.append(compare_row(entry, point, float(r[entry.quantity])))
    return rows


def draw_published(ax: Any, entry: pub.Published) -> None:
    """Draws a published value or bound on a size-axis plot in the published
    style (:data:`cellsim.style.PUBLISHED`): a star for one size, a dashed
    segment over a size range (triangles for an upper bound)."""
    if entry.held_out or entry.value is None or entry.kind == "range":
        return
    sizes: Any = entry.where.get("size")
    if sizes is None:  # not a function of the DMA size: nothing to draw on this axis
        return
    xs: list[int] = list(sizes) if isinstance(sizes, tuple) else [int(sizes)]
    y = float(entry.value)  # type: ignore[arg-type]
    lab = f"published {entry.figure}: {entry.description}, {entry.text()}"
    if len(xs) == 1:
        ax.plot(xs, [y], **{**PUBLISHED, "linestyle": "none", "marker": "*", "markersize": 15}, label=lab)
    else:
        marker = {"upper_bound": "v", "lower_bound": "^"}.get(entry.kind, "D")
        ax.plot([min(xs), max(xs)], [y, y], **{**PUBLISHED, "marker": marker, "markersize": 7}, label=lab)


def draw_published_level(ax: Any, entry: pub.Published, label: str, color: str = PUBLISHED_COLOR) -> None:
    """Draws a published bandwidth (a value or a bound) as a dashed line across the panel."""
    ax.axhline(float(entry.value), color=color, linestyle="--", linewidth=1, label=label)  # type: ignore[arg-type]


def draw_published_span(
    ax: Any, xs: Iterable[float], entry: pub.Published, label: str, color: str = PUBLISHED_COLOR
) -> None:
    """Draws a published value as a dashed line with open diamonds from the
    smallest to the largest of ``xs`` (the measured points it speaks of);
    ``color`` tells two published series apart (a darker red)."""
    span = list(xs)
    style = {**PUBLISHED, "color": color, "markeredgecolor": color}
    ax.plot([min(span), max(span)], [float(entry.value)] * 2, **style, label=label)  # type: ignore[arg-type]


def curve_of(records: Iterable[Mapping[str, Any]], along: str, **where: Any) -> list[Mapping[str, Any]]:
    """The records whose fields equal ``where``, in order of ``along`` (a curve's x)."""
    return sorted((r for r in records if all(r[k] == v for k, v in where.items())), key=lambda r: r[along])


def plot_simulated(
    ax: Any, points: Sequence[Mapping[str, Any]], x: str, y: str, *fmt: str, **style: Any
) -> None:
    """A simulated curve as every experiment draws one: ``y`` against ``x`` of the
    points, a dot on each (``style`` gives its colour and label, or other markers)."""
    ax.plot([r[x] for r in points], [r[y] for r in points], *fmt, **{"marker": "o", "markersize": 4, **style})


def bandwidth_panel(ax: Any, title: str, x_axis: Callable[[Any], None]) -> None:
    """Finishes a panel of bandwidth against ``x_axis`` (:func:`size_axis`,
    :func:`spe_size_axis`, an element axis): its labels and grid."""
    ax.set(ylabel="bandwidth (GB/s)", title=title)
    x_axis(ax)
    ax.grid(True, which="both", alpha=0.3)


def spe_size_axis(ax: Any) -> None:
    """Jiménez-González et al.'s element-size axis of SPE transfers: :func:`size_axis` over 128 B-16 KB."""
    size_axis(ax)
    ax.set_xlim(100, 20000)


def size_axis(ax: Any) -> None:
    """A log2 DMA-size x axis labelled 8, 32, ..., 4K, 16K."""
    ax.set_xscale("log", base=2)
    ticks = [8 << (2 * i) for i in range(7) if 8 << (2 * i) <= MAX_DMA]
    ax.set_xticks(ticks, [f"{t // 1024}K" if t >= 1024 else str(t) for t in ticks])
    ax.set_xlabel("DMA size (bytes)")


def save_figure(
    fig: Any, path: Any, title: str, legend: Iterable[Any] | None = None, ncol: int = 3, dpi: int = 100
) -> None:
    """Finishes an experiment's figure: one legend for the ``legend`` panels
    (:func:`figure_legend`), the title, and the image at ``path``."""
    if legend is not None:
        figure_legend(fig, legend, ncol)
    fig.suptitle(title)
    # "tight": the image grows to hold a legend wider than the panels instead of clipping it
    fig.savefig(path, dpi=dpi, bbox_inches="tight", pad_inches=0.1)


def figure_legend(fig: Any, axes: Iterable[Any], ncol: int = 3) -> None:
    """One legend for the whole figure, under the panels, without duplicates;
    long labels are wrapped so that the legend fits under the panels."""
    import textwrap

    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, handle)
    width = max(
        30, int(fig.get_figwidth() * 100 / 7.5 / max(ncol, 1))
    )  # characters of 8-point text per column
    labels = [textwrap.fill(lab, width) for lab in seen]
    fig.legend(list(seen.values()), labels, loc="outside lower center", ncol=ncol, fontsize=8)
