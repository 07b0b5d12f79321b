"""PPE programs and the libspe2 API, end to end: contexts, pthreads, mailboxes
both ways, signals, proxy DMAs, PPE loads, stores and reservations, gangs,
and the errors of each.

A PPE program is ``Machine.run(main)``; SPE programs started from it begin
``ppe.context_run_ns`` (5 us) after ``spe_context_run``. Times are read from
the simulator's clock (``Machine.cycles``) inside the programs.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from cellsim import DeadlockError, Machine, MfcError, NotInProgramError, UsageError, ppe, spu
from cellsim.kernels import Kernel
from cellsim.ppe import (
    SPE_AFFINITY_MEMORY,
    SPE_CFG_SIGNOTIFY1_OR,
    SPE_CFG_SIGNOTIFY2_OR,
    SPE_MBOX_ALL_BLOCKING,
    SPE_MBOX_ANY_BLOCKING,
    SPE_MBOX_ANY_NONBLOCKING,
    SPE_SIG_NOTIFY_REG_1,
    SPE_SIG_NOTIFY_REG_2,
    SPE_TAG_ALL,
    SPE_TAG_ANY,
    SPE_TAG_IMMEDIATE,
    SpeContext,
    StopInfo,
    pthread_create,
    pthread_join,
    spe_context_create,
    spe_context_destroy,
    spe_context_run,
    spe_gang_context_create,
    spe_in_mbox_status,
    spe_in_mbox_write,
    spe_ls_area_get,
    spe_mfcio_get,
    spe_mfcio_put,
    spe_mfcio_tag_status_read,
    spe_out_intr_mbox_read,
    spe_out_intr_mbox_status,
    spe_out_mbox_read,
    spe_out_mbox_status,
    spe_out_mbox_wait,  # not in ppe.__all__ (a convenience, not libspe2)
    spe_program_load,
    spe_ps_area_get,
    spe_signal_write,
)

SPU_IN_MBOX = 0x400C
SIG_NOTIFY_1 = 0x1400C


def start(program, **kw) -> tuple[SpeContext, object]:
    """Creates a context, loads ``program`` and runs it in a new PPE thread."""
    ctx = spe_context_create(kw.pop("flags", 0))
    spe_program_load(ctx, program)
    return ctx, pthread_create(spe_context_run, ctx, **kw)


def wait_tags(mask: int) -> int:
    spu.mfc_write_tag_mask(mask)
    return spu.mfc_read_tag_status_all()


# -- contexts and threads -----------------------------------------------------------


def test_spe_context_run_returns_the_exit_code(m: Machine) -> None:
    """StopInfo carries the SPE program's return value; a context can be run again."""

    def prog(speid: int, argp: int, envp: int) -> int:
        return argp * 10 + envp

    def main() -> tuple[StopInfo, StopInfo]:
        ctx = spe_context_create()
        spe_program_load(ctx, prog)
        first = spe_context_run(ctx, argp=4, envp=2)
        second = spe_context_run(ctx, argp=7, envp=0)
        spe_context_destroy(ctx)
        return first, second

    first, second = m.run(main).value
    assert first == StopInfo("exit", 42)
    assert second.exit_code == 70


def test_eight_contexts_run_concurrently_in_pthreads(m: Machine) -> None:
    """Eight contexts on eight SPEs, one PPE thread each; each program starts
    context_run_ns after its spe_context_run and they overlap in time."""
    spans: dict[int, tuple[int, int]] = {}

    def prog(speid: int, argp: int, envp: int) -> int:
        t0 = m.cycles
        spu.compute(10_000)
        spans[speid] = (t0, m.cycles)
        return speid + 100

    def main() -> list[int]:
        threads = [start(prog)[1] for _ in range(8)]
        return [pthread_join(t).exit_code for t in threads]

    r = m.run(main)
    assert r.value == [100 + s for s in range(8)]
    delay = m.context_run_cycles
    assert delay == m.ns_to_cycles(5000)
    assert all(t0 == delay for t0, _ in spans.values()), spans
    assert r.cycles == delay + 10_000, "the eight programs ran at the same time"
    assert sorted(p.spe for p in r.programs if p.spe is not None) == list(range(8))


def test_pthread_join_returns_the_thread_value_and_can_repeat(m: Machine) -> None:
    def main() -> tuple[object, object]:
        t = pthread_create(lambda a, b=0: (a, b), 1, b=2)
        return pthread_join(t), pthread_join(t)

    assert m.run(main).value == ((1, 2), (1, 2))


def test_a_native_kernel_runs_in_a_context(m: Machine) -> None:
    buf = m.alloc(4096)

    def main() -> int:
        ctx = spe_context_create()
        spe_program_load(ctx, Kernel("dma_bench", put=False, ea=int(buf), size=128, batch=1, count=4))
        return spe_context_run(ctx).exit_code

    ticks = m.run(main).value
    assert 4 <= ticks <= 20, "four blocking 128-byte gets take a few 40 ns decrementer ticks"


@pytest.mark.parametrize(("machine", "spes"), [("qs20", 16), ("qs20-1chip", 8), ("ps3", 6)])
def test_running_out_of_spes_names_the_count(machine: str, spes: int) -> None:
    def main() -> None:
        for _ in range(spes + 1):
            spe_context_create()

    with pytest.raises(UsageError, match=f"has {spes} SPEs") as e:
        Machine(machine).run(main)
    assert any("PPE thread" in n for n in getattr(e.value, "__notes__", []))


def test_running_a_context_without_a_program(m: Machine) -> None:
    with pytest.raises(UsageError, match="no program loaded"):
        m.run(lambda: spe_context_run(spe_context_create()))


def test_running_a_destroyed_context(m: Machine) -> None:
    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: 0)
        spe_context_destroy(ctx)
        spe_context_run(ctx)

    with pytest.raises(UsageError, match="destroyed"):
        m.run(main)


def test_running_one_context_in_two_threads_at_once(m: Machine) -> None:
    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: spu.compute(1000))
        a = pthread_create(spe_context_run, ctx)
        b = pthread_create(spe_context_run, ctx)
        pthread_join(a)
        pthread_join(b)

    with pytest.raises(UsageError, match="already running"):
        m.run(main)


@pytest.mark.parametrize("which", ["argp", "envp"])
@pytest.mark.parametrize("bad", [2**40, Machine.ls_ea(0) - 16, Machine.ls_ea(8)])  # m: 8 SPEs
def test_pointers_outside_memory_are_rejected(m: Machine, which: str, bad: int) -> None:
    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: 0)
        spe_context_run(ctx, **{which: bad})

    with pytest.raises(UsageError, match=f"{which} 0x{bad:x} is outside main memory"):
        m.run(main)


def test_pointers_into_memory_and_local_stores_are_accepted(m: Machine) -> None:
    ea = m.alloc(128)

    def main() -> list[int]:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: 0)
        return [
            spe_context_run(ctx, argp=ea, envp=Machine.ls_ea(7) + 0x3FFF0).exit_code,
            spe_context_run(ctx, argp=5, envp=spe_ps_area_get(ctx) + SPU_IN_MBOX).exit_code,
        ]

    assert m.run(main).value == [0, 0]


def test_an_exception_in_a_ppe_thread_propagates_with_a_note(m: Machine) -> None:
    def worker() -> None:
        ppe.compute(100)
        raise KeyError("boom")

    def main() -> None:
        pthread_join(pthread_create(worker))

    with pytest.raises(KeyError, match="boom") as e:
        m.run(main)
    assert any("PPE thread 1" in n for n in e.value.__notes__)
    assert any(entry.name == "worker" for entry in e.traceback), "the traceback shows the thread's line"


def test_an_exception_in_an_spe_program_started_by_the_ppe_names_the_spe(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> None:
        raise ValueError("bad block")

    def main() -> None:
        for _ in range(3):
            spe_context_create()
        _, t = start(prog)
        pthread_join(t)

    with pytest.raises(ValueError, match="bad block") as e:
        m.run(main)
    assert any("SPE 3" in n for n in e.value.__notes__)


# -- calling the wrong side -----------------------------------------------------------


def test_an_spu_call_from_a_ppe_program(m: Machine) -> None:
    with pytest.raises(NotInProgramError, match="mfc_get must be called from an SPE program"):
        m.run(lambda: spu.mfc_get(0x4000, 0, 16, 0))


def test_a_ppe_call_from_an_spe_program(m: Machine) -> None:
    m.load(0, lambda speid, argp, envp: ppe.load(0))
    with pytest.raises(NotInProgramError, match="load must be called from a PPE program") as e:
        m.run()
    assert any("SPE 0" in n for n in e.value.__notes__)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ppe.store(0, 1),
        lambda: spe_context_create(),
        lambda: pthread_create(print),
        lambda: spu.spu_read_in_mbox(),
        lambda: spu.compute(10),
    ],
)
def test_calls_outside_any_program(call) -> None:
    with pytest.raises(NotInProgramError):
        call()


# -- gangs and placement --------------------------------------------------------------


def test_a_memory_affinity_gang_places_spes_on_the_affinity_chain() -> None:
    """SPE_AFFINITY_MEMORY puts logical SPE i on the i-th SPE of the QS20
    affinity chain 0, 2, 4, 6, 7, 5, 3, 1 (architecture notes), whatever the
    seed; on the two-chip blade chip 1's chain follows chip 0's."""
    chain = [0, 2, 4, 6, 7, 5, 3, 1]
    for machine, want in (("qs20-1chip", chain), ("qs20", chain + [8 + p for p in chain])):
        for seed in (0, 3):
            m = Machine(machine, seed=seed)
            before = m.placement

            def main(m: Machine = m) -> list[int]:
                spe_gang_context_create(SPE_AFFINITY_MEMORY)
                return m.placement

            assert m.run(main).value == want
            assert m.placement == want
            assert before != m.placement, f"seed {seed}'s random placement was not the chain already"


def test_a_gang_without_affinity_keeps_the_placement() -> None:
    m = Machine("qs20", seed=3)
    before = m.placement
    m.run(lambda: spe_gang_context_create(0))
    assert m.placement == before


def test_affinity_after_an_spe_ran_is_an_error(m: Machine) -> None:
    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: 0)
        spe_context_run(ctx)
        spe_gang_context_create(SPE_AFFINITY_MEMORY)

    with pytest.raises(UsageError, match="placement can only change before"):
        m.run(main)


def test_the_gang_placement_is_what_the_programs_see() -> None:
    m = Machine("qs20", seed=5)
    seen: dict[int, int] = {}

    def main() -> None:
        gang = spe_gang_context_create(SPE_AFFINITY_MEMORY)
        threads = []
        for _ in range(8):
            ctx = spe_context_create(0, gang)
            spe_program_load(ctx, lambda speid, argp, envp: 0)
            threads.append(pthread_create(spe_context_run, ctx))
        for t in threads:
            pthread_join(t)

    r = m.run(main)
    seen = {p.spe: p.physical for p in r.programs if p.spe is not None}
    assert seen == dict(enumerate([0, 2, 4, 6, 7, 5, 3, 1]))


# -- mailboxes ------------------------------------------------------------------------


def test_ppe_and_spe_exchange_messages(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> int:
        total = 0
        for _ in range(10):
            v = spu.spu_read_in_mbox()
            total += v
            spu.spu_write_out_mbox(v * 2)
        return total

    def main() -> tuple[int, int]:
        ctx, t = start(prog)
        got = 0
        for i in range(1, 11):
            assert spe_in_mbox_write(ctx, [i]) == 1
            got += spe_out_mbox_wait(ctx)
        return got, pthread_join(t).exit_code

    assert m.run(main).value == (110, 55)


def test_the_inbound_mailbox_holds_four_messages(m: Machine) -> None:
    """Non-blocking writes fill the 4 entries and stop; the SPU sees them in
    order; a blocking write then waits until the SPU reads."""
    log: dict[str, object] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        spu.compute(20_000)  # the PPE writes meanwhile
        log["count"] = spu.spu_stat_in_mbox()
        log["read_at"] = m.cycles
        log["first"] = [spu.spu_read_in_mbox() for _ in range(4)]
        log["count_after"] = spu.spu_stat_in_mbox()
        log["then"] = [spu.spu_read_in_mbox() for _ in range(3)]

    def main() -> None:
        ctx, t = start(prog)
        log["free0"] = spe_in_mbox_status(ctx)
        log["nonblocking"] = spe_in_mbox_write(ctx, [1, 2, 3, 4, 5, 6], SPE_MBOX_ANY_NONBLOCKING)
        ppe.compute(2000)  # the four writes have landed
        log["free1"] = spe_in_mbox_status(ctx)
        log["full"] = spe_in_mbox_write(ctx, [7], SPE_MBOX_ANY_NONBLOCKING)
        log["any_blocking"] = spe_in_mbox_write(ctx, [8], SPE_MBOX_ANY_BLOCKING)
        log["unblocked_at"] = m.cycles
        log["all_blocking"] = spe_in_mbox_write(ctx, [9, 10], SPE_MBOX_ALL_BLOCKING)
        pthread_join(t)

    m.run(main)
    assert log["free0"] == 4 and log["nonblocking"] == 4
    assert log["free1"] == 0 and log["full"] == 0
    assert log["count"] == 4 and log["first"] == [1, 2, 3, 4]
    assert log["any_blocking"] == 1 and log["all_blocking"] == 2
    assert log["unblocked_at"] >= log["read_at"], "the blocking write waited for the SPU to read"
    assert log["then"] == [8, 9, 10]


def test_any_blocking_waits_for_the_first_message_only(m: Machine) -> None:
    """SPE_MBOX_ANY_BLOCKING: waits for room for the first message, then writes what fits."""
    log: dict[str, object] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        spu.compute(10_000)
        spu.spu_read_in_mbox()  # one entry frees
        spu.compute(10_000)
        log["got"] = [spu.spu_read_in_mbox() for _ in range(4)]

    def main() -> None:
        ctx, t = start(prog)
        ppe.compute(100)  # start the SPE program first, so the inbound mailbox is what is tested
        spe_in_mbox_write(ctx, [1, 2, 3, 4])
        log["written"] = spe_in_mbox_write(ctx, [5, 6, 7], SPE_MBOX_ANY_BLOCKING)
        pthread_join(t)

    m.run(main)
    assert log["written"] == 1
    assert log["got"] == [2, 3, 4, 5]


def test_the_outbound_mailbox_holds_one_message(m: Machine) -> None:
    log: dict[str, object] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        log["stat0"] = spu.spu_stat_out_mbox()
        spu.spu_write_out_mbox(11)
        log["stat1"] = spu.spu_stat_out_mbox()
        t0 = m.cycles
        spu.spu_write_out_mbox(12)  # blocks until the PPE reads 11
        log["blocked"] = m.cycles - t0

    def main() -> None:
        ctx, t = start(prog)
        log["early"] = spe_out_mbox_read(ctx)  # libspe2's read never blocks
        log["status_early"] = spe_out_mbox_status(ctx)
        ppe.compute(m.ns_to_cycles(10_000))
        log["status"] = spe_out_mbox_status(ctx)
        log["first"] = spe_out_mbox_read(ctx)
        log["second"] = spe_out_mbox_wait(ctx)
        log["empty"] = spe_out_mbox_read(ctx)
        pthread_join(t)

    m.run(main)
    assert log["early"] == [] and log["status_early"] == 0
    assert log["stat0"] == 1 and log["stat1"] == 0
    assert log["status"] == 1
    assert log["first"] == [11] and log["second"] == 12 and log["empty"] == []
    assert log["blocked"] > m.ns_to_cycles(4000), "the SPU waited until the PPE read"


def test_the_outbound_interrupt_mailbox(m: Machine) -> None:
    """The interrupt mailbox is separate from the plain one; the PPE's read blocks by default."""
    log: dict[str, object] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        log["stat0"] = spu.spu_stat_out_intr_mbox()
        spu.spu_write_out_intr_mbox(21)
        log["stat1"] = spu.spu_stat_out_intr_mbox()
        log["plain_free"] = spu.spu_stat_out_mbox()
        spu.compute(5000)
        spu.spu_write_out_intr_mbox(22)
        spu.spu_write_out_mbox(23)

    def main() -> None:
        ctx, t = start(prog)
        log["nb_empty"] = spe_out_intr_mbox_read(ctx, 1, SPE_MBOX_ANY_NONBLOCKING)
        ppe.compute(m.ns_to_cycles(5500))
        log["status_full"] = spe_out_intr_mbox_status(ctx)
        log["first"] = spe_out_intr_mbox_read(ctx)
        log["status_after"] = spe_out_intr_mbox_status(ctx)
        log["second"] = spe_out_intr_mbox_read(ctx, 1, SPE_MBOX_ALL_BLOCKING)  # waits for the SPU
        log["second_at"] = m.cycles
        log["plain"] = spe_out_mbox_wait(ctx)
        log["intr_status_end"] = spe_out_intr_mbox_status(ctx)
        pthread_join(t)

    m.run(main)
    assert log["nb_empty"] == []
    assert log["stat0"] == 1 and log["stat1"] == 0 and log["plain_free"] == 1
    assert log["status_full"] == 1 and log["first"] == [21] and log["status_after"] == 0
    assert log["second"] == [22] and log["second_at"] > m.context_run_cycles + 5000
    assert log["plain"] == 23 and log["intr_status_end"] == 0


def test_an_spe_writes_another_spes_inbound_mailbox_by_dma(m: Machine) -> None:
    """A 4-byte put to the other SPE's problem-state area + 0x400C is a mailbox write."""

    def receiver(speid: int, argp: int, envp: int) -> int:
        return sum(spu.spu_read_in_mbox() for _ in range(3))

    def sender(speid: int, argp: int, envp: int) -> None:
        word = spu.ls_alloc(16, align=16)
        for v in (5, 6, 7):
            word.array(">u4")[3] = v
            spu.mfc_put(int(word) + 12, argp, 4, 0)
            wait_tags(1)

    def main() -> int:
        rx, t = start(receiver)
        _, s = start(sender, argp=spe_ps_area_get(rx) + SPU_IN_MBOX)
        pthread_join(s)
        return pthread_join(t).exit_code

    assert m.run(main).value == 18


def test_problem_state_registers_are_accessed_four_bytes_at_a_time(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> None:
        spu.mfc_put(0x4000, argp, 16, 0)

    def main() -> None:
        rx = spe_context_create()
        start(prog, argp=spe_ps_area_get(rx) + 0x4000)

    with pytest.raises(MfcError) as e:
        m.run(main)
    assert e.value.kind in ("size", "unmapped")


# -- signals --------------------------------------------------------------------------


def signal_reads(m: Machine, flags: int, writes: list[tuple[int, int]]) -> dict[str, object]:
    """The PPE writes ``writes`` ((register, value)) before the SPU looks; the
    SPU then reads both registers."""
    log: dict[str, object] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        spu.compute(5000)
        log["stat"] = (spu.spu_stat_signal1(), spu.spu_stat_signal2())
        log["values"] = (spu.spu_read_signal1(), spu.spu_read_signal2())
        log["stat_after"] = (spu.spu_stat_signal1(), spu.spu_stat_signal2())

    def main() -> None:
        ctx, t = start(prog, flags=flags)
        ppe.compute(m.ns_to_cycles(5000))  # the program is running, not yet reading
        for reg, v in writes:
            spe_signal_write(ctx, reg, v)
        pthread_join(t)

    m.run(main)
    return log


WRITES = [(SPE_SIG_NOTIFY_REG_1, 0x1), (SPE_SIG_NOTIFY_REG_1, 0x4), (SPE_SIG_NOTIFY_REG_2, 0x10)]
WRITES += [(SPE_SIG_NOTIFY_REG_2, 0x20), (SPE_SIG_NOTIFY_REG_1, 0x100)]


@pytest.mark.parametrize(
    ("flags", "expect"),
    [
        (0, (0x100, 0x20)),
        (SPE_CFG_SIGNOTIFY1_OR, (0x105, 0x20)),
        (SPE_CFG_SIGNOTIFY2_OR, (0x100, 0x30)),
        (SPE_CFG_SIGNOTIFY1_OR | SPE_CFG_SIGNOTIFY2_OR, (0x105, 0x30)),
    ],
    ids=["overwrite", "or1", "or2", "or-both"],
)
def test_signal_registers_overwrite_or_or(m: Machine, flags: int, expect: tuple[int, int]) -> None:
    log = signal_reads(m, flags, WRITES)
    assert log["stat"] == (1, 1)
    assert log["values"] == expect
    assert log["stat_after"] == (0, 0), "reading a signal register clears it"


def test_reading_a_signal_waits_for_one(m: Machine) -> None:
    got: dict[str, int] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        got["value"] = spu.spu_read_signal2()
        got["at"] = m.cycles

    def main() -> None:
        ctx, t = start(prog)
        ppe.compute(m.ns_to_cycles(8000))
        got["sent"] = m.cycles
        spe_signal_write(ctx, SPE_SIG_NOTIFY_REG_2, 0xCAFE)
        pthread_join(t)

    m.run(main)
    assert got["value"] == 0xCAFE and got["at"] > got["sent"]


def test_a_bad_signal_register_number(m: Machine) -> None:
    with pytest.raises(UsageError, match="signal register 3"):
        m.run(lambda: spe_signal_write(spe_context_create(), 3, 1))


def test_spes_signal_each_other_in_or_mode(m: Machine) -> None:
    """mfc_sndsig from 7 SPEs into SPE 0's OR-mode register 1 gathers every bit."""

    def gather(speid: int, argp: int, envp: int) -> int:
        seen = 0
        while seen != 0xFE:
            seen |= spu.spu_read_signal1()
        return seen

    def send(speid: int, argp: int, envp: int) -> None:
        w = spu.ls_alloc(16, align=16)
        w.array(">u4")[3] = 1 << speid
        spu.compute(50 * speid)
        spu.mfc_sndsig(int(w) + 12, argp, 2)
        wait_tags(1 << 2)

    def main() -> int:
        ctx, t = start(gather, flags=SPE_CFG_SIGNOTIFY1_OR)
        senders = [start(send, argp=spe_ps_area_get(ctx) + SIG_NOTIFY_1)[1] for _ in range(7)]
        for s in senders:
            pthread_join(s)
        return pthread_join(t).exit_code

    assert m.run(main).value == 0xFE


def test_sndsig_to_a_mailbox_register_is_rejected(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> None:
        spu.mfc_sndsig(0x400C, argp, 0)

    def main() -> None:
        start(prog, argp=spe_ps_area_get(spe_context_create()) + SPU_IN_MBOX)

    with pytest.raises(MfcError, match="not a signal-notification register") as e:
        m.run(main)
    assert e.value.kind == "unmapped"


# -- proxy DMAs -----------------------------------------------------------------------


@pytest.mark.parametrize(("size", "off"), [(16384, 0), (1024, 128), (48, 16), (4, 4), (1, 3)])
def test_proxy_dmas_move_exactly_their_bytes(m: Machine, size: int, off: int) -> None:
    src, dst = m.alloc(32768), m.alloc(32768)
    src.array()[:] = np.random.default_rng(size).integers(0, 256, 32768, dtype=np.uint8)
    lsa = 0x8000 + off

    def main() -> tuple[int, int, int]:
        ctx = spe_context_create()
        spe_mfcio_get(ctx, lsa, int(src) + off, size, 3)
        before = spe_mfcio_tag_status_read(ctx, 1 << 3, SPE_TAG_IMMEDIATE)
        done = spe_mfcio_tag_status_read(ctx, 1 << 3, SPE_TAG_ALL)
        spe_mfcio_put(ctx, lsa, int(dst) + off, size, 4)
        return before, done, spe_mfcio_tag_status_read(ctx, 1 << 4, SPE_TAG_ALL)

    before, done, put_done = m.run(main).value
    assert before == 0 and done == 1 << 3 and put_done == 1 << 4
    ls = m.local_store(0)
    assert np.array_equal(ls[lsa : lsa + size], src.array()[off : off + size])
    assert not ls[lsa - 1] and not ls[lsa + size], "nothing around the transfer was written"
    d = dst.array()
    assert np.array_equal(d[off : off + size], src.array()[off : off + size])
    assert not d[:off].any() and not d[off + size :].any()


def test_proxy_tag_status_any_and_more_commands_than_the_proxy_queue(m: Machine) -> None:
    """'any' returns the first tag done; 12 commands through the 8-entry proxy queue all complete."""
    big, small = m.alloc(16384), m.alloc(16384)
    small.array()[:] = 9

    def main() -> tuple[int, int]:
        ctx = spe_context_create()
        spe_mfcio_get(ctx, 0x8000, big, 16384, 1)
        spe_mfcio_put(ctx, 0x20000, int(big) + 16384 - 128, 128, 2)
        first = spe_mfcio_tag_status_read(ctx, 0b110, SPE_TAG_ANY)
        for i in range(12):
            spe_mfcio_get(ctx, 0x10000 + 1024 * i, int(small) + 1024 * i, 1024, 5)
        return first, spe_mfcio_tag_status_read(ctx, 1 << 5 | 0b110, SPE_TAG_ALL)

    first, allof = m.run(main).value
    assert first == 0b100, "the small put finished first"
    assert allof == 1 << 5 | 0b110
    assert (m.local_store(0)[0x10000 : 0x10000 + 12 * 1024] == 9).all()


def test_proxy_tag_status_with_a_bad_behaviour(m: Machine) -> None:
    with pytest.raises(UsageError, match="behavior 9"):
        m.run(lambda: spe_mfcio_tag_status_read(spe_context_create(), 1, 9))


def test_a_bad_proxy_dma_is_an_mfc_error(m: Machine) -> None:
    ea = m.alloc(256)
    with pytest.raises(MfcError, match="16-byte aligned") as e:
        m.run(lambda: spe_mfcio_get(spe_context_create(), 0x8004, ea, 128, 3))
    assert e.value.kind == "alignment"
    assert "mfc_get" in e.value.command


def test_a_proxy_dma_moves_data_an_spe_program_uses(m: Machine) -> None:
    src = m.alloc(1024)
    src.array()[:] = 9

    def prog(speid: int, argp: int, envp: int) -> int:
        spu.spu_read_in_mbox()  # the PPE says the data is there
        return int(spu.spu_ls()[0x8000 + 1023])

    def main() -> int:
        ctx, t = start(prog)
        spe_mfcio_get(ctx, 0x8000, src, 1024, 4)
        spe_mfcio_tag_status_read(ctx, 1 << 4, SPE_TAG_ALL)
        spe_in_mbox_write(ctx, [1])
        return pthread_join(t).exit_code

    assert m.run(main).value == 9


# -- PPE loads, stores and reservations -------------------------------------------------


def test_ppe_loads_and_stores_are_big_endian(m: Machine) -> None:
    ea = m.alloc(128)

    def main() -> list[int]:
        ppe.store(ea, 0x01020304)
        ppe.store(int(ea) + 8, 0x1122334455667788, 8)
        ppe.store(int(ea) + 16, 0xABCD, 2)
        ppe.store(int(ea) + 18, 0xEF, 1)
        return [
            ppe.load(ea),
            ppe.load(ea, 2),
            ppe.load(int(ea) + 2, 2),
            ppe.load(ea, 8),
            ppe.load(int(ea) + 8, 8),
            ppe.load(int(ea) + 16, 4),
        ]

    got = m.run(main).value
    assert got == [0x01020304, 0x0102, 0x0304, 0x0102030400000000, 0x1122334455667788, 0xABCDEF00]
    assert list(ea.array()[:4]) == [1, 2, 3, 4]


def test_ppe_stores_keep_only_their_size(m: Machine) -> None:
    ea = m.alloc(16)

    def main() -> int:
        ppe.store(ea, 0x1FF, 1)
        return ppe.load(ea, 4)

    assert m.run(main).value == 0xFF000000


def test_a_ppe_load_or_store_of_a_bad_size_or_address(m: Machine) -> None:
    with pytest.raises(UsageError, match="not 3"):
        m.run(lambda: ppe.load(0, 3))
    with pytest.raises(UsageError, match="not mapped"):
        Machine("qs20").run(lambda: ppe.store(2**45, 1))


def test_ppe_reaches_a_local_store_through_the_mapping(m: Machine) -> None:
    """A PPE store into a local store is a bus request; the bytes land there, and a later load reads them."""

    def main() -> tuple[int, int]:
        ctx = spe_context_create()
        ls = spe_ls_area_get(ctx)
        t0 = m.cycles
        ppe.store(ls + 0x100, 0xDEADBEEF)
        ppe.compute(2000)  # the posted store has landed
        v = ppe.load(ls + 0x100)
        return v, m.cycles - t0

    v, cycles = m.run(main).value
    assert v == 0xDEADBEEF
    assert list(m.local_store(0)[0x100:0x104]) == [0xDE, 0xAD, 0xBE, 0xEF]
    assert cycles > 2000 + 100, "an uncached load crosses the EIB"


def test_a_ppe_load_sees_its_own_earlier_store_to_a_local_store(m: Machine) -> None:
    def main() -> int:
        ls = spe_ls_area_get(spe_context_create())
        ppe.store(ls + 0x100, 0xDEADBEEF)
        return ppe.load(ls + 0x100)

    assert m.run(main).value == 0xDEADBEEF


def test_lwarx_and_stwcx(m: Machine) -> None:
    ea = m.alloc(256)

    def main() -> list[object]:
        out: list[object] = [ppe.stwcx(ea, 5)]  # no reservation
        out.append(ppe.lwarx(ea))
        out.append(ppe.stwcx(ea, 5))  # holds
        out.append(ppe.stwcx(ea, 6))  # the reservation went with the last stwcx
        v = ppe.lwarx(int(ea) + 8, 8)
        out.append(ppe.stwcx(int(ea) + 8, v + 2**40, 8))
        ppe.lwarx(ea)
        ppe.lwarx(int(ea) + 128)  # a new reservation replaces the old one
        out.append(ppe.stwcx(ea, 7))
        return out

    assert m.run(main).value == [False, 0, True, False, True, False]
    assert int(ea.array(">u4")[0]) == 5
    assert int(ea.array(">u8")[1]) == 2**40


def test_reservations_are_on_main_memory_only(m: Machine) -> None:
    with pytest.raises(UsageError, match="main memory only"):
        m.run(lambda: ppe.lwarx(Machine.ls_ea(0)))
    with pytest.raises(UsageError, match="4 or 8 aligned bytes"):
        Machine("qs20").run(lambda: ppe.lwarx(2))


def test_an_spe_put_to_the_line_breaks_the_ppe_reservation(m: Machine) -> None:
    line = m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = spu.ls_alloc(16, align=16)
        spu.spu_read_in_mbox()
        spu.mfc_put(buf, argp + 96, 16, 0)  # another word of the same line
        wait_tags(1)
        spu.spu_write_out_mbox(1)

    def main() -> tuple[bool, bool]:
        ctx, t = start(prog, argp=line)
        ppe.lwarx(line)
        spe_in_mbox_write(ctx, [0])
        spe_out_mbox_wait(ctx)
        lost = ppe.stwcx(line, 1)
        ppe.lwarx(line)
        kept = ppe.stwcx(line, 2)
        pthread_join(t)
        return lost, kept

    assert m.run(main).value == (False, True)


def test_a_ppe_store_to_the_line_breaks_the_spe_reservation(m: Machine) -> None:
    line = m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> tuple[int, int]:
        buf = spu.ls_alloc(128, align=128)
        spu.mfc_getllar(buf, argp)
        first = spu.mfc_read_atomic_status()
        spu.spu_write_out_mbox(1)  # the PPE stores now
        spu.spu_read_in_mbox()
        spu.mfc_putllc(buf, argp)
        return first << 8 | spu.mfc_read_atomic_status()

    def main() -> int:
        ctx, t = start(prog, argp=line)
        spe_out_mbox_wait(ctx)
        ppe.store(int(line) + 120, 42)
        spe_in_mbox_write(ctx, [0])
        return pthread_join(t).exit_code

    code = m.run(main).value
    assert code >> 8 == spu.MFC_GETLLAR_STATUS
    assert code & 0xFF == spu.MFC_PUTLLC_STATUS, "the putllc failed"
    assert int(line.array(">u4")[30]) == 42, "and did not overwrite the PPE's store"


# -- engine bugs found by these tests -----------------------------------------------------


def test_two_ppe_threads_waiting_on_one_outbound_mailbox(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> None:
        spu.compute(1000)
        spu.spu_write_out_mbox(1)
        spu.spu_write_out_mbox(2)

    def main() -> list[int]:
        ctx, t = start(prog)
        a = pthread_create(spe_out_mbox_wait, ctx)
        b = pthread_create(spe_out_mbox_wait, ctx)
        got = sorted([pthread_join(a), pthread_join(b)])
        pthread_join(t)
        return got

    assert m.run(main).value == [1, 2]


def test_a_blocking_ppe_write_never_overwrites_when_an_spe_also_writes(m: Machine) -> None:
    """The PPE posts 3 messages; SPE 1's message lands before them; the PPE's
    4th (blocking) write must wait for room: all 5 messages reach SPE 0."""
    got: list[int] = []

    def reader(speid: int, argp: int, envp: int) -> None:
        spu.compute(5000)
        got.extend(spu.spu_read_in_mbox() for _ in range(5))

    def writer(speid: int, argp: int, envp: int) -> None:
        w = spu.ls_alloc(16, align=16)
        w.array(">u4")[3] = 99
        spu.mfc_put(int(w) + 12, Machine.ls_ea(0) + 0x40000 + SPU_IN_MBOX, 4, 0)  # SPE 0's SPU_In_Mbox

    def main() -> None:
        ctx = SpeContext(0)
        ppe.compute(300)
        spe_in_mbox_write(ctx, [1, 2, 3])  # posted (1 cycle each): in flight until about cycle 680
        ppe.compute(130)  # SPE 1's message landed at about cycle 420
        spe_in_mbox_write(ctx, [4], SPE_MBOX_ALL_BLOCKING)  # 1 landed + 3 in flight: must wait

    m.load(0, reader)
    m.load(1, writer)
    with contextlib.suppress(DeadlockError):  # SPE 0 waits for its 5th message, which was overwritten
        m.run(main)
    assert got[:1] == [99], "the race this test is about: SPE 1's message lands first"
    assert sorted(got) == [1, 2, 3, 4, 99]


def test_a_message_written_before_spe_context_run_is_delivered(m: Machine) -> None:
    def main() -> int:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: spu.spu_read_in_mbox())
        spe_in_mbox_write(ctx, [42])
        ppe.compute(1000)
        return spe_context_run(ctx).exit_code

    assert m.run(main).value == 42


def test_blocking_writes_racing_spe_context_run_are_not_lost(m: Machine) -> None:
    def main() -> int:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: sum(spu.spu_read_in_mbox() for _ in range(5)))
        t = pthread_create(spe_context_run, ctx)  # runs when this thread first waits
        spe_in_mbox_write(ctx, [1, 2, 3, 4, 5])  # the fifth must wait for the SPU to read
        return pthread_join(t).exit_code

    try:
        assert m.run(main).value == 15
    except DeadlockError as e:
        pytest.fail(f"a message was lost: {e}")
