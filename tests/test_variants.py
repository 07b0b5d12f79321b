"""The model's variants: each mechanism isolated (on, it changes what it claims to change and
nothing else; off, it costs nothing), its state in the fast-forward's shape (the exact
reference agrees with it on), and every variant of every machine documented as data."""

from __future__ import annotations

import pytest

import cellsim
from cellsim import published as pub
from cellsim.experiments._common import dma_point, load_dma_bench
from cellsim.spec import MachineSpec

OFF = ("eib.put_flow=none", "biu.put_flow=none")
"""Neither put flow control: the ideal ports (the default has receiver credits)."""
PUT_CREDITS = ("eib.put_flow=credits", "eib.put_credits=2")
PUT_LINES = ("eib.put_flow=none", "biu.put_flow=lines", "biu.put_lines=3")
TURNS = ("mfc.unroll=turns", "mfc.unroll_turns=4")


def _gbs(op: str, overrides: tuple[str, ...], target: str = "ls") -> float:
    spec = MachineSpec.of("qs20-1chip", overrides)
    p = dma_point(spec, 1, True, op=op, target=target, size=16384, batch=0, count=64)
    return float(p["bandwidth_gbs"])


@pytest.mark.parametrize("overrides", [PUT_CREDITS, PUT_LINES], ids=["credits", "lines"])
def test_a_put_flow_control_slows_puts_and_leaves_gets_alone(overrides: tuple[str, ...]) -> None:
    """With two or three buffers a nonblocking stream of puts cannot keep the port busy
    (a buffer's round trip is longer than three transfers); gets need none."""
    assert _gbs("put", overrides) < 0.8 * _gbs("put", OFF)
    assert _gbs("get", overrides) == _gbs("get", OFF)


def test_receiver_credits_are_per_receiver_and_outbound_lines_per_sender() -> None:
    """Memory puts go to the MIC's own write buffers, not to a local store's credits; the
    outbound lines hold every put of their element, to memory too."""
    assert _gbs("put", PUT_CREDITS, "memory") == _gbs("put", OFF, "memory")
    assert _gbs("put", PUT_LINES, "memory") < 0.8 * _gbs("put", OFF, "memory")


def test_the_default_credits_cost_a_single_put_stream_a_few_percent() -> None:
    """Four credits round a loop a little longer than four transfers: one SPE's nonblocking
    16 KB puts to another local store lose a few percent of the port (8.6% in a long stream:
    23.4 GB/s; Kistler et al. 2006 Fig 5f: 25.6), its gets nothing."""
    assert 0.90 * _gbs("put", OFF) < _gbs("put", ()) < 0.97 * _gbs("put", OFF)
    assert _gbs("get", ()) == _gbs("get", OFF)


def _put_stream(overrides: tuple[str, ...], exact: bool) -> tuple[object, ...]:
    m = cellsim.Machine("qs20-1chip", seed=1, overrides=list(overrides), exact_reference=exact)
    load_dma_bench(m, 0, put=True, ea=m.ls_ea(1) + 0x20000, size=16384, batch=0, count=64, native=True)
    r = m.run()
    return r.cycles, r.stats, bytes(m.local_store(1)), m.fast_forward_stats["jumps"]


@pytest.mark.parametrize("overrides", [PUT_CREDITS, PUT_LINES], ids=["credits", "lines"])
def test_the_fast_forward_agrees_with_the_reference_with_the_variant_on(
    overrides: tuple[str, ...], pairwise
) -> None:
    assert pairwise(True, overrides)[:3] == pairwise(False, overrides)[:3]
    *exact, none = _put_stream(overrides, True)
    *fast, _ = _put_stream(overrides, False)
    assert exact == fast and none == 0


def test_a_credit_bound_put_stream_is_still_jumped_over() -> None:
    """The credits' free times are in the EIB's shape: a put stream that waits for them
    settles into a period the fast-forward finds."""
    assert _put_stream(PUT_CREDITS, False)[-1] > 0


def test_every_variant_is_documented_and_names_visible_statements() -> None:
    """Every choice of every shipped machine's variants is sourced or names visible published
    statements that exist (never a withheld one), and the machine's value is one of the choices."""
    visible = {e.id for e in pub.entries(held_out=False)}
    for name in cellsim.machines():
        spec = MachineSpec.of(name)
        assert spec.variants, name
        for v in spec.variants:
            assert v.value in {c.name for c in v.choices} and v.why
            for c in v.choices:
                assert c.status in ("sourced", "inferred") and c.what
                if c.status == "inferred":
                    assert c.explains and set(c.explains) <= visible, (name, v.name, c.name)
                else:
                    assert c.source, (name, v.name, c.name)


def test_dram_banks_cost_one_stream_little_and_many_interleaved_streams_much() -> None:
    """With open rows, one SPE's sequential gets mostly hit the rows it opened; eight SPEs'
    streams interleaved at the MIC keep closing each other's rows (the finding that rejected
    the variant: Kistler et al.'s memory hot spot falls far below its 25.6 GB/s)."""
    from cellsim.experiments import hotspot

    def agg(spes: int, overrides: list[str]) -> float:
        (r,) = hotspot.run(targets=["memory"], ops=["get"], spes=[spes], count=16, overrides=overrides)
        return float(r["aggregate_gbs"])

    banks = ["mic.dram=banks", "mic.row_miss_ns=20"]
    assert agg(1, banks) > 0.9 * agg(1, [])
    assert agg(8, banks) < 0.5 * agg(8, [])


def test_a_read_write_turnaround_slows_a_copy_and_not_a_stream_of_one_kind() -> None:
    from cellsim.experiments import spe_mem

    def gbs(op: str, overrides: list[str]) -> float:
        (r,) = spe_mem.run(ops=[op], spes=[1], sizes=[16384], mb_per_spe=1, overrides=overrides)
        return float(r["bandwidth_gbs"])

    gap = ["mic.turnaround=gap", "mic.turnaround_ns=5"]
    assert gbs("get", gap) == gbs("get", [])
    assert gbs("copy", gap) < 0.95 * gbs("copy", [])


def test_write_batches_spare_many_streams_the_turns_and_not_a_lone_copy() -> None:
    """Reads first, writes drained in batches: eight SPEs' copies turn the data bus once a
    batch (nearly the bandwidth they have without a turnaround); one SPE's copy leaves the bus
    idle often enough that its writes still drain one by one and turn it each time."""
    from cellsim.experiments import spe_mem

    def gbs(spes: int, overrides: list[str]) -> float:
        (r,) = spe_mem.run(ops=["copy"], spes=[spes], sizes=[16384], mb_per_spe=1, overrides=overrides)
        return float(r["bandwidth_gbs"])

    gap = ["mic.turnaround=gap", "mic.turnaround_ns=5"]
    batch = [*gap, "mic.write_drain=batch", "mic.drain_lines=8"]
    assert gbs(8, batch) > gbs(8, gap)
    assert gbs(1, batch) < 0.97 * gbs(1, [])


def test_the_fast_forward_agrees_with_the_reference_with_write_batches() -> None:
    """Held writes are in the MIC's shape: a put stream that saturates the data bus (its
    writes held and drained in batches) jumps to the bytes and cycles of the reference."""
    batch = ["mic.write_drain=batch", "mic.turnaround=gap", "mic.drain_lines=4"]

    def run(exact: bool) -> tuple[object, ...]:
        m = cellsim.Machine("qs20-1chip", seed=1, overrides=batch, exact_reference=exact)
        for spe in (0, 1):
            ea = int(m.alloc(1 << 20))
            load_dma_bench(m, spe, put=True, ea=ea, size=16384, batch=0, count=64, native=True)
        r = m.run()
        return r.cycles, r.stats, m.fast_forward_stats["jumps"]

    *exact, none = run(True)
    *fast, _ = run(False)
    assert exact == fast and none == 0


RETRY = ("eib.command_retry=target", "eib.target_queue=2", "eib.retry_backoff_bus_cycles=16")
GRANT_HOPS = ("eib.grant_delay=hops", "eib.grant_delay_bus_cycles=4")


def test_command_retries_slow_a_stream_to_a_busy_target_and_leave_memory_alone() -> None:
    """With two command slots per target, one SPE's nonblocking gets from another local store
    are retried (the slots are held through the command phase, far longer than two transfers);
    gets from memory never are (the MIC's queues are its windows)."""
    assert _gbs("get", RETRY) < 0.5 * _gbs("get", ())
    assert _gbs("get", RETRY, "memory") == _gbs("get", (), "memory")
    wide = ("eib.command_retry=target", "eib.target_queue=64")
    assert _gbs("get", wide) == _gbs("get", ()), "a queue that never fills costs nothing"


def test_a_grant_delay_by_hops_costs_far_pairs_more_than_near_ones() -> None:
    """The arbiter's decision per segment: a lone 128-byte get from a neighbour's local store
    waits less for it than one from across the ring; with the fixed decision both wait alike."""

    def latency(overrides: tuple[str, ...], partner: int) -> int:
        m = cellsim.Machine("qs20-1chip", seed=1, overrides=list(overrides), placement=range(8))
        load_dma_bench(
            m, 1, put=False, ea=m.ls_ea(partner) + 0x20000, size=128, batch=1, count=4, native=True
        )
        return m.run().cycles

    near, far = 3, 6  # on the ramps, SPE1 is one segment from SPE3 and six (halfway) from SPE6
    base = latency((), near), latency((), far)
    hops = latency(GRANT_HOPS, near) - base[0], latency(GRANT_HOPS, far) - base[1]
    assert 0 < hops[0] < hops[1]
    fixed = ("eib.grant_delay=fixed", "eib.grant_delay_bus_cycles=4")
    assert latency(fixed, near) - base[0] == latency(fixed, far) - base[1] > 0


def test_the_halfway_tie_break_moves_only_halfway_transfers() -> None:
    """Pairwise gets of physical SPE pairs one or three segments apart take no halfway path:
    the tie-break changes nothing; complement with physical numbering has halfway flows."""
    from cellsim.experiments import collective

    def agg(pattern: str, overrides: list[str]) -> float:
        (r,) = collective.run(
            patterns=[pattern], ops=["get"], numberings=["physical"], count=8, overrides=overrides
        )
        return float(r["aggregate_gbs"])

    assert agg("pairwise", ["eib.halfway=clockwise"]) == agg("pairwise", [])
    assert agg("complement", ["eib.halfway=clockwise"]) != agg("complement", [])


@pytest.mark.parametrize(
    "overrides",
    [
        RETRY,
        ("eib.command_retry=snoop", "eib.target_queue=4"),
        ("eib.command_retry=split", "eib.target_queue=2"),
        GRANT_HOPS,
        TURNS,
    ],
    ids=["retry", "snoop", "split", "grant_hops", "turns"],
)
def test_the_fast_forward_agrees_with_the_reference_with_retries_and_grant_delays(
    overrides: tuple[str, ...], pairwise
) -> None:
    """The targets' slots, the back-offs and the decisions in flight are in the shapes: the
    jump lands on the reference's cycles, stats and bytes."""
    assert pairwise(True, overrides)[:3] == pairwise(False, overrides)[:3]
    *exact, none = _put_stream(overrides, True)
    *fast, _ = _put_stream(overrides, False)
    assert exact == fast and none == 0


def test_a_snoop_queue_spares_a_paced_stream_and_retries_a_burst() -> None:
    """Slots held only through the command phase: one SPE's nonblocking gets from another local
    store, paced by the port, keep fewer commands in the phase than the queue holds after the
    first burst; the same depth held until the data has moved throttles the stream."""
    snoop = ("eib.command_retry=snoop", "eib.target_queue=12", "eib.retry_backoff_bus_cycles=16")
    target = ("eib.command_retry=target", "eib.target_queue=12", "eib.retry_backoff_bus_cycles=16")
    assert _gbs("get", snoop) == _gbs("get", ())
    assert _gbs("get", target) < 0.8 * _gbs("get", ())


def test_split_queues_spare_a_partner_that_reads_and_writes_one_local_store() -> None:
    """Jiménez-González et al. 2007's SPE-SPE loop (get+put pairs against one passive local
    store) keeps a read queue and a write queue half full each: with 12 slots a direction it runs
    as without retries, with one shared queue of 12 it is retried."""
    from cellsim.experiments import spe_spe

    def gbs(overrides: tuple[str, ...]) -> float:
        (r,) = spe_spe.run(sizes=[16384], waits=[0], mb=1, machine=MachineSpec.of("blade21", overrides))
        return float(r["bandwidth_gbs"])

    off = gbs(())
    assert gbs(("eib.command_retry=split", "eib.target_queue=12")) > 0.97 * off
    assert gbs(("eib.command_retry=target", "eib.target_queue=12")) < 0.6 * off


def test_turns_spread_one_spes_stream_over_both_chips_memories_only_across_pages() -> None:
    """On the blade (64 KB pages, 30% on the other chip's memory) sixteen 16 KB commands taking
    turns span four pages, so one SPE's gets reach both banks at once; sixteen 2 KB ones mostly
    stay in one page and change little. On one chip the turns move nothing of a memory stream."""
    from cellsim.experiments import spe_mem

    def gbs(size: int, overrides: tuple[str, ...]) -> float:
        spec = MachineSpec.of("blade21", overrides)
        (r,) = spe_mem.run(ops=["get"], spes=[1], sizes=[size], mb_per_spe=2, machine=spec)
        return float(r["bandwidth_gbs"])

    turns = ("mfc.unroll=turns", "mfc.unroll_turns=16")
    assert gbs(16384, turns) > 1.15 * gbs(16384, ())
    assert gbs(2048, turns) < 1.05 * gbs(2048, ())
    assert _gbs("get", turns, "memory") == pytest.approx(_gbs("get", (), "memory"), rel=0.01)


MIC_RETRY = ("mic.queue_full=retry", "mic.command_slots=4", "eib.retry_backoff_bus_cycles=16")


def test_a_full_memory_queue_retries_memory_commands_and_leaves_local_stores_alone() -> None:
    """With four slots at the MIC one SPE's nonblocking gets from memory are retried (its
    window alone holds five reads); gets from another local store never are (only the MIC's
    queue is finite), and a queue deeper than what one SPE keeps in flight costs it nothing."""
    assert _gbs("get", MIC_RETRY, "memory") < 0.9 * _gbs("get", (), "memory")
    assert _gbs("get", MIC_RETRY) == _gbs("get", ())
    wide = ("mic.queue_full=retry", "mic.command_slots=64")
    assert _gbs("get", wide, "memory") == _gbs("get", (), "memory")


def test_the_fast_forward_agrees_with_the_reference_with_memory_retries() -> None:
    """The MIC's held slots and the requesters' back-offs are in the shape: two SPEs' get
    streams from memory retried at a full MIC give the reference's cycles and statistics."""

    def run(exact: bool) -> tuple[object, ...]:
        m = cellsim.Machine("qs20-1chip", seed=1, overrides=list(MIC_RETRY), exact_reference=exact)
        for spe in (0, 1):
            ea = int(m.alloc(1 << 20))
            load_dma_bench(m, spe, put=False, ea=ea, size=16384, batch=0, count=64, native=True)
        r = m.run()
        return r.cycles, r.stats

    assert run(True) == run(False)


def test_a_failed_conditional_store_frees_its_memory_slot() -> None:
    """A lost reservation's putllc moves no data: with one slot at the MIC, the eight SPEs of
    examples/atomic_counter.py (most of their putllcs fail) land every increment; a slot a
    failed putllc kept would fill the queue and stall every SPE."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "atomic_counter.py"
    spec = importlib.util.spec_from_file_location("atomic_counter", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    m = cellsim.Machine("qs20-1chip", seed=1, overrides=["mic.queue_full=retry", "mic.command_slots=1"])
    out = m.run(example.ppe_main, m, 50).value
    assert out["count"] == 8 * 50 and sum(out["retries"]) > 0
