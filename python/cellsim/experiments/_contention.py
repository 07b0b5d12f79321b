"""Helpers shared by the contention experiments: Kistler et al. 2006's hot spots,
collective patterns and latency distribution, Jiménez-González et al. 2007's SPE bandwidth suite.

Every point runs the native kernels of ``bandwidth.rs`` (or their Python
twins in :mod:`cellsim.kernels`) on a fresh machine. An SPE's bandwidth is the
bytes it moved over its own elapsed decrementer time; an aggregate is the sum
over SPEs ("the sum of the communication bandwidths reached by each SPE",
Kistler et al. 2006).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from .. import published as pub
from ..exceptions import UsageError
from ..kernels import load_dma_bench, load_region, load_traffic
from ..machine import Machine
from ..spec import MachineLike, MachineSpec
from . import Option
from ._common import ProgressFn, compare_row

__all__ = [
    "DMA_SIZE",
    "LS_GET",
    "LS_PUT",
    "LS_SPAN",
    "LS_TARGET",
    "MB",
    "PLACEMENT_FIELDS",
    "SIZES_002",
    "KernelRun",
    "Load",
    "check_positive",
    "check_sizes_002",
    "check_spes",
    "eib_gbs",
    "mb_per_spe_option",
    "placement_seeds",
    "placement_summary",
    "port_gbs",
    "rows_for",
    "run_kernels",
    "run_on_placements",
    "spread",
]

MB = 1 << 20
DMA_SIZE = 16384
"""Kistler et al. 2006's collective benchmarks: "Each SPE issues a sequence of 16,384-byte DMA commands"."""

LS_TARGET = 0x28000
"""Offset in a target SPE's local store of the buffer that ``traffic`` DMAs
read or write: above the kernels' own buffers (from 0x4000; ``region``'s
eight 16 KB buffers and its lists end below 0x25000), 128-byte aligned."""

LS_GET = 0x28000
LS_PUT = 0x30000
LS_SPAN = 0x8000
"""The remote regions of Jiménez-González et al. 2007's SPE-to-SPE loops in the passive SPE's
local store: gets read 32 KB from ``LS_GET``, puts write 32 KB from
``LS_PUT`` ("two target SPE's local store locations")."""

SIZES_002: tuple[int, ...] = tuple(128 << i for i in range(8))
"""Jiménez-González et al. 2007's element sizes: 128 B to 16 KB."""

PLACEMENT_FIELDS: tuple[str, ...] = (
    "placements",
    "min_gbs",
    "max_gbs",
    "median_gbs",
    "mean_gbs",
    "per_placement_gbs",
    "placement_seeds",
    "best_seed",
    "best_placement",
    "worst_seed",
    "worst_placement",
)
"""The fields of :func:`placement_summary`, in a record of a point measured
on several placements."""

P = TypeVar("P")


@dataclass(frozen=True)
class Load:
    """One kernel on one logical SPE: ``kernel`` is ``region``, ``traffic`` or ``dma_bench``,
    ``params`` its keywords, ``nbytes`` the bytes it moves (both directions)."""

    spe: int
    kernel: str
    params: Mapping[str, Any]
    nbytes: int


PAGE = 64 << 10
"""Alignment of the memory regions the SPEs stream (a large page's worth)."""


def memory_region(
    m: Machine, op: str, *, span: int, total: int, size: int, node: int | None = None
) -> dict[str, Any]:
    """The ``region`` kernel's keywords for ``op`` (get, put or copy) on fresh
    page-aligned memory regions of ``span`` bytes (on ``node``, else where the
    machine's policy puts them): one to get from, one to put to, or both."""
    params: dict[str, Any] = {"op": op, "span": span, "total": total, "size": size}
    if op in ("get", "copy"):
        params["get_ea"] = int(m.alloc(span, PAGE, node=node))
    if op in ("put", "copy"):
        params["put_ea"] = int(m.alloc(span, PAGE, node=node))
    return params


def memory_load(spe: int, params: Mapping[str, Any]) -> Load:
    """The :class:`Load` of a :func:`memory_region` kernel on ``spe``: ``total``
    bytes each way it goes (two ways for a copy)."""
    return Load(spe, "region", params, (2 if params["op"] == "copy" else 1) * params["total"])


def pair_load(
    active: int, passive: int, *, size: int, total: int, wait_every: int = 0, lists: bool = False
) -> Load:
    """The ``region`` kernel on ``active``: get+put pairs of ``size`` bytes with
    the local store of ``passive`` (:data:`LS_GET`, :data:`LS_PUT`), ``total``
    bytes each way, as elements or as 16 KB DMA lists."""
    ls = Machine.ls_ea(passive)
    params = {
        "op": "copy",
        "get_ea": ls + LS_GET,
        "put_ea": ls + LS_PUT,
        "span": LS_SPAN,
        "total": total,
        "size": size,
        "wait_every": wait_every,
        "list": lists,
    }
    return Load(active, "region", params, 2 * total)


@dataclass
class KernelRun:
    """The outcome of :func:`run_kernels`."""

    machine: str
    seed: int
    placement: list[int]
    elapsed_ns: dict[int, float]
    """Each loaded SPE's elapsed decrementer time."""
    gbs: dict[int, float]
    """Each loaded SPE's bandwidth: its bytes over its elapsed time."""
    transfers: int
    """128-byte (or smaller) EIB data transfers of the run."""
    stats: dict[str, Any] = field(repr=False)
    latencies_ns: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    """With ``latencies``: each SPE's DMA latencies from queue entry to completion."""
    service_ns: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    """With ``latencies``: each SPE's DMA latencies from the DMAC's start to completion."""
    core_hz: float = 0.0

    @property
    def aggregate_gbs(self) -> float:
        """The sum over SPEs of each SPE's bandwidth."""
        return float(sum(self.gbs.values()))


_LOADERS: dict[str, Callable[..., None]] = {
    "region": load_region,
    "traffic": load_traffic,
    "dma_bench": load_dma_bench,
}
"""The kernels a :class:`Load` may name."""


def run_kernels(
    machine: MachineLike,
    seed: int,
    loads: Sequence[Load],
    *,
    native: bool = True,
    placement: Sequence[int] | None = None,
    latencies: bool = False,
    setup: Callable[[Machine], Sequence[Load]] | None = None,
    overrides: Sequence[str] = (),
) -> KernelRun:
    """Runs ``loads`` together on a fresh machine of ``machine`` and ``seed``
    (with machine-file ``overrides``).

    ``setup(m)``, if given, returns more loads built on the machine (for
    buffers in main memory). With ``latencies`` every DMA command's latency is
    recorded (:meth:`Machine.dma_latencies`).
    """
    m = MachineSpec.of(machine).machine(seed, placement=placement, overrides=overrides)
    every = list(loads) + (list(setup(m)) if setup is not None else [])
    for ld in every:
        _LOADERS[ld.kernel](m, ld.spe, native=native, **ld.params)
    if latencies:
        m.record_dma_latencies()
    result = m.run()
    tick_ns = 1e9 / m.facts.timebase_hz
    ends = {p.spe: p.exit_code for p in result.programs if p.spe is not None}
    elapsed: dict[int, float] = {}
    gbs: dict[int, float] = {}
    for ld in every:
        ticks = ends.get(ld.spe)
        if ticks is None or ticks <= 0 or ticks == 0xFFFFFFFF:
            raise UsageError(
                f"the {ld.kernel} kernel on SPE {ld.spe} measured {ticks} decrementer ticks; "
                "move more data per SPE"
            )
        elapsed[ld.spe] = ticks * tick_ns
        gbs[ld.spe] = ld.nbytes / elapsed[ld.spe]
    lat: dict[int, np.ndarray] = {}
    service: dict[int, np.ndarray] = {}
    if latencies:
        ns_per_cycle = 1e9 / m.core_hz
        lat = {ld.spe: m.dma_latencies(ld.spe) * ns_per_cycle for ld in every}
        service = {ld.spe: m.dma_latencies(ld.spe, "service") * ns_per_cycle for ld in every}
    return KernelRun(
        machine=m.name,
        seed=seed,
        placement=m.placement,
        elapsed_ns=elapsed,
        gbs=gbs,
        transfers=int(result.stats["transfers"]),
        stats=result.stats,
        latencies_ns=lat,
        service_ns=service,
        core_hz=m.core_hz,
    )


def port_gbs(machine: MachineLike) -> float:
    """One EIB port's bandwidth per direction: 16 bytes per bus cycle (half
    the core clock): 25.6 GB/s on qs20, 16.8 on blade21."""
    return 8.0 * MachineSpec.of(machine).facts.core_hz / 1e9


def eib_gbs(machine: MachineLike) -> float:
    """The EIB's peak: one 128-byte command per bus cycle, 204.8 GB/s on qs20,
    134.4 on blade21."""
    return 64.0 * MachineSpec.of(machine).facts.core_hz / 1e9


def placement_seeds(seed: int, count: int) -> list[int]:
    """The machine seeds of ``count`` logical-to-physical placements:
    ``seed, seed + 1, ...``; placement ``k`` is what ``Machine(m, seed=seed + k)`` draws."""
    return [seed + k for k in range(count)]


def spread(runs: Sequence[KernelRun], values: Sequence[float]) -> dict[str, Any]:
    """Min, max, median and mean of ``values`` (one per placement run) and the
    best and worst placements (machine seed and logical-to-physical map)."""
    if not values:
        raise UsageError("no placements to summarise")
    best = max(range(len(values)), key=lambda i: values[i])
    worst = min(range(len(values)), key=lambda i: values[i])
    return {
        "min_gbs": float(min(values)),
        "max_gbs": float(max(values)),
        "median_gbs": float(statistics.median(values)),
        "mean_gbs": float(statistics.fmean(values)),
        "per_placement_gbs": [float(v) for v in values],
        "placement_seeds": [r.seed for r in runs],
        "best_seed": runs[best].seed,
        "best_placement": runs[best].placement,
        "worst_seed": runs[worst].seed,
        "worst_placement": runs[worst].placement,
    }


def run_on_placements(
    machine: MachineLike,
    points: Sequence[P],
    seeds: Sequence[int],
    loads: Callable[[P, int], Sequence[Load]],
    *,
    native: bool,
    progress: ProgressFn | None,
    placement: Sequence[int] | None = None,
) -> Iterator[tuple[P, list[KernelRun]]]:
    """Runs each point on every placement: ``loads(point, seed)`` on a machine
    of each seed in turn, with ``progress(done, total)`` after each run; yields
    each point with its runs, one per seed. With ``placement`` every machine
    uses that logical-to-physical map instead of its seed's."""
    total = len(points) * len(seeds)
    done = 0
    for point in points:
        runs: list[KernelRun] = []
        for s in seeds:
            runs.append(run_kernels(machine, s, loads(point, s), native=native, placement=placement))
            done += 1
            if progress is not None:
                progress(done, total)
        yield point, runs


def placement_summary(runs: Sequence[KernelRun]) -> dict[str, Any]:
    """The :data:`PLACEMENT_FIELDS` of a point: how many placements, and the
    :func:`spread` of their aggregate bandwidths."""
    return {"placements": len(runs), **spread(runs, [r.aggregate_gbs for r in runs])}


def check_spes(values: Iterable[int], default: Sequence[int], lo: int, hi: int, what: str) -> tuple[int, ...]:
    """Validates a list of SPE (or pair) counts in ``[lo, hi]``; empty means ``default``."""
    out = tuple(int(v) for v in values) or tuple(default)
    for v in out:
        if not lo <= v <= hi:
            raise UsageError(f"{what} {v} is not between {lo} and {hi}")
    return out


def check_sizes_002(sizes: Iterable[int]) -> tuple[int, ...]:
    """Validates Jiménez-González et al. 2007 element sizes (128 B to 16 KB, dividing 16 KB: the
    ``region`` kernel's buffers and lists are 16 KB); empty means :data:`SIZES_002`."""
    out = tuple(int(s) for s in sizes) or SIZES_002
    for s in out:
        if s < 128 or s > 16384 or 16384 % s:
            raise UsageError(f"element size {s} must be 128 to 16384 bytes and divide 16384")
    return out


def mb_per_spe_option(help: str, default: int, note: str = "") -> Option:
    """The ``mb_per_spe`` option of a streaming experiment: the data each SPE
    moves per direction (``help`` says which SPEs), in MB."""
    return Option("mb_per_spe", "int", help, default=default, default_note=note, unit="MB")


def check_positive(name: str, value: float | None, default: float) -> float:
    """``value`` (or ``default`` if None), which must be positive."""
    v = default if value is None else value
    if v <= 0:
        raise UsageError(f"{name} must be positive, not {v}")
    return v


def rows_for(
    experiment: str,
    quantity: str,
    measure: Callable[[pub.Published], list[tuple[str, float, str]]],
) -> list[dict[str, Any]]:
    """Comparison rows for every published entry of ``experiment`` on
    ``quantity``: ``measure(entry)`` gives ``(point, simulated, note)`` tuples."""
    rows = []
    for entry in pub.entries(experiment=experiment):
        if entry.quantity != quantity:
            continue
        for point, value, note in measure(entry):
            rows.append(compare_row(entry, point, value, note))
    return rows
