"""``cellsim map``: the best mapping of a communication pattern, found fast.

**The link-load model** (:func:`link_loads`) is the "intuitive interconnect
model" Keller and Varbanescu 2010 doubted: each edge's bytes follow the short way round the
rings between the physical ramps of its two SPEs (half each way at six hops),
the library's notifications and acknowledgements go to and from the memory
controller, and a mapping's cost is its most loaded ring segment (per
direction, both rings of a direction together), then its total byte-hops. It
costs microseconds per mapping, so it ranks all 5040 mappings of 8 tasks at
once; :func:`model_agreement` says how well it predicts the simulated
ranking (Spearman's rho). On a two-chip blade an edge between the chips
crosses both rings and the BIF (weighted by how much slower the link is), and
the matrices live in chip 0's memory; for more than 8 tasks (16 on a blade)
:func:`model_search` proposes instead of ranking all ``15!`` mappings.

**The optimizer** (:func:`optimize`): rank every mapping with the model,
simulate the ``top`` most promising, then improve the best by local search
with the simulator (swap the SPEs of two tasks, keep a better mapping, until
no swap helps or ``budget`` simulations are spent). A random sample of
mappings is simulated too, for the spread a user should expect from an
arbitrary mapping. Simulations go through the sweep runner (local processes
or Dask) and use the same per-run seeds as the exhaustive explorer, so the
optimizer's runtimes are exactly the explorer's for the same mappings.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..exceptions import UsageError
from ..spec import MachineLike
from .explorer import EXHAUSTIVE_TASKS, all_mappings, make_points, point_key, run_point, settings_of
from .library import ROW_BYTES, SLOT_BYTES
from .patterns import Pattern, format_mapping
from .simulate import DEFAULTS, Variation
from .target import Target, Topology, resolve

__all__ = [
    "Loads",
    "Topology",
    "link_loads",
    "model_agreement",
    "model_scores",
    "model_search",
    "optimize",
    "spearman",
]

NOTIFY_BYTES = 16 + 128 + 16 + 128
"""Memory traffic per packet of up to 8 tasks: notification put, notification-row get, ack put,
ack-row get (a row get reads 16 bytes per task, at least a 128-byte line)."""

MATRIX_CHIP = 0
"""The chip whose memory holds the matrices: the PPE allocates them on chip 0 (first touch)."""


class Loads(NamedTuple):
    """Bytes per iteration on every directed ring segment (``[chips, 2, 12]``:
    clockwise segment ``i`` joins ramp ``i`` to ``i+1``, counter-clockwise
    ``i`` to ``i-1``), on the BIF each way (``[chips]``: from chip ``c`` to the
    other), and the total byte-hops (a BIF crossing is one hop)."""

    segments: np.ndarray
    bif: np.ndarray
    byte_hops: float
    bif_weight: float

    @property
    def most(self) -> float:
        """The most loaded link in segment bytes: a BIF byte weighs as much
        more as the link is slower than both rings of a direction."""
        return max(float(self.segments.max()), float(self.bif.max()) * self.bif_weight)


def link_loads(
    machine: MachineLike | Target, pattern: Pattern, physical: Sequence[int], packet: int = 1024
) -> Loads:
    """The :class:`Loads` of ``pattern`` with task ``t`` on physical SPE
    ``physical[t]``: each edge's bytes take the short way round the rings
    between the ramps (half each way at six hops), across the BIF between
    the chips' IOIF0 ramps when the SPEs are on different chips; the
    notifications and acknowledgements go to and from the matrices in chip
    0's memory."""
    topo = resolve(machine).topology
    n = len(topo.ramps)
    load = np.zeros((topo.chips, 2, n))
    bif = np.zeros(topo.chips)
    hops_total = 0.0

    def ring(chip: int, a: int, b: int, nbytes: float) -> None:
        nonlocal hops_total
        cw = (b - a) % n
        ccw = n - cw
        if cw == 0:
            return
        share = (
            [(0, cw, nbytes)]
            if cw < ccw
            else [(1, ccw, nbytes)]
            if ccw < cw
            else [(0, cw, nbytes / 2), (1, ccw, nbytes / 2)]
        )
        for d, h, x in share:
            for k in range(h):
                seg = (a + k) % n if d == 0 else (a - k) % n
                load[chip, d, seg] += x
            hops_total += h * x

    def flow(a: tuple[int, int], b: tuple[int, int], nbytes: float) -> None:
        nonlocal hops_total
        if a[0] == b[0]:
            ring(a[0], a[1], b[1], nbytes)
            return
        ring(a[0], a[1], topo.ioif0, nbytes)
        bif[a[0]] += nbytes
        hops_total += nbytes
        ring(b[0], topo.ioif0, b[1], nbytes)

    memory = (MATRIX_CHIP, topo.mic)
    row = max(ROW_BYTES, SLOT_BYTES * pattern.tasks)
    for s, d, b in pattern.edges:
        src, dst = topo.where(physical[s]), topo.where(physical[d])
        flow(src, dst, b)
        packets = -(-b // packet)
        flow(src, memory, SLOT_BYTES * packets)  # notification put
        flow(memory, dst, row * packets)  # notification row get
        flow(dst, memory, SLOT_BYTES * packets)  # acknowledgement put
        flow(memory, src, row * packets)  # acknowledgement row get
    return Loads(load, bif, hops_total, topo.bif_weight)


def model_scores(
    machine: MachineLike | Target,
    pattern: Pattern,
    mappings: Sequence[Sequence[int]],
    logical_to_physical: Sequence[int],
    packet: int = 1024,
) -> list[tuple[float, float]]:
    """``(max segment load, byte-hops)`` of each mapping (lower is better)."""
    target = resolve(machine)
    out = []
    for mp in mappings:
        phys = [logical_to_physical[a] for a in mp]
        loads = link_loads(target, pattern, phys, packet)
        out.append((loads.most, loads.byte_hops))
    return out


def _random_mapping(k: int, rng: random.Random) -> tuple[int, ...]:
    rest = list(range(1, k))
    rng.shuffle(rest)
    return (0, *rest)


def model_search(
    machine: MachineLike | Target,
    pattern: Pattern,
    logical_to_physical: Sequence[int],
    packet: int = 1024,
    *,
    seed: int = 0,
    starts: int = 8,
) -> dict[tuple[int, ...], tuple[float, float]]:
    """The model's scores of the mappings a local search on the model visits,
    for patterns too large to score every mapping: from the identity and
    ``starts - 1`` seeded random mappings, swap two tasks' SPEs while that
    lowers the score (first improvement)."""
    target = resolve(machine)
    rng = random.Random(seed)
    k = pattern.tasks
    seen: dict[tuple[int, ...], tuple[float, float]] = {}

    def score(mp: tuple[int, ...]) -> tuple[float, float]:
        if mp not in seen:
            seen[mp] = model_scores(target, pattern, [mp], logical_to_physical, packet)[0]
        return seen[mp]

    for start in [tuple(range(k))] + [_random_mapping(k, rng) for _ in range(starts - 1)]:
        cur, improved = start, True
        while improved:
            improved = False
            for i in range(1, k):
                for j in range(i + 1, k):
                    c = list(cur)
                    c[i], c[j] = c[j], c[i]
                    cand = tuple(c)
                    if score(cand) < score(cur):
                        cur, improved = cand, True
    return seen


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation of two equally long sequences (average ranks for ties)."""

    def ranks(x: Sequence[float]) -> np.ndarray:
        arr = np.asarray(x, dtype=float)
        _, inv, counts = np.unique(arr, return_inverse=True, return_counts=True)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        avg = starts + (counts - 1) / 2.0
        return avg[inv]

    if len(a) != len(b) or len(a) < 2:
        raise UsageError("spearman needs two sequences of the same length, at least 2")
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def model_agreement(
    records: Sequence[dict[str, Any]], machine: MachineLike | Target, pattern: Pattern, packet: int = 1024
) -> dict[str, float]:
    """How well the model predicts the explorer's ranking (pinned records):
    Spearman's rho of the simulated mean runtime against the max segment load,
    the byte-hops, and the model's combined order."""
    from .patterns import parse_mapping

    target = resolve(machine)
    phys = list(target.spes)
    maps = [parse_mapping(r["mapping"]) for r in records]
    sims = [r["mean_ns"] for r in records]
    scores = model_scores(target, pattern, maps, phys, packet)
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    combined = [0.0] * len(scores)
    for pos, i in enumerate(order):
        combined[i] = pos
    return {
        "rho_max_link": spearman(sims, [s[0] for s in scores]),
        "rho_byte_hops": spearman(sims, [s[1] for s in scores]),
        "rho_model": spearman(sims, combined),
    }


def optimize(
    machine: MachineLike | Target,
    pattern: Pattern,
    *,
    count: int,
    packet: int = 1024,
    top: int = 8,
    budget: int = 64,
    sample: int = 16,
    runs: int = 1,
    seed: int = 0,
    variation: Variation = DEFAULTS,
    nbuf: int = 2,
    poll_cycles: int = 200,
    workers: int | None = None,
    cluster: Any = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Finds a good mapping of ``pattern`` on ``machine`` (pinned placement).

    Args:
        count: transmissions per task (ring patterns) or iterations.
        top: mappings the model proposes for simulation.
        budget: most simulated mappings in all (model proposals and local search).
        sample: random mappings simulated for the spread.
        runs: runs per simulated mapping (their mean ranks it).

    Returns the best mapping, its simulated mean runtime, the model's choice,
    the spread over the sampled mappings, the simulations made and the time.
    """
    from ..sweep import run_sweep

    t0 = time.perf_counter()
    target = resolve(machine)
    visible = target.visible(variation.visible)
    k = pattern.tasks
    if k > len(visible):
        raise UsageError(f"{k} tasks but {target.name} has {len(visible)} SPEs")
    if top < 1 or budget < top:
        raise UsageError(f"top {top} must be at least 1 and budget {budget} at least top")
    if k <= EXHAUSTIVE_TASKS:
        maps = all_mappings(k)
        scores = model_scores(target, pattern, maps, list(visible), packet)
    else:  # 15! mappings of 16 tasks: the model's own local search proposes
        found = model_search(target, pattern, list(visible), packet, seed=seed)
        maps, scores = list(found), list(found.values())
    order = sorted(range(len(maps)), key=lambda i: (scores[i], maps[i]))
    cache: dict[tuple[int, ...], float] = {}
    sims = 0

    def points(cands: Sequence[tuple[int, ...]], runs: int, count: int) -> list[dict[str, Any]]:
        return make_points(
            target,
            pattern,
            cands,
            runs=runs,
            count=count,
            mode="pinned",
            contexts="physical",
            seed=seed,
            variation=variation,
            packet=packet,
            nbuf=nbuf,
            poll_cycles=poll_cycles,
        )

    def evaluate(cands: Sequence[tuple[int, ...]]) -> None:
        nonlocal sims
        new = [c for c in dict.fromkeys(cands) if c not in cache]
        if not new:
            return
        pts = points(new, runs, count)
        res = run_sweep(
            run_point, pts, key=point_key, workers=workers, cluster=cluster, settings=settings_of(pts)
        )
        for c in new:
            name = format_mapping(list(c))
            cache[c] = statistics.fmean(r["runtime_ns"] for r in res if r["mapping"] == name)
        sims += len(new)
        if progress is not None:
            progress(min(sims, budget), budget)

    # a trial run catches bad settings early
    run_point(points([maps[0]], runs=1, count=2)[0])
    proposals = [maps[i] for i in order[:top]]
    evaluate(proposals)
    model_best = min(proposals, key=lambda c: (cache[c], c))
    best = model_best
    improved = True
    while improved and sims < budget:
        improved = False
        neigh = []
        for i in range(1, k):
            for j in range(i + 1, k):
                c = list(best)
                c[i], c[j] = c[j], c[i]
                neigh.append(tuple(c))
        neigh = [c for c in neigh if c not in cache][: max(budget - sims, 0)]
        if not neigh:
            break
        evaluate(neigh)
        cand = min(neigh, key=lambda c: (cache[c], c))
        if cache[cand] < cache[best]:
            best, improved = cand, True
    search_s = time.perf_counter() - t0
    rng = random.Random(seed)
    if k <= EXHAUSTIVE_TASKS:
        sampled = rng.sample(maps, min(sample, len(maps)))
    else:
        sampled = list(dict.fromkeys(_random_mapping(k, rng) for _ in range(sample)))
    evaluate(sampled)
    spread = [cache[c] for c in sampled]
    best = min(cache, key=lambda c: (cache[c], c))  # the sample may hold a better one
    return {
        "machine": target.name,
        "pattern": pattern.name,
        "tasks": k,
        "count": count,
        "packet": packet,
        "best": format_mapping(list(best)),
        "best_ns": cache[best],
        "model_best": format_mapping(list(maps[order[0]])),
        "model_best_simulated": format_mapping(list(model_best)),
        "model_best_ns": cache[model_best],
        "simulated": sims,
        "mappings": math.factorial(k - 1),
        "search_s": search_s,
        "sample_min_ns": min(spread),
        "sample_median_ns": statistics.median(spread),
        "sample_max_ns": max(spread),
        "sample_mean_over_best": statistics.fmean(spread) / cache[best],
        "evaluated": {format_mapping(list(c)): v for c, v in sorted(cache.items(), key=lambda kv: kv[1])},
    }
