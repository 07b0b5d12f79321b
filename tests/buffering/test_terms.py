"""The planner's model follows the machine: the chip's terms read from the machine file."""

from __future__ import annotations

import pytest

from cellsim import UsageError
from cellsim.buffering import Loop, plan_loop
from cellsim.buffering.choice import plan
from cellsim.buffering.fitting import steady_block_ns
from cellsim.buffering.model import PAPER, ChipTerms, Constants, Costs, predict
from cellsim.buffering.terms import chip_terms, planner_constants
from cellsim.spec import MachineSpec


def lines_touched(bf: int, streams: tuple[int, ...], blocks: int = 256) -> float:
    """Lines of 128 bytes the blocks of line-aligned streams touch, on average: counted one by one."""
    total = 0
    for e in streams:
        size = bf * e
        for j in range(blocks):
            start = j * size
            total += (start + size - 1) // 128 - start // 128 + 1
    return total / blocks


def test_the_terms_are_read_from_the_machine_file() -> None:
    t = chip_terms("qs20", (8, 8), (8,))
    assert t.command_ns == pytest.approx(96 / 3.2)  # mfc.command_cycles at 3.2 GHz
    assert t.port_ns_per_byte == pytest.approx(1 / 3.2 / 128)  # spu.dma_ls_cycles per line
    assert (t.streams, t.line_bytes, t.max_dma_bytes) == ((8, 8, 8), 128, 16384)
    assert t.switch_ns == pytest.approx(10 / 3.2)  # 4 + 2 per stream even instructions
    assert t.port_uses_per_iter == 4  # two quadword loads, a narrow store's load and store
    slow = chip_terms(MachineSpec.of("qs20", ["mfc.command_cycles=192"]), (8, 8), (8,))
    assert slow.command_ns == pytest.approx(2 * t.command_ns)
    wide = chip_terms(MachineSpec.of("qs20", ["spu.dma_ls_cycles=2"]), (8, 8), (8,))
    assert wide.port_ns_per_byte == pytest.approx(2 * t.port_ns_per_byte)


def test_machine_spec_setting_reads_the_resolved_file() -> None:
    spec = MachineSpec.of("qs20", ["mfc.command_cycles=50"])
    assert spec.setting("mfc.command_cycles") == 50
    assert spec.setting("mic.reads_per_requester") == 3  # qs20's own value over qs20-1chip's 5
    with pytest.raises(UsageError, match=r"no setting 'mfc\.nothing'"):
        spec.setting("mfc.nothing")


def test_planner_constants_join_the_fit_and_the_chip() -> None:
    c = planner_constants("qs20", (4, 4), (4,))
    assert c.source == "fit qs20" and c.chip == chip_terms("qs20", (4, 4), (4,))
    given = planner_constants("qs20", (4,), (4,), S=100.0, D1=0.1)
    assert (given.S_ns, given.D1_ns_per_byte, given.source) == (100.0, 0.1, "given")
    assert given.chip.streams == (4, 4)


@pytest.mark.parametrize(
    ("bf", "streams"), [(16, (8,)), (40, (4,)), (44, (4, 8)), (2050, (8,)), (96, (4, 4, 8))]
)
def test_a_block_pays_for_every_line_it_touches(bf: int, streams: tuple[int, ...]) -> None:
    t = ChipTerms(line_bytes=128, streams=streams)
    b = sum(streams)
    assert t.transfer_bytes(bf, b) == pytest.approx(128 * lines_touched(bf, streams), rel=0.02)
    assert t.transfer_bytes(bf, b) >= bf * b
    unit = t.block_unit(2)
    assert t.transfer_bytes(unit, b) == unit * b  # whole lines cost their bytes only


def test_whole_line_block_factors() -> None:
    assert ChipTerms(line_bytes=128, streams=(8, 8)).block_unit(2) == 16
    assert ChipTerms(line_bytes=128, streams=(8, 4)).block_unit(4) == 32
    assert ChipTerms(streams=(8, 4)).block_unit(4) == 4  # no lines counted: the granularity


def test_commands_split_blocks_larger_than_a_dma() -> None:
    t = ChipTerms(streams=(8, 4))
    assert t.commands(2048) == 2  # 16 KB and 8 KB
    assert t.commands(2049) == 3  # the 8-byte stream needs two DMAs


def test_no_chip_terms_is_the_papers_model() -> None:
    costs = Costs(0.51, 300.0, 24)
    for k, bf in ((1, 64), (2, 100), (3, 1024)):
        p = predict(costs, k, bf, PAPER)
        S, D, C = 130.0, 0.0877 * 24, 0.51 + 300.0 / bf
        want = max(D, C, (S / bf + C + D) / k) if k > 1 else S / bf + C + D
        assert p.time_per_iter_ns == pytest.approx(want) and p.F_ns == 0


def test_many_small_dmas_are_command_bound() -> None:
    """Five streams of 16-element blocks: 5 commands at 30 ns take 150 ns, more than the bytes."""
    chip = ChipTerms(command_ns=30.0, streams=(8, 8, 8, 8, 8))
    p = predict(Costs(0.2, 0.0, 40), 4, 16, Constants(130.0, 0.088, chip=chip))
    assert p.regime == "command-bound"
    assert p.time_per_iter_ns == pytest.approx(5 * 30.0 / 16)


def test_dma_overlapping_the_computation_delays_it_on_the_port() -> None:
    chip = ChipTerms(port_ns_per_byte=1 / 3.2 / 128, port_uses_per_iter=4, cycle_ns=1 / 3.2)
    busy, idle = chip.port_stall_ns(0.5, 24), chip.port_stall_ns(8.0, 24)
    assert busy == pytest.approx(24 / 128 / 3.2)  # the computation wants the port every cycle
    assert idle == pytest.approx(busy * 4 / (8.0 * 3.2))
    c = Constants(130.0, 0.088, chip=chip)
    assert predict(Costs(8.0, 0.0, 24), 2, 512, c).C_ns == pytest.approx(8.0 + idle)
    assert predict(Costs(8.0, 0.0, 24), 1, 512, c).C_ns == 8.0  # one buffer: no overlap


def test_the_model_with_the_chip_predicts_misaligned_blocks() -> None:
    """A DMA-bound loop of 4-byte streams with 416-byte blocks: three of four block boundaries
    are within a line, which the chip pays for whole (4 lines a block for 3.25 lines of bytes);
    the paper's bytes-only D is far too optimistic."""
    loop = Loop(4096, 0.2, 0.0, (4,), (4,))
    ns = steady_block_ns(loop, 3, 104, blocks=(12, 36)) / 104
    with_chip = planner_constants("qs20", (4,), (4,))
    bytes_only = Constants(with_chip.S_ns, with_chip.D1_ns_per_byte)
    chip = predict(loop.costs(3.2e9), 3, 104, with_chip).time_per_iter_ns
    paper = predict(loop.costs(3.2e9), 3, 104, bytes_only).time_per_iter_ns
    assert chip == pytest.approx(ns, rel=0.03)
    assert paper < 0.92 * ns
    assert abs(chip - ns) < abs(paper - ns) / 3


def test_the_plan_follows_the_machine() -> None:
    """A DMAC twice as slow per command makes small blocks of many streams worse: the planner
    asks for larger ones."""
    loop = Loop(4096, 0.3, 20.0, (8, 8, 8), (8, 8))
    fast = plan_loop(loop, 8 * 1024)
    slow = plan_loop(loop, 8 * 1024, machine=MachineSpec.of("qs20", ["mfc.command_cycles=400"]))
    assert slow.constants.chip.command_ns > fast.constants.chip.command_ns
    assert slow.chosen.bf > fast.chosen.bf or slow.chosen.k > fast.chosen.k


def test_the_plan_prefers_whole_lines_where_they_are_faster() -> None:
    """DMA-bound: a block factor whose blocks end within lines costs more than the whole-line one below."""
    c = Constants(130.0, 0.088, chip=ChipTerms(line_bytes=128, streams=(4, 4)))
    p = plan(Costs(0.2, 0.0, 8), 3 * 8 * 200, c, granularity=4)
    assert p.chosen.bf % 32 == 0
    best = max(a.at_max.throughput_mbs for a in p.alternatives if a.at_max)
    assert p.chosen.throughput_mbs >= (1 - p.tolerance) * best
    assert p.best_throughput_mbs == best
