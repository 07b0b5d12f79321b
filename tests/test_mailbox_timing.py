"""Mailbox timing against seed 000 (calibration.md): "mailbox message PPE<->SPE
as little as 150 ns; SPU-SPU round trip through mailboxes about 300 ns".
Each measurement must be within 30% of the published value, on several
placements (seeds)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from cellsim import Machine, ppe, spu
from cellsim.ppe import (
    pthread_create,
    pthread_join,
    spe_context_create,
    spe_context_run,
    spe_in_mbox_write,
    spe_program_load,
    spe_ps_area_get,
)

SPU_IN_MBOX = 0x400C
SEEDS = [0, 1, 2, 3]
MESSAGES = 20


def _bench(name: str) -> ModuleType:
    """``benches/NAME.py`` as a module (the benches are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(
        name, Path(__file__).parent.parent / "benches" / f"{name}.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FACILITIES = _bench("facilities")


def within(measured: float, published: float, tolerance: float = 0.30) -> bool:
    return abs(measured - published) <= tolerance * published


def ppe_spe_one_way(seed: int) -> tuple[float, float]:
    """Mean ns of a PPE -> SPE message (from the PPE's write until the waiting
    SPU has it) and of an SPE -> PPE message (from the SPU's write until the
    waiting PPE thread has it): the facilities bench's measurement, which it
    prints beside the published value."""
    return FACILITIES.mailbox_ppe_spe(Machine("qs20", seed=seed))


def spu_spu_round_trip(seed: int) -> float:
    """Mean ns of a round trip between two SPEs, each writing the other's
    inbound mailbox by a 4-byte DMA to its problem-state area."""
    m = Machine("qs20", seed=seed)
    trips: list[float] = []

    def ping(speid: int, argp: int, envp: int) -> None:
        word = spu.ls_alloc(16, align=16)
        for i in range(MESSAGES):
            t0 = m.now_ns
            word.array(">u4")[3] = i
            spu.mfc_put(int(word) + 12, argp, 4, 0)
            assert spu.spu_read_in_mbox() == i
            trips.append(m.now_ns - t0)

    def pong(speid: int, argp: int, envp: int) -> None:
        word = spu.ls_alloc(16, align=16)
        for _ in range(MESSAGES):
            word.array(">u4")[3] = spu.spu_read_in_mbox()
            spu.mfc_put(int(word) + 12, argp, 4, 0)

    def main() -> None:
        a, b = spe_context_create(), spe_context_create()
        spe_program_load(a, ping)
        spe_program_load(b, pong)
        threads = [
            pthread_create(spe_context_run, a, argp=spe_ps_area_get(b) + SPU_IN_MBOX),
            pthread_create(spe_context_run, b, argp=spe_ps_area_get(a) + SPU_IN_MBOX),
        ]
        for t in threads:
            pthread_join(t)

    m.run(main)
    return float(np.mean(trips))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_ppe_spe_message_takes_about_150_ns(seed: int) -> None:
    down, up = ppe_spe_one_way(seed)
    assert within(down, 150), f"PPE -> SPE {down:.0f} ns"
    assert within(up, 150), f"SPE -> PPE {up:.0f} ns"


@pytest.mark.parametrize("seed", SEEDS)
def test_an_spu_spu_round_trip_takes_about_300_ns(seed: int) -> None:
    rt = spu_spu_round_trip(seed)
    assert within(rt, 300), f"SPU-SPU round trip {rt:.0f} ns"


def test_the_decrementer_agrees_with_the_clock() -> None:
    """The SPU's own measurement (decrementer at 3.2 GHz, counting cycles, as in
    the Rust test) gives the same PPE -> SPE latency as the simulator's clock."""
    m = Machine("qs20", seed=0, overrides={"timebase_mhz": 3200})
    got: dict[str, int] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        spu.spu_write_decrementer(0xFFFF_FFFF)
        got["start"] = m.cycles
        spu.spu_read_in_mbox()
        got["ticks"] = 0xFFFF_FFFF - spu.spu_read_decrementer()

    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, prog)
        t = pthread_create(spe_context_run, ctx)
        ppe.compute(m.ns_to_cycles(6000))
        got["sent"] = m.cycles
        spe_in_mbox_write(ctx, [1])
        pthread_join(t)

    m.run(main)
    latency_cycles = got["ticks"] - (got["sent"] - got["start"])
    assert within(m.cycles_to_ns(latency_cycles), 150)
    down, _ = ppe_spe_one_way(0)
    assert abs(m.cycles_to_ns(latency_cycles) - down) < 2, "within the decrementer read's cycles"
