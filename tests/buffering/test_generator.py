"""The loop generator: the k-buffered program moves and transforms the bytes,
and its Python and native versions take the same simulated cycles."""

from __future__ import annotations

import numpy as np
import pytest

from cellsim import CellsimError, Machine, UsageError
from cellsim.buffering import seed004_loop
from cellsim.buffering.loop import (
    KERNEL,
    Loop,
    expected_outputs,
    free_local_store,
    generate,
    max_fitting_block,
    run_loop,
)

PAPER_LOOP = Loop(n=4096, c_inner=0.51, c_outer=300.0)  # t1: B[i] = A1[i] + A2[i], 8-byte elements


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("bf", [2, 64, 250])
def test_output_bytes_are_checked(k: int, bf: int) -> None:
    """run_loop compares every output byte with numpy (250 leaves a partial last block)."""
    r = run_loop(PAPER_LOOP, k, bf)
    assert r.checked and r.native and r.n == 4096 and r.blocks == -(-4096 // bf)
    assert r.cycles > 0 and r.throughput_mbs > 0


def test_the_transform_is_really_applied() -> None:
    """Run by hand: B = A1 + A2 as big-endian 8-byte integers, modulo 2^64."""
    m = Machine("qs20", seed=3)
    a1, a2, b = (m.alloc(256 * 8) for _ in range(3))
    a1.array(">u8")[:] = np.arange(256, dtype=np.uint64) + np.uint64(2**64 - 100)
    a2.array(">u8")[:] = np.arange(256, dtype=np.uint64) * np.uint64(1000)
    prog = generate(Loop(256, 1.0, 0.0), 2, 32, m)
    prog.load(m, 0, [a1, a2], [b], native=True)
    m.run()
    i = np.arange(256, dtype=np.uint64)
    want = (i + np.uint64(2**64 - 100)) + i * np.uint64(1000)
    assert np.array_equal(b.array(">u8"), want)
    assert b.array(">u8")[0] == 2**64 - 100 and b.array(">u8")[1] == (2**64 - 99 + 1000) % 2**64


def test_mixed_streams_and_truncation() -> None:
    loop = Loop(n=2048, c_inner=5, c_outer=77, inputs=(1, 4, 8), outputs=(2, 8, 1), unit="cycles")
    assert loop.bytes_per_iter == 24 and loop.granularity == 16
    for k in (1, 3):
        assert run_loop(loop, k, 128, native=True).checked
        assert run_loop(loop, k, 128, native=False).checked
    ins = [
        np.array([255, 1], dtype=">u1"),
        np.array([0xFFFFFFFF, 2], dtype=">u4"),
        np.array([1, 3], dtype=">u8"),
    ]
    out = expected_outputs(Loop(16, 1, 0, (1, 4, 8), (2, 8, 1)), [np.resize(a, 16) for a in ins])
    # 255 + 0xFFFFFFFF + 1 = 0x1_0000_00FF: output 0 (2 bytes) 0x00FF, output 2 (1 byte) 0xFF + 2 = 0x01
    assert int(out[0][0]) == 0x00FF and int(out[1][0]) == 0x1_0000_00FF + 1 and int(out[2][0]) == 0x01


def test_blocks_larger_than_16_kb_take_several_dmas() -> None:
    loop = Loop(n=4096 * 4, c_inner=0.5, c_outer=10.0, inputs=(8,), outputs=(8,))
    r = run_loop(loop, 2, 3000)  # 24000-byte blocks: 16 KB + 7616 B per stream, last block partial
    assert r.checked


@pytest.mark.parametrize(
    ("loop", "k", "bf"),
    [
        (PAPER_LOOP, 1, 2),
        (PAPER_LOOP, 2, 96),
        (PAPER_LOOP, 3, 250),
        (seed004_loop("t4", 2048), 4, 64),
        (Loop(n=2000, c_inner=3.3, c_outer=17.0, inputs=(4, 2), outputs=(8,), unit="cycles"), 3, 24),
        (Loop(n=4096, c_inner=0.7, c_outer=0.0, inputs=(8, 8, 8), outputs=()), 2, 2048),
        (Loop(n=1024, c_inner=0.7, c_outer=99.0, inputs=(), outputs=(4, 4)), 2, 100),
    ],
)
def test_python_and_native_take_identical_cycles(loop: Loop, k: int, bf: int) -> None:
    py = run_loop(loop, k, bf, native=False, seed=5)
    rs = run_loop(loop, k, bf, native=True, seed=5)
    assert py.checked and rs.checked
    assert (py.cycles, py.ticks) == (rs.cycles, rs.ticks)


def test_compute_cycles_per_block() -> None:
    prog = generate(seed004_loop("t3", 1024), 2, 100, "qs20")
    # C_inner 2.83 ns and C_outer 300 ns at 3.2 GHz (960 cycles, as profiled): the block's own
    # code is C_outer less the engine's channel work (3 DMA issues of 10 cycles and a 2-cycle
    # tag-mask write), plus two buffers' switching (4 + 2 per stream)
    own = 960 - (3 * 10 + 2) + (4 + 2 * 3)
    assert prog.c_inner_cycles == pytest.approx(9.056) and prog.c_outer_cycles == pytest.approx(own)
    assert prog.block_cycles(100) == round(905.6 + own) and prog.block_cycles(24) == round(9.056 * 24 + own)
    one = generate(seed004_loop("t3", 1024), 1, 100, "qs20")
    assert one.c_outer_cycles == pytest.approx(960 - 32)  # single buffering switches nothing
    assert prog.kernel([1 << 20, 2 << 20], [3 << 20]).name == KERNEL
    cyc = Loop(256, 10, 200, unit="cycles")
    assert cyc.ns(3.2e9) == pytest.approx((3.125, 62.5)) and cyc.cycles(3.2e9) == (10, 200)


def test_buffering_overlaps_dma_with_computation() -> None:
    """The waits are on the right tags: with two buffers the computation hides
    the DMA, with one it adds to it; a DMA-bound loop runs at the DMA-only rate."""
    t3 = seed004_loop("t3", 256 * 256)
    one, two = run_loop(t3, 1, 256), run_loop(t3, 2, 256)
    assert two.cycles < 0.8 * one.cycles
    t1 = seed004_loop("t1", 64 * 2048)
    loaded = run_loop(t1, 2, 2048)
    dma_only = run_loop(t1, 2, 2048, c_cycles=(0.0, 0.0))
    assert loaded.throughput_mbs == pytest.approx(dma_only.throughput_mbs, rel=0.02)


def test_local_store_fit() -> None:
    m = Machine("qs20")
    free = free_local_store(m)
    assert free == 256 * 1024 - 16 * 1024
    top = max_fitting_block(PAPER_LOOP, 3, free)
    generate(PAPER_LOOP, 3, top, m)
    with pytest.raises(
        UsageError, match=f"block factor {top + 2} does not fit in the local store with the program"
    ):
        generate(PAPER_LOOP, 3, top + 2, m)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: generate(PAPER_LOOP, 2, 3), "block factor 3 makes DMAs that are not multiples of 16 bytes"),
        (lambda: generate(PAPER_LOOP, 0, 64), "the number of buffers k must be a positive integer, not 0"),
        (lambda: generate(PAPER_LOOP, 33, 2), "k = 33 buffers need 33 tag groups"),
        (lambda: generate(PAPER_LOOP, 2, -4), "the block factor bf must be a positive integer, not -4"),
        (lambda: generate(PAPER_LOOP, 1, 12288), "block factor 12288 does not fit in the local store"),
        (lambda: Loop(n=0, c_inner=1, c_outer=1), "the iteration count n must be a positive integer, not 0"),
        (lambda: Loop(n=64, c_inner=0, c_outer=1), "C_inner must be a positive time, not 0"),
        (lambda: Loop(n=64, c_inner=-2.5, c_outer=1), "C_inner must be a positive time, not -2.5"),
        (lambda: Loop(n=64, c_inner=1, c_outer=-1), "C_outer must not be negative, not -1"),
        (
            lambda: Loop(n=64, c_inner=1, c_outer=1, inputs=(3,)),
            "input element size 3 is not one of 1, 2, 4, 8",
        ),
        (
            lambda: Loop(n=63, c_inner=1, c_outer=1),
            "n = 63 elements of 8 bytes is 504 bytes, not a multiple of 16",
        ),
        (
            lambda: Loop(n=64, c_inner=1, c_outer=1, unit="us"),
            "the time unit must be 'ns' or 'cycles', not 'us'",
        ),
        (lambda: Loop(n=64, c_inner=1, c_outer=1, inputs=(), outputs=()), "at least one input or output"),
        (lambda: run_loop(PAPER_LOOP, 2, 64, machine="cray1"), "unknown machine 'cray1'"),
        (lambda: seed004_loop("t9", 64), "unknown kernel 't9'"),
    ],
)
def test_bad_input_is_named(build: object, match: str) -> None:
    with pytest.raises(CellsimError, match=match):  # UsageError, or ConfigError for the machine
        build()  # type: ignore[operator]


def test_a_wrong_byte_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    import cellsim.buffering.loop as loop_mod

    def off_by_one(loop: Loop, inputs: list[np.ndarray]) -> list[np.ndarray]:
        out = loop_mod.__dict__["_expected"](loop, inputs)
        out[0][7] += 1
        return out

    monkeypatch.setitem(loop_mod.__dict__, "_expected", loop_mod.expected_outputs)
    monkeypatch.setattr(loop_mod, "expected_outputs", off_by_one)
    with pytest.raises(CellsimError, match=r"wrote output 0 element 7 = \d+, expected \d+"):
        run_loop(PAPER_LOOP, 2, 64)
