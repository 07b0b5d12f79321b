"""``cellsim map``: the best mapping of a communication pattern, found fast.

**The link-load model** (:func:`link_loads`) is the "intuitive interconnect
model" seed 001 doubted: each edge's bytes follow the short way round the
rings between the physical ramps of its two SPEs (half each way at six hops),
the library's notifications and acknowledgements go to and from the memory
controller, and a mapping's cost is its most loaded ring segment (per
direction, both rings of a direction together), then its total byte-hops. It
costs microseconds per mapping, so it ranks all 5040 mappings of 8 tasks at
once; :func:`model_agreement` says how well it predicts the simulated
ranking (Spearman's rho).

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

import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..exceptions import UsageError
from ..machine import Machine
from .explorer import all_mappings, make_points, point_key, run_point, settings_of
from .patterns import Pattern, format_mapping
from .simulate import DEFAULTS, Variation, machine_spes

__all__ = ["link_loads", "model_agreement", "model_scores", "optimize", "spearman"]

NOTIFY_BYTES = 16 + 128 + 16 + 128
"""Memory traffic per packet: notification put, notification-row get, ack put, ack-row get."""


def _ramps(machine: str) -> tuple[list[str], int]:
    m = Machine(machine)
    ramps = list(m.info["ramps"])
    return ramps, ramps.index("MIC")


def _spe_ramp(ramps: Sequence[str], physical: int) -> int:
    return list(ramps).index(f"SPE{physical}")


def link_loads(
    machine: str, pattern: Pattern, physical: Sequence[int], packet: int = 1024
) -> tuple[np.ndarray, float]:
    """Bytes per iteration on each directed ring segment (``[2, 12]``:
    clockwise segment ``i`` joins ramp ``i`` to ``i+1``, counter-clockwise
    ``i`` to ``i-1``) and the total byte-hops, with task ``t`` on physical SPE
    ``physical[t]``."""
    ramps, mic = _ramps(machine)
    n = len(ramps)
    load = np.zeros((2, n))
    hops_total = 0.0

    def flow(a: int, b: int, nbytes: float) -> None:
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
                load[d, seg] += x
            hops_total += h * x

    for s, d, b in pattern.edges:
        rs, rd = _spe_ramp(ramps, physical[s]), _spe_ramp(ramps, physical[d])
        flow(rs, rd, b)
        packets = -(-b // packet)
        flow(rs, mic, 16 * packets)  # notification put
        flow(mic, rd, 128 * packets)  # notification row get
        flow(rd, mic, 16 * packets)  # acknowledgement put
        flow(mic, rs, 128 * packets)  # acknowledgement row get
    return load, hops_total


def model_scores(
    machine: str,
    pattern: Pattern,
    mappings: Sequence[Sequence[int]],
    logical_to_physical: Sequence[int],
    packet: int = 1024,
) -> list[tuple[float, float]]:
    """``(max segment load, byte-hops)`` of each mapping (lower is better)."""
    out = []
    for mp in mappings:
        phys = [logical_to_physical[a] for a in mp]
        load, hops = link_loads(machine, pattern, phys, packet)
        out.append((float(load.max()), hops))
    return out


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
    records: Sequence[dict[str, Any]], machine: str, pattern: Pattern, packet: int = 1024
) -> dict[str, float]:
    """How well the model predicts the explorer's ranking (pinned records):
    Spearman's rho of the simulated mean runtime against the max segment load,
    the byte-hops, and the model's combined order."""
    from .patterns import parse_mapping

    phys = list(machine_spes(machine))
    maps = [parse_mapping(r["mapping"]) for r in records]
    sims = [r["mean_ns"] for r in records]
    scores = model_scores(machine, pattern, maps, phys, packet)
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
    machine: str,
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
    visible = variation.visible if variation.visible is not None else machine_spes(machine)
    k = pattern.tasks
    if k > len(visible):
        raise UsageError(f"{k} tasks but {machine} has {len(visible)} SPEs")
    if top < 1 or budget < top:
        raise UsageError(f"top {top} must be at least 1 and budget {budget} at least top")
    maps = all_mappings(k)
    scores = model_scores(machine, pattern, maps, list(visible), packet)
    order = sorted(range(len(maps)), key=lambda i: (scores[i], maps[i]))
    cache: dict[tuple[int, ...], float] = {}
    sims = 0

    def evaluate(cands: Sequence[tuple[int, ...]]) -> None:
        nonlocal sims
        new = [c for c in dict.fromkeys(cands) if c not in cache]
        if not new:
            return
        pts = make_points(
            machine,
            pattern,
            new,
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
    run_point(
        {
            **make_points(
                machine,
                pattern,
                [maps[0]],
                runs=1,
                count=2,
                mode="pinned",
                contexts="physical",
                seed=seed,
                variation=variation,
                packet=packet,
                nbuf=nbuf,
                poll_cycles=poll_cycles,
            )[0]
        }
    )
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
    sampled = rng.sample(maps, min(sample, len(maps)))
    evaluate(sampled)
    spread = [cache[c] for c in sampled]
    best = min(cache, key=lambda c: (cache[c], c))  # the sample may hold a better one
    return {
        "machine": machine,
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
        "mappings": len(maps),
        "search_s": search_s,
        "sample_min_ns": min(spread),
        "sample_median_ns": statistics.median(spread),
        "sample_max_ns": max(spread),
        "sample_mean_over_best": statistics.fmean(spread) / cache[best],
        "evaluated": {format_mapping(list(c)): v for c, v in sorted(cache.items(), key=lambda kv: kv[1])},
    }
