"""The SPU program API: data moves, ordering, tag status, time."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from cellsim import Machine, NotInProgramError
from cellsim.kernels import load_dma_bench
from cellsim.spu import (
    compute,
    ls_alloc,
    mfc_barrier,
    mfc_get,
    mfc_getb,
    mfc_put,
    mfc_putf,
    mfc_read_tag_status_all,
    mfc_read_tag_status_any,
    mfc_read_tag_status_immediate,
    mfc_write_tag_mask,
    spe_id,
    spu_read_decrementer,
    spu_write_decrementer,
)


def wait(tags: int) -> int:
    mfc_write_tag_mask(tags)
    return mfc_read_tag_status_all()


def test_get_then_put_moves_the_bytes(m: Machine) -> None:
    """A 16 KB get from memory and a put back elsewhere copy the data exactly."""
    src, dst = m.alloc(16384), m.alloc(16384)
    data = np.random.default_rng(0).integers(0, 256, 16384, dtype=np.uint8)
    src.array()[:] = data

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = ls_alloc(16384, align=128)
        mfc_get(buf, src, 16384, 1)
        wait(1 << 1)
        assert np.array_equal(buf.array(), data)
        mfc_put(buf, dst, 16384, 2)
        wait(1 << 2)

    m.load(0, prog)
    m.run()
    assert np.array_equal(dst.array(), data)


def test_ls_to_ls_put_lands_in_the_other_local_store(m: Machine) -> None:
    """A put to another SPE's mapped local store writes its bytes."""

    def sender(speid: int, argp: int, envp: int) -> None:
        buf = ls_alloc(256, align=128)
        buf.array()[:] = np.arange(256, dtype=np.uint8)
        mfc_put(buf, Machine.ls_ea(1) + 0x20000, 256, 0)
        wait(1)

    m.load(0, sender)
    m.run()
    assert np.array_equal(m.local_store(1)[0x20000 : 0x20000 + 256], np.arange(256, dtype=np.uint8))


def test_small_transfers_keep_the_low_address_bits(m: Machine) -> None:
    """1-, 2-, 4- and 8-byte transfers move exactly their bytes."""
    src = m.alloc(64)
    src.array()[:] = np.arange(64, dtype=np.uint8)

    def prog(speid: int, argp: int, envp: int) -> int:
        buf = ls_alloc(64, align=16)
        for size, off in [(1, 3), (2, 6), (4, 12), (8, 24)]:
            mfc_get(int(buf) + off, int(src) + off, size, 0)
        wait(1)
        got = buf.array()
        assert list(got[3:4]) == [3] and list(got[6:8]) == [6, 7] and list(got[24:32]) == list(range(24, 32))
        assert got[0] == 0 and got[5] == 0, "nothing else was written"
        return 0

    m.load(0, prog)
    assert m.run().programs[0].exit_code == 0


def test_fence_orders_a_put_after_a_get_of_the_same_tag(m: Machine) -> None:
    """mfc_putf waits for the earlier get of its tag group, so it sends the fetched data."""
    src, dst = m.alloc(4096), m.alloc(4096)
    src.array()[:] = 0xAB

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = ls_alloc(4096, align=128)
        mfc_get(buf, src, 4096, 5)
        mfc_putf(buf, dst, 4096, 5)
        wait(1 << 5)

    m.load(0, prog)
    m.run()
    assert (dst.array() == 0xAB).all()


def test_without_a_fence_the_put_may_overtake(m: Machine) -> None:
    """A plain put issued right after a get of the same buffer goes out before the data arrives."""
    src, dst = m.alloc(4096), m.alloc(4096)
    src.array()[:] = 0xAB

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = ls_alloc(4096, align=128)
        mfc_get(buf, src, 4096, 5)
        mfc_put(buf, dst, 4096, 5)
        wait(1 << 5)

    m.load(0, prog)
    m.run()
    assert not (dst.array() == 0xAB).all()


def test_barrier_commands_order_later_commands_of_their_tag(m: Machine) -> None:
    """mfc_getb holds itself and later same-tag commands until earlier ones are done."""
    a, b, out = m.alloc(2048), m.alloc(2048), m.alloc(2048)
    a.array()[:] = 1
    b.array()[:] = 2

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = ls_alloc(2048, align=128)
        mfc_get(buf, a, 2048, 3)
        mfc_getb(buf, b, 2048, 3)  # must land after the first get
        wait(1 << 3)
        mfc_put(buf, out, 2048, 4)
        wait(1 << 4)

    m.load(0, prog)
    m.run()
    assert (out.array() == 2).all()


def test_mfc_barrier_orders_every_tag(m: Machine) -> None:
    """mfc_barrier: a put of another tag issued after it waits for the get before it."""
    src, dst = m.alloc(4096), m.alloc(4096)
    src.array()[:] = 7

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = ls_alloc(4096, align=128)
        mfc_get(buf, src, 4096, 1)
        mfc_barrier(0)
        mfc_put(buf, dst, 4096, 2)
        wait((1 << 1) | (1 << 2))

    m.load(0, prog)
    m.run()
    assert (dst.array() == 7).all()


def test_tag_status_any_and_immediate(m: Machine) -> None:
    """'any' returns when one group is done; 'immediate' never blocks.

    The DMAC alternates gets and puts, so a small put issued after a 16 KB get
    is not stuck behind it and its tag group completes first.
    """
    big, small = m.alloc(16384), m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> None:
        b1 = ls_alloc(16384, align=128)
        b2 = ls_alloc(128, align=128)
        mfc_get(b1, big, 16384, 1)
        mfc_put(b2, small, 128, 2)
        mfc_write_tag_mask(0b110)
        assert mfc_read_tag_status_immediate() == 0
        done = mfc_read_tag_status_any()
        assert done == 0b100, "the small put finishes first"
        assert mfc_read_tag_status_all() == 0b110

    m.load(0, prog)
    m.run()


def test_compute_and_the_decrementer_agree(m: Machine) -> None:
    """compute(n) takes n cycles; the decrementer counts down at the timebase rate."""
    ticks_per_cycle = m.facts.timebase_hz / m.core_hz

    def prog(speid: int, argp: int, envp: int) -> int:
        spu_write_decrementer(1_000_000)
        t0 = spu_read_decrementer()
        compute(128_000)
        t1 = spu_read_decrementer()
        return t0 - t1

    m.load(0, prog)
    r = m.run()
    assert r.programs[0].exit_code == pytest.approx(128_000 * ticks_per_cycle, abs=1)


def test_programs_run_concurrently_in_simulated_time(m: Machine) -> None:
    """Eight programs computing 10 000 cycles each end at about 10 000 cycles, not 80 000."""
    for s in range(8):
        m.load(s, lambda speid, argp, envp: compute(10_000))
    r = m.run()
    assert 10_000 <= r.cycles < 10_100
    assert {p.spe for p in r.programs} == set(range(8))


def test_spe_id_and_arguments_reach_the_program(m: Machine) -> None:
    seen = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        seen[speid] = (spe_id(), argp, envp)

    m.load(3, prog, argp=0x1234, envp=99)
    m.run()
    assert seen == {3: (3, 0x1234, 99)}


def test_spu_calls_outside_a_program_raise() -> None:
    with pytest.raises(NotInProgramError, match="mfc_get must be called from an SPE program"):
        mfc_get(0, 0, 16, 0)


@pytest.mark.parametrize("put", [False, True])
def test_python_and_native_kernels_time_identically(put: bool) -> None:
    """The Python twin of a native kernel gives the same cycles and the same result."""
    results = []
    for native in (True, False):
        m = Machine("qs20", seed=3)
        buf = m.alloc(16384)
        load_dma_bench(m, 0, put=put, ea=buf, size=2048, batch=3, count=40, native=native)
        load_dma_bench(
            m, 1, put=not put, ea=Machine.ls_ea(2) + 0x10000, size=512, batch=0, count=40, native=native
        )
        r = m.run()
        results.append((r.cycles, [(p.exit_code, p.end_cycle) for p in r.programs], r.stats["transfers"]))
    assert results[0] == results[1]


def test_same_seed_same_run() -> None:
    """Determinism: the same seed gives the same placement, cycles and counters."""

    def run(seed: int) -> tuple:
        m = Machine("qs20", seed=seed)
        for s in range(8):
            load_dma_bench(
                m, s, put=s % 2 == 1, ea=Machine.ls_ea((s + 3) % 8) + 0x10000, size=4096, batch=2, count=20
            )
        r = m.run()
        st = r.stats
        return (m.placement, r.cycles, st["transfers"], st["segment_busy"], st["ramp_sent"])

    assert run(5) == run(5)
    assert run(5)[0] != run(6)[0] or run(5)[1] != run(6)[1]


def test_partial_keyword_programs_work(m: Machine) -> None:
    """Programs with parameters are loaded with functools.partial."""
    out = {}

    def prog(speid: int, argp: int, envp: int, *, n: int) -> None:
        out[speid] = n

    m.load(2, partial(prog, n=5))
    m.run()
    assert out == {2: 5}
