"""One run of a communication pattern under a mapping, with Keller and Varbanescu 2010's two
placement modes and the physical causes of run-to-run variation.

**Placement.** A run of Keller and Varbanescu 2010's application starts its threads (and
their SPE contexts) once; every mapping of that run uses the same contexts.
Where the contexts sit (logical SPE ``i`` = context ``i``) is the run's
placement (:func:`run_placement`), by one of :data:`CONTEXTS`:

``physical``
    context ``i`` is the ``i``-th physical SPE Linux sees (the paper's
    assumption that the local stores' order in the effective-address space
    is the SPE numbering).
``local``
    the contexts land on chip 0's SPEs in a seeded order, then chip 1's
    (spufs gives a context an idle SPE of its PPE thread's node first: a
    program whose threads stay on chip 0).
``spread``
    the contexts land on any SPE of the machine in a seeded order (the
    threads run on both chips' PPEs; on one chip the same as ``local``).

The modes: ``default`` passes the task ids to the programs (placement
``spread``); ``pinned`` has the PPE write each task id into the local store
of context ``i`` (``physical`` on one chip; ``spread`` on a two-chip blade,
where nothing pins a context to a chip: see docs/messaging.md).

**Run-to-run variation** (:class:`Variation`; each mechanism can be switched
off, all draws come from the run's seed; none is tuned to a published figure):

``skew_ns``
    start-time skew: the SPE programs start at uniform random times in
    ``[0, skew_ns)`` (the PPE starts one pthread and context per SPE, one
    after another).
``phase``
    arbitration phase: each program also starts 0-23 core cycles late (one to
    twelve bus cycles, either edge): where each SPE's first requests fall in
    the bus clock and the round-robin rotation of the command bus and data
    arbiter over the 12 ramps. The engine's arbiters always start at the same
    element; these offsets (and the background traffic) randomise which
    requester wins the first ties, from which the rest of the run follows.
``os_noise_ns``
    background traffic of the operating system on the PPE: a memory-mapped
    read of a random task SPE's mailbox status register (what spufs does)
    every ``os_noise_ns`` on average (uniform in 0..2x). The engine does not
    put the PPE's cacheable memory accesses on the bus (no cache model yet),
    so these uncached reads are the PPE's share of EIB traffic.
``hypervisor_ns``
    on a machine with fewer than 8 visible SPEs (``ps3``), the hypervisor's
    SPE reads and writes ``hypervisor_bytes`` of main memory every
    ``hypervisor_ns`` on average. It runs on ``hypervisor_spe``, by default
    the lowest-numbered physical SPE Linux does not see (SPE 6 on ``ps3``).
``refresh``
    the memory's DRAM refresh (the machine's ``mic.refresh_*``): where the
    refreshes fall relative to the programs' start is drawn from the seed,
    as on the real machine; off, the DRAM is never refreshed.
``visible``
    which physical SPEs Linux sees: the machine's ``spes`` list (``ps3``:
    0-5, an undocumented assumption, see ``machines/ps3.toml``); override it
    here to try another.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..exceptions import UsageError
from ..kernels import Kernel
from ..machine import Machine
from ..spec import MachineLike
from .library import (
    Setup,
    TaskSpec,
    check_parameters,
    exchange_task,
    forward_task,
    packet_size,
    packets_per_iteration,
    setup,
)
from .patterns import Pattern, format_mapping
from .target import SPES_PER_CHIP, Target, resolve

__all__ = [
    "CONTEXTS",
    "DEFAULTS",
    "MODES",
    "PLACEMENT_PER",
    "Variation",
    "check_bytes",
    "default_contexts",
    "point_seed",
    "run_placement",
    "simulate",
]

MODES = ("default", "pinned")

CONTEXTS = ("physical", "local", "spread")
"""Where a run's SPE contexts land (see the module docstring)."""

PLACEMENT_PER = ("run", "mapping")
"""``run``: every mapping of a run shares the run's placement (Keller and Varbanescu 2010's
benchmark); ``mapping``: each (mapping, run) draws its own."""

PHASE_CYCLES = 24
"""Arbitration-phase offsets are 0..23 core cycles: twelve bus cycles, the
round-robin period over the 12 ramps, at either clock edge."""


@dataclass(frozen=True)
class Variation:
    """The run-to-run variation mechanisms (see the module docstring)."""

    skew_ns: float = 10_000.0
    phase: bool = True
    os_noise_ns: float = 5_000.0
    hypervisor_ns: float = 10_000.0
    hypervisor_bytes: int = 128
    hypervisor_spe: int | None = None
    refresh: bool = True
    visible: tuple[int, ...] | None = None

    @classmethod
    def off(cls) -> Variation:
        """No variation: every run of a mapping is the same (pinned mode)."""
        return cls(skew_ns=0.0, phase=False, os_noise_ns=0.0, hypervisor_ns=0.0, refresh=False)

    def as_dict(self) -> dict[str, Any]:
        """The settings as a JSON-serialisable dict."""
        d = asdict(self)
        d["visible"] = None if self.visible is None else list(self.visible)
        return d


DEFAULTS = Variation()


@dataclass(frozen=True)
class Params:
    """The library's parameters for a run."""

    packet: int = 1024
    nbuf: int = 2
    poll_cycles: int = 200
    call_cycles: int = 40


def default_contexts(machine: MachineLike | Target, mode: str) -> str:
    """The placement policy of ``mode`` on ``machine``: ``pinned`` is
    ``physical`` on one chip and ``spread`` on a two-chip blade; ``default``
    is ``spread``."""
    if mode == "pinned" and resolve(machine).chips == 1:
        return "physical"
    return "spread"


def check_contexts(contexts: str) -> str:
    """``contexts`` if it is one of :data:`CONTEXTS` (else ``UsageError``)."""
    if contexts not in CONTEXTS:
        raise UsageError(f"contexts {contexts!r} is not one of {', '.join(CONTEXTS)}")
    return contexts


def _draw_contexts(contexts: str, rng: np.random.Generator, visible: Sequence[int]) -> list[int]:
    """The physical SPE of each context under ``contexts``, drawn from ``rng``."""
    if contexts == "physical":
        return list(visible)
    if contexts == "spread":
        return [int(x) for x in rng.permutation(visible)]
    out: list[int] = []
    for chip in sorted({p // SPES_PER_CHIP for p in visible}):
        out.extend(int(x) for x in rng.permutation([p for p in visible if p // SPES_PER_CHIP == chip]))
    return out


def run_placement(
    machine: MachineLike | Target,
    mode: str,
    contexts: str,
    *,
    seed: int,
    pattern: str,
    run: int,
    visible: Sequence[int] | None = None,
) -> list[int]:
    """The physical SPE of each context in run ``run`` (shared by every
    mapping of the run): drawn from a hash of the base seed, the machine, the
    mode, the pattern and the run number."""
    target = resolve(machine)
    vis = list(target.visible(visible))
    rng = np.random.default_rng(point_seed(seed, target.name, mode, pattern, "placement", run))
    return _draw_contexts(check_contexts(contexts), rng, vis)


def point_seed(seed: int, *parts: Any) -> int:
    """A stable 32-bit seed from a base seed and the parts naming a run
    (the same on every host and Python version)."""
    text = "|".join([str(int(seed))] + [str(p) for p in parts])
    return zlib.crc32(text.encode())


def _ns_cycles(ns: float, hz: float) -> int:
    return round(ns * hz / 1e9)


def simulate(
    machine: MachineLike | Target,
    pattern: Pattern,
    mapping: Sequence[int],
    *,
    count: int,
    mode: str = "pinned",
    seed: int = 0,
    variation: Variation = DEFAULTS,
    packet: int = 1024,
    nbuf: int = 2,
    poll_cycles: int = 200,
    call_cycles: int = 40,
    native: bool = True,
    traffic: bool = True,
    check: bool = True,
    contexts: str | None = None,
    placement: Sequence[int] | None = None,
    start_skew: bool = True,
) -> dict[str, Any]:
    """Runs ``pattern`` with task ``i`` on logical SPE ``mapping[i]`` once.

    Args:
        machine: machine name or TOML path, or its resolved :class:`~cellsim.messaging.target.Target`.
        pattern: the tasks and edges (:mod:`cellsim.messaging.patterns`).
        mapping: logical SPE of each task.
        count: transmissions per task (ring) or iterations (exchange).
        mode: ``default`` (placement drawn per run) or ``pinned``.
        seed: the run's seed: placement, variation, payload bytes.
        variation: the variation mechanisms.
        packet: bytes per packet; nbuf: buffers per neighbour and direction;
        poll_cycles: SPU cycles between polls when idle; call_cycles: library
            bookkeeping per send and per received packet.
        native: run the native kernels (else their Python twins, same cycles).
        traffic: add the traffic of every ring segment and of the command bus.
        check: check every packet byte left in the receive buffers.
        contexts: where the contexts land (:data:`CONTEXTS`; default
            :func:`default_contexts`), drawn from ``seed`` unless
            ``placement`` is given.
        placement: the physical SPE of each context (the run's placement,
            :func:`run_placement`); the draws of ``seed`` are made all the
            same, so the other random choices do not depend on it.
        start_skew: whether the programs start ``variation.skew_ns`` apart
            (the PPE starting the contexts); off for a mapping that follows
            another in the same threads (the explorer's per-run benchmark).
            The draws are made all the same.

    Returns one record: ``runtime_ns`` (the last task's end), ``placement``
    (physical SPE of each task), ``bytes_ok``, and with ``traffic`` the bytes
    and utilisation per ring segment and the command-bus load.
    """
    if mode not in MODES:
        raise UsageError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if count < 1:
        raise UsageError(f"transmissions/iterations must be positive, not {count}")
    check_parameters(packet, nbuf, poll_cycles, call_cycles)
    if pattern.kind == "ring" and pattern.unidirectional and nbuf < 2:
        raise UsageError(
            f"buffers per neighbour {nbuf}: a unidirectional ring carries two packets per task "
            "and needs at least 2 buffers each side (else every buffer fills and it deadlocks)"
        )
    target = resolve(machine)
    visible = target.visible(variation.visible)
    k = pattern.tasks
    if k > len(visible):
        raise UsageError(f"{k} tasks but {target.name} has {len(visible)} SPEs for them")
    if len(mapping) != k or sorted(mapping) != list(range(k)):
        raise UsageError(f"mapping {list(mapping)} is not a permutation of 0..{k - 1} ({k} tasks)")
    rng = np.random.default_rng(seed)
    ctx = check_contexts(contexts) if contexts is not None else default_contexts(target, mode)
    logical = _draw_contexts(ctx, rng, visible)
    if placement is not None:
        if sorted(int(p) for p in placement) != sorted(visible):
            raise UsageError(f"placement {list(placement)} is not a permutation of the SPEs {list(visible)}")
        logical = [int(p) for p in placement]
    spes = list(logical)
    overrides: list[str] = []
    hv_spe = None
    if variation.hypervisor_ns > 0 and len(visible) < 8:
        hidden = [p for p in range(8) if p not in visible]
        hv_spe = variation.hypervisor_spe if variation.hypervisor_spe is not None else hidden[0]
        if hv_spe not in hidden:
            raise UsageError(f"hypervisor SPE {hv_spe} is one of the visible SPEs {list(visible)}")
        spes.append(hv_spe)
    if variation.visible is not None or hv_spe is not None:
        overrides.append(f"spes=[{', '.join(str(s) for s in sorted(spes))}]")
    if not variation.refresh:
        overrides.append("mic.refresh_ns=0")
    m = Machine(target.spec, seed=seed, overrides=overrides, placement=spes, time_limit_ns=_limit_ns(count))
    hz = m.core_hz
    specs = pattern.task_specs(count, packet)
    hv_bytes = max(int(variation.hypervisor_bytes), 16 * k)
    hv_bytes = -(-hv_bytes // 16) * 16
    st = setup(
        m,
        specs,
        list(mapping),
        packet=packet,
        nbuf=nbuf,
        poll_cycles=poll_cycles,
        call_cycles=call_cycles,
        iterations=count,
        pinned=mode == "pinned",
        seed=int(rng.integers(2**32)),
        done_bytes=hv_bytes,
        dma_wait=target.spec.facts.messaging_dma_wait,
        pass_delay_cycles=_ns_cycles(target.spec.facts.messaging_pass_delay_ns, hz),
    )
    skew = [
        _ns_cycles(rng.uniform(0, variation.skew_ns), hz) if variation.skew_ns > 0 else 0 for _ in range(k)
    ]
    if not start_skew:
        skew = [0] * k
    phase = [int(rng.integers(PHASE_CYCLES)) if variation.phase else 0 for _ in range(k)]
    name = "forward_task" if pattern.kind == "ring" else "exchange_task"
    program = forward_task if pattern.kind == "ring" else exchange_task
    tids = []
    for t in range(k):
        delay = skew[t] + phase[t]
        if native:
            prog: Any = Kernel(name, argp=st.argp, envp=st.envp[t])
            tids.append(m.start_spe(mapping[t], prog, delay=delay))
        else:
            tids.append(m.start_spe(mapping[t], program, argp=st.argp, envp=st.envp[t], delay=delay))
    noise_seed, hv_seed = (int(x) for x in rng.integers(1, 2**31, size=2))
    if variation.os_noise_ns > 0:
        noise = Kernel(
            "os_noise",
            done_ea=int(st.done),
            tasks=k,
            spes=[int(s) for s in mapping[:k]],
            interval=_ns_cycles(variation.os_noise_ns, hz),
            seed=noise_seed,
        )
        m.start_spe(0, noise)
    if hv_spe is not None:
        scratch = m.alloc(hv_bytes, 128)
        m.start_spe(
            len(spes) - 1,
            Kernel(
                "hv_traffic",
                done_ea=int(st.done),
                tasks=k,
                scratch_ea=int(scratch),
                size=hv_bytes,
                interval=_ns_cycles(variation.hypervisor_ns, hz),
                seed=hv_seed,
            ),
        )
    result = m.run()
    by_tid = {p.thread: p for p in result.programs}
    ends = []
    for t, tid in enumerate(tids):
        p = by_tid[tid]
        if p.exit_code != 0 or p.end_cycle is None:
            raise UsageError(f"task {t} on SPE {mapping[t]} ended with {p.exit_code!r}")
        ends.append(p.end_cycle)
    runtime = max(ends)
    rec: dict[str, Any] = {
        "machine": m.name,
        "pattern": pattern.name,
        "mode": mode,
        "contexts": ctx,
        "mapping": format_mapping(list(mapping)),
        "tasks": k,
        "packet": packet,
        "count": count,
        "seed": seed,
        "placement": [logical[a] for a in mapping],
        "runtime_ns": runtime * 1e9 / hz,
        "runtime_cycles": runtime,
    }
    if check:
        bad = check_bytes(m, st, pattern, count)
        if bad:
            raise UsageError(f"packet bytes wrong after the run: {'; '.join(bad[:3])}")
        rec["bytes_ok"] = True
    if traffic:
        rec.update(_traffic(m, result.stats, runtime))
    return rec


def _limit_ns(count: int) -> float:
    """Simulated-time limit: generous (a transmission takes about a microsecond)."""
    return max(10e9, count * 50_000.0)


def _traffic(m: Machine, stats: dict[str, Any], runtime: int) -> dict[str, Any]:
    """Bytes and utilisation of every ring segment of every chip (both rings
    of a direction added up; chip 1's segments are named ``c1:...``), the
    BIF's bytes each way, and the command bus's load (of all chips' buses)."""
    ramps = list(m.facts.ramps)
    n = len(ramps)
    chips = m.chips
    busy = np.asarray(stats["segment_busy"], dtype=np.float64)
    per_chip = busy.shape[0] // chips
    half = per_chip // 2
    beat_bytes_per_cycle = 8.0  # 16 bytes per bus cycle = 2 core cycles
    segs = []
    for chip in range(chips):
        rings = busy[chip * per_chip : (chip + 1) * per_chip]
        prefix = f"c{chip}:" if chip else ""
        ways = (("clockwise", 1, rings[:half]), ("counter-clockwise", -1, rings[half:]))
        for direction, step, part in ways:
            total = part.sum(axis=0)
            for i in range(n):
                segs.append(
                    {
                        "segment": f"{prefix}{ramps[i]}->{ramps[(i + step) % n]}",
                        "direction": direction,
                        "bytes": float(total[i] * beat_bytes_per_cycle),
                        "utilisation": float(total[i] / (half * max(runtime, 1))),
                    }
                )
    bus_cycles = max(runtime / 2.0, 1.0)
    out = {
        "segments": segs,
        "command_bus_requests": int(stats["bus_requests"]),
        "command_bus_utilisation": float(stats["bus_requests"] / bus_cycles / chips),
        "transfers": int(stats["transfers"]),
        "transfer_bytes": int(stats["transfer_bytes"]),
        "mic_reads": int(stats["mic_reads"]),
        "mic_writes": int(stats["mic_writes"]),
    }
    if "bif_bytes" in stats:
        out["bif_bytes"] = [int(b) for b in stats["bif_bytes"]]
    return out


def _ring_stream_origin(specs: list[TaskSpec], task: int, out: int, m: int) -> tuple[int, int]:
    """Which payload (task, index) is packet ``m`` of ``task``'s stream to out-peer ``out``.

    A stream starts with its sender's own initial packets and goes on with the
    packets forwarded from the stream into the sender, so the origin is found
    by walking the ring backwards; once the walk is back where it started,
    whole turns (as many packets as all the initial ones on the way) are
    skipped at once.
    """
    start, turn = (task, out), 0
    for _ in range(10**7):
        spec = specs[task]
        base = sum(o.initial for o in spec.outs[:out])
        init = spec.outs[out].initial
        if m < init:
            return task, base + m
        m -= init
        turn += init
        j = next(j for j, p in enumerate(spec.ins) if p.fwd == out)
        src = spec.ins[j].task
        out = next(o for o, p in enumerate(specs[src].outs) if p.task == task)
        task = src
        if (task, out) == start and turn:
            m %= turn
    raise AssertionError("ring stream without initial packets")


def check_bytes(m: Machine, st: Setup, pattern: Pattern, count: int) -> list[str]:
    """Checks every packet left in every receive buffer against the payload it
    must be (the ring's packets were forwarded hop by hop; an exchange packet
    is its sender's payload under its header). Returns what is wrong."""
    bad: list[str] = []
    words_end = np.dtype(">u4")
    packet, nbuf = st.packet, st.nbuf
    for t, (spec, lay) in enumerate(zip(st.tasks, st.layouts, strict=True)):
        ls = m.local_store(st.spes[t])
        res = ls[lay.result : lay.result + 8].view(words_end)
        if int(res[0]) != 1:
            bad.append(f"task {t} did not finish")
        if int(res[1]) != 0:
            bad.append(f"task {t} received {int(res[1])} packets with a wrong header")
        for j, p in enumerate(spec.ins):
            for slot in range(min(nbuf, p.target)):
                # the last packet k < target with k % nbuf == slot
                last = p.target - 1
                k = last - ((last - slot) % nbuf)
                at = lay.recv[j] + slot * packet
                if pattern.kind == "ring":
                    sender = st.tasks[p.task]
                    o = next(i for i, q in enumerate(sender.outs) if q.task == t)
                    src, idx = _ring_stream_origin(st.tasks, p.task, o, k)
                    want = st.payloads[src][idx * packet : (idx + 1) * packet]
                    got = ls[at : at + packet]
                else:
                    ppi = packets_per_iteration(p.bytes, packet)
                    size = packet_size(p.bytes, packet, k % ppi)
                    hdr = np.array([p.task, k], dtype=">u4").view(np.uint8)
                    want = np.concatenate([hdr, st.payloads[p.task][8:size]])
                    got = ls[at : at + size]
                if not np.array_equal(got, want):
                    bad.append(f"task {t}: packet {k} from task {p.task} (buffer {slot}) differs")
    return bad


def transmissions_ok(count: int) -> None:
    """``UsageError`` unless ``count`` transmissions per SPE can run the ring."""
    if count < 2:
        raise UsageError(f"transmissions {count}: each task starts two packets, so it needs at least 2")


def estimate_cost(count: int, tasks: int) -> float:
    """A rough host time of one ring run in seconds (for progress estimates)."""
    return 2e-6 * count * tasks + 0.005
