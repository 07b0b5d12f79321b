"""Helpers of Jiménez-González et al. 2007's load/store experiments: the PPE to its caches and
main memory (section 4.1, Figures 3-7) and an SPU to its local store
(section 4.2.2).

Every point runs a small PPE program on a fresh machine: a warm-up lap that
reads every location involved (as the paper did; here it fills the caches),
then the measured loop, described in one :func:`cellsim.ppe.access_loop` call
and simulated access by access in the engine. A loop's bandwidth is the bytes
it moved over its simulated time; a copy moves its bytes twice (load and
store), as Jiménez-González et al. 2007 counts SPE copies (GET+PUT).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .. import ppe
from .. import published as pub
from ..exceptions import UsageError
from ..machine import Machine
from ..spec import MachineLike, MachineSpec
from . import Option, RunSettings, Table
from ._common import bandwidth_panel, check_choices, compare_row, save_figure

__all__ = [
    "BUFFER",
    "ELEMENTS",
    "ELEMENTS_OPTION",
    "LEVELS",
    "LOOP_OPTIONS",
    "OPS",
    "OPS_OPTION",
    "THREADS",
    "LoopSettings",
    "cache_point",
    "check_ints",
    "derived_rows",
    "element_axis",
    "element_rows",
    "loop_figure",
    "loop_points",
    "loop_tables",
    "mem_point",
    "peak_gbs",
    "record_ghz",
]

LEVELS: tuple[str, ...] = ("l1", "l2", "l1-l2")
OPS: tuple[str, ...] = ("load", "store", "copy")
ELEMENTS: tuple[int, ...] = (1, 2, 4, 8, 16)
THREADS: tuple[int, ...] = (1, 2)

OPS_OPTION = Option("ops", "choice", "load, store or copy", OPS, "--op", default=OPS)
ELEMENTS_OPTION = Option(
    "elements", "ints", "size of an access, of 1,2,4,8,16", flag="--element", default=ELEMENTS, unit="B"
)
LOOP_OPTIONS = (
    OPS_OPTION,
    Option("threads", "ints", "hardware threads, 1 and/or 2", default=THREADS),
    ELEMENTS_OPTION,
)


class LoopSettings(RunSettings, total=False):
    """The ``**settings`` of ``ppe-cache`` and ``ppe-mem``: a run's settings and :data:`LOOP_OPTIONS`."""

    ops: Iterable[str]
    threads: Iterable[int]
    elements: Iterable[int]


def loop_points(first: Sequence[str], settings: LoopSettings) -> list[tuple[str, str, int, int]]:
    """A loop sweep's points: each of ``first`` (levels, banks) by op, threads and
    element size, as :data:`LOOP_OPTIONS` in ``settings`` choose them (checked)."""
    ops = check_choices("op", settings.get("ops", ()), OPS)
    threads = check_ints("threads", settings.get("threads", ()), THREADS)
    elements = check_ints("element size", settings.get("elements", ()), ELEMENTS)
    return [(x, o, t, e) for x in first for o in ops for t in threads for e in elements]


"""The options of a sweep of a core's loops: op, hardware threads, element size."""

BUFFER = {"l1": 16 << 10, "l2": 192 << 10, "l1-l2": 192 << 10}
"""Bytes of each buffer: half the 32 KB L1; 192 KB (a copy's two buffers,
384 KB, fit the 512 KB L2 but not the L1). ``l1-l2`` touches one element per
128-byte line of an L2-resident buffer (every access misses the L1)."""

_PASSES = {"l1": 2, "l2": 1, "l1-l2": 2}
_LINE = 128
MEM_ACCESSES = 64 << 10
"""Accesses per buffer in a memory point (64 KB of 1 B elements up to 1 MB of
16 B ones): past the prefetcher's and the queues' start-up, and little enough
to simulate in a moment."""


def check_ints(name: str, values: Iterable[int], allowed: Sequence[int]) -> tuple[int, ...]:
    """Validates integer choices; empty means all of ``allowed``."""
    vals = tuple(int(v) for v in values) or tuple(allowed)
    for v in vals:
        if v not in allowed:
            raise UsageError(f"{name} {v} is not one of {', '.join(map(str, allowed))}")
    return vals


def peak_gbs(m: Machine) -> float:
    """The 16-byte-per-cycle path between the L1 (or local store) and the core, in GB/s."""
    return 16 * m.core_hz / 1e9


def _ghz(m: Machine) -> float:
    return m.core_hz / 1e9


def cache_point(
    machine: MachineLike, seed: int, level: str, op: str, threads: int, element: int
) -> dict[str, Any]:
    """One point of Figures 3-5: the loop over a buffer that fits the level.

    ``bytes`` counts what crossed the measured path: every byte accessed for
    ``l1`` and ``l2``; for ``l1-l2`` a whole 128-byte line per load (the line
    the L1 fetched from the L2) and the element per store (the L1 writes
    through and does not allocate: only the element goes to the L2).
    """
    m = MachineSpec.of(machine).machine(seed)
    size = BUFFER[level]
    stride = _LINE if level == "l1-l2" else element
    accesses = size // stride
    nbytes = accesses * element
    src, dst = m.alloc(size, 4096), m.alloc(size, 4096)
    out: dict[str, Any] = {}

    def main() -> None:
        for buf in (dst, src) if op != "load" else (src,):  # warm-up lap: read every location
            ppe.access_loop("load", buf, size, 16)
        s0 = m.ppe_cache_stats()
        cycles = 0
        for _ in range(_PASSES[level]):
            cycles += ppe.access_loop(op, src, nbytes, element, threads, dst=dst, stride=stride, fill=0x5A)
        s1 = m.ppe_cache_stats()
        out["cycles"] = cycles
        out["misses"] = {k: s1[k] - s0[k] for k in ("l1_misses", "l2_misses")}

    m.run(main)
    per_load = _LINE if level == "l1-l2" else element
    moved = accesses * ((per_load if op != "store" else 0) + (element if op != "load" else 0))
    moved *= _PASSES[level]
    return _record(m, seed, {"level": level}, (op, threads, element), moved, out["cycles"], out["misses"])


def mem_point(
    machine: MachineLike, seed: int, bank: str, op: str, threads: int, element: int
) -> dict[str, Any]:
    """One point of Figure 7: a loop over a buffer in main memory (none of it cached).

    ``bank`` places every page in the local bank (behind the MIC) or in the
    other chip's (through the IOIF), like binding the buffer to a NUMA node;
    on a machine with one bank only ``local`` exists. Stores and copies start
    with the L2 full of dirty lines, the steady state of the paper's 128 MB
    runs (every line fetched then evicts one that must be written back).
    """
    overrides: dict[str, Any] = {}
    if MachineSpec.of(machine).facts.chips > 1:
        # The local bank is chip 0's memory (the PPE's), the remote one chip 1's.
        overrides["numa.policy"] = "node1" if bank == "remote" else "node0"
    elif bank == "remote":
        raise UsageError(f"machine {machine!r} has one memory bank: there is no remote bank")
    m = MachineSpec.of(machine).machine(seed, overrides=overrides)
    nbytes = MEM_ACCESSES * element
    l2 = m.facts.ppe_l2_bytes
    junk, src, dst = m.alloc(l2, 4096), m.alloc(nbytes, 4096), m.alloc(nbytes, 4096)
    out: dict[str, Any] = {}

    def main() -> None:
        if op != "load":
            ppe.access_loop("store", junk, l2, 16, 2)
        s0 = m.ppe_cache_stats()
        out["cycles"] = ppe.access_loop(op, src, nbytes, element, threads, dst=dst, fill=0x5A)
        s1 = m.ppe_cache_stats()
        out["counts"] = {k: s1[k] - s0[k] for k in ("l2_misses", "prefetches", "castouts")}

    m.run(main)
    moved = nbytes * (2 if op == "copy" else 1)
    return _record(m, seed, {"bank": bank}, (op, threads, element), moved, out["cycles"], out["counts"])


def _record(
    m: Machine,
    seed: int,
    where: dict[str, str],
    loop: tuple[str, int, int],
    moved: int,
    cycles: int,
    counts: dict[str, int],
) -> dict[str, Any]:
    """The record of a loop: where it ran, its (op, threads, element), the bytes it moved in
    ``cycles`` and its cache counts."""
    op, threads, element = loop
    return {
        "machine": m.name,
        "seed": seed,
        **where,
        "op": op,
        "threads": threads,
        "element": element,
        "bytes": moved,
        "cycles": cycles,
        "bandwidth_gbs": moved / cycles * _ghz(m),
        **counts,
    }


def _bw(records: Sequence[Mapping[str, Any]], **key: Any) -> float | None:
    for r in records:
        if all(r.get(k) == v for k, v in key.items()):
            return float(r["bandwidth_gbs"])
    return None


def _label(r: Mapping[str, Any], *fields: str) -> str:
    parts = []
    for f in fields:
        v = r[f]
        parts.append(f"{v} B" if f == "element" else f"{v}t" if f == "threads" else str(v))
    return " ".join(parts)


def derived_rows(
    experiment: str,
    records: Sequence[Mapping[str, Any]],
    *,
    curve: Sequence[str],
    extra: Mapping[str, Callable[[pub.Published], list[tuple[str, float, str]]]] | None = None,
) -> list[dict[str, Any]]:
    """Published-vs-simulated rows of a load/store experiment.

    ``bandwidth_gbs`` entries compare every record they select; the ratios
    are computed from the records they select and their partners (``curve``
    names the fields that identify a curve besides ``op``, ``threads`` and
    ``element``, e.g. ``level``):

    - ``max_bandwidth_gbs``: the largest point of each op;
    - ``bw16_over_bw8`` / ``bw8_over_bw16``: the 16 B and 8 B points of a curve;
    - ``store_over_load``: a store point over the load point of the same curve and size;
    - ``proportionality``: a point over element x the curve's 1 B point;
    - ``one_over_two_threads``: the 1-thread over the 2-thread point;
    - ``l2_over_l1``, ``l2_over_l1l2``: an ``l2`` point over the ``l1`` / an
      ``l1-l2`` point over the ``l2`` point (same op, threads, element);
    - ``extra``: other quantities, measured by the given functions.
    """
    rows: list[dict[str, Any]] = []
    present = set(records[0]) if records else set()
    fields = tuple(f for f in (*curve, "op", "threads", "element") if f in present)
    for e in pub.entries(experiment=experiment):
        sel = [r for r in records if pub.matches(e.where, r)]
        key = lambda r, **kw: {**{f: r[f] for f in fields}, **kw}  # noqa: E731
        pts: list[tuple[str, float, str]] = []
        q = e.quantity
        if extra and q in extra:
            pts = extra[q](e)
        elif q == "max_bandwidth_gbs":
            for op in OPS:
                of = [r for r in sel if r["op"] == op]
                if of:
                    best = max(of, key=lambda r: r["bandwidth_gbs"])
                    pts.append((f"{op}: largest ({_label(best, *fields)})", float(best["bandwidth_gbs"]), ""))
        elif q == "bandwidth_gbs":
            pts = [(_label(r, *fields), float(r["bandwidth_gbs"]), "") for r in sel]
        elif q in ("bw16_over_bw8", "bw8_over_bw16"):
            for r in sel:
                if r["element"] != 16:
                    continue
                b8 = _bw(records, **key(r, element=8))
                if b8:
                    a, b = (r["bandwidth_gbs"], b8) if q == "bw16_over_bw8" else (b8, r["bandwidth_gbs"])
                    pts.append((_label(r, *curve, "op", "threads"), a / b, f"{a:.2f} / {b:.2f} GB/s"))
        elif q == "store_over_load":
            for r in sel:
                ld = _bw(records, **key(r, op="load"))
                if ld:
                    pts.append(
                        (
                            _label(r, *fields),
                            r["bandwidth_gbs"] / ld,
                            f"{r['bandwidth_gbs']:.2f} / {ld:.2f} GB/s",
                        )
                    )
        elif q == "proportionality":
            for r in sel:
                one = _bw(records, **key(r, element=1))
                if one:
                    pts.append(
                        (
                            _label(r, *fields),
                            r["bandwidth_gbs"] / (r["element"] * one),
                            f"{r['bandwidth_gbs']:.2f} / ({r['element']} x {one:.2f}) GB/s",
                        )
                    )
        elif q == "one_over_two_threads":
            for r in sel:
                if r["threads"] != 1:
                    continue
                two = _bw(records, **key(r, threads=2))
                if two:
                    pts.append(
                        (
                            _label(r, *curve, "op", "element"),
                            r["bandwidth_gbs"] / two,
                            f"{r['bandwidth_gbs']:.2f} / {two:.2f} GB/s",
                        )
                    )
        elif q in ("l2_over_l1", "l2_over_l1l2"):
            for r in sel:
                other = _bw(records, **key(r, level="l1" if q == "l2_over_l1" else "l2"))
                if not other:
                    continue
                if q == "l2_over_l1":
                    a, b = r["bandwidth_gbs"], other
                else:
                    a, b = other, r["bandwidth_gbs"]
                pts.append((_label(r, "op", "threads", "element"), a / b, f"{a:.2f} / {b:.2f} GB/s"))
        for point, value, note in pts:
            rows.append(compare_row(e, point, value, note))
    return rows


def record_ghz(r: Mapping[str, Any]) -> float:
    """The core clock a record was measured at, in GHz."""
    return float(r["bandwidth_gbs"]) * int(r["cycles"]) / int(r["bytes"])


def loop_tables(
    records: Sequence[Mapping[str, Any]],
    key: str,
    values: Sequence[str],
    title: Callable[[str, str, str], str],
    columns: Callable[[list[int]], list[str]],
    quantities: Sequence[str] = ("bandwidth_gbs",),
) -> list[Table]:
    """One table per value of ``key`` (a level, a bank) and op: ``quantities`` by
    element size, a column per thread count; ``title(value, op, machine)``,
    ``columns(thread counts)`` the headers after the element's."""
    out = []
    for value in values:
        for op in OPS:
            pts = {(r["threads"], r["element"]): r for r in records if (r[key], r["op"]) == (value, op)}
            if not pts:
                continue
            ts = sorted({t for t, _ in pts})
            machine = next(iter(pts.values()))["machine"]
            rows = element_rows(pts, ts, quantities)
            out.append(Table(title(value, op, machine), ["element (B)", *columns(ts)], rows))
    return out


def loop_figure(
    records: Sequence[Mapping[str, Any]],
    path: Any,
    rows: tuple[str, Sequence[str], str],
    draw: Callable[[Any, str, str], None],
    title: Callable[[str, str, str], str],
    figure: tuple[str, int],
) -> None:
    """A figure of loops' bandwidth against the element size: ``rows`` is
    ``(key, values, default)``, a row of panels per value of ``key`` measured
    (``default`` if none), a panel per op; ``draw(ax, value, op)`` fills a panel,
    titled ``title(value, op, machine)``; ``figure`` is the figure's title and
    its legend's columns."""
    from matplotlib.figure import Figure

    key, values, default = rows
    shown = [v for v in values if any(r[key] == v for r in records)] or [default]
    ops = [o for o in OPS if any(r["op"] == o for r in records)] or ["load"]
    fig = Figure(figsize=(4.6 * len(ops), 3.6 * len(shown) + 1.2), layout="constrained")
    axes = fig.subplots(len(shown), len(ops), squeeze=False)
    machine = records[0]["machine"] if records else "blade21"
    for i, value in enumerate(shown):
        for j, op in enumerate(ops):
            draw(axes[i][j], value, op)
            bandwidth_panel(axes[i][j], title(value, op, machine), element_axis)
            axes[i][j].set_ylim(bottom=0)
    save_figure(fig, path, figure[0], legend=[a for row in axes for a in row], ncol=figure[1])


def element_rows(
    points: Mapping[tuple[Any, int], Mapping[str, Any]],
    columns: Sequence[Any],
    quantities: Sequence[str] = ("bandwidth_gbs",),
) -> list[list[str]]:
    """Table rows by element size from ``{(column, element): record}``: the
    element, then each quantity (GB/s, 2 decimals) in every column, blank
    where a point was not measured."""
    return [
        [
            str(e),
            *(f"{points[(c, e)][q]:.2f}" if (c, e) in points else "" for q in quantities for c in columns),
        ]
        for e in sorted({e for _, e in points})
    ]


def element_axis(ax: Any) -> None:
    """A log2 x axis of element sizes 1-16 B."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ELEMENTS), [str(e) for e in ELEMENTS])
    ax.set_xlabel("element (bytes per access)")
