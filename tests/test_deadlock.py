"""Synchronisation misused: a run in which every program waits for something
that cannot happen ends with a DeadlockError naming who waits on what; a
channel read that could never complete, or a putllc that could never succeed,
is an MfcError at the call."""

from __future__ import annotations

import pytest

from cellsim import DeadlockError, Machine, MfcError, ppe, spu
from cellsim.ppe import (
    SPE_TAG_ALL,
    pthread_create,
    spe_context_create,
    spe_context_run,
    spe_in_mbox_write,
    spe_mfcio_get,
    spe_mfcio_tag_status_read,
    spe_out_intr_mbox_read,
    spe_out_mbox_wait,
    spe_program_load,
    spe_ps_area_get,
)

SPU_IN_MBOX = 0x400C


def deadlock(m: Machine, main=None) -> DeadlockError:
    with pytest.raises(DeadlockError) as e:
        m.run(main)
    err = e.value
    for who, call, since in err.blocked:
        assert who in str(err) and call in str(err), "the message lists every blocked program"
        assert since <= err.cycle
    return err


def blocked_as(err: DeadlockError) -> dict[str, str]:
    return {who: call for who, call, _ in err.blocked}


def test_reading_an_empty_inbound_mailbox_nobody_fills(m: Machine) -> None:
    m.load(3, lambda speid, argp, envp: spu.spu_read_in_mbox())
    m.load(5, lambda speid, argp, envp: spu.compute(1000))  # finishes normally
    err = deadlock(m)
    assert err.blocked == [("SPE 3 (physical 3)", "spu_read_in_mbox()", 0)]
    assert err.cycle == 1000, "reported when the last running program ended"
    assert "deadlock at cycle 1000" in str(err)


def test_writing_a_full_outbound_mailbox_nobody_drains(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> None:
        spu.spu_write_out_mbox(1)  # fills the one entry
        spu.spu_write_out_mbox(2)  # waits forever

    m.load(2, prog)
    err = deadlock(m)
    assert blocked_as(err) == {"SPE 2 (physical 2)": "spu_write_out_mbox(2)"}


def test_writing_a_full_outbound_interrupt_mailbox(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> None:
        spu.spu_write_out_intr_mbox(7)
        spu.spu_write_out_intr_mbox(8)

    m.load(6, prog)
    assert blocked_as(deadlock(m)) == {"SPE 6 (physical 6)": "spu_write_out_intr_mbox(8)"}


def test_two_spes_each_waiting_for_the_others_message(m: Machine) -> None:
    """Each would answer the other's message, and neither sends first."""

    def prog(speid: int, argp: int, envp: int) -> None:
        word = spu.ls_alloc(16, align=16)
        word.array(">u4")[3] = spu.spu_read_in_mbox() + 1
        spu.mfc_put(int(word) + 12, argp, 4, 0)

    peer_inbox = [Machine.ls_ea(s) + 0x40000 + SPU_IN_MBOX for s in (1, 0)]
    m.load(0, prog, argp=peer_inbox[0])
    m.load(1, prog, argp=peer_inbox[1])
    err = deadlock(m)
    assert blocked_as(err) == {
        "SPE 0 (physical 0)": "spu_read_in_mbox()",
        "SPE 1 (physical 1)": "spu_read_in_mbox()",
    }


def test_a_ppe_waiting_for_a_message_an_spe_never_writes(m: Machine) -> None:
    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: spu.compute(100))
        pthread_create(spe_context_run, ctx)
        spe_out_mbox_wait(ctx)

    err = deadlock(m, main)
    assert blocked_as(err) == {"PPE thread 0": "spe_out_mbox_read(SPE 0)"}
    assert err.cycle == m.context_run_cycles + 100


def test_a_ppe_waiting_for_an_interrupt_mailbox_message(m: Machine) -> None:
    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: 0)
        pthread_create(spe_context_run, ctx)
        spe_out_intr_mbox_read(ctx)

    assert blocked_as(deadlock(m, main)) == {"PPE thread 0": "spe_out_intr_mbox_read(SPE 0)"}


def test_a_ppe_writing_a_full_mailbox_the_spe_never_reads(m: Machine) -> None:
    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: spu.compute(10))
        pthread_create(spe_context_run, ctx)
        ppe.compute(100)
        spe_in_mbox_write(ctx, [1, 2, 3, 4, 5])

    assert blocked_as(deadlock(m, main)) == {"PPE thread 0": "spe_in_mbox_write(SPE 0, 5)"}


def test_a_ppe_joining_an_spe_program_that_waits_for_it(m: Machine) -> None:
    """The classic start-up mistake: spe_context_run in the main thread, then
    the message the program waits for would be sent, but never is."""

    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: spu.spu_read_in_mbox())
        spe_context_run(ctx)  # blocks this thread until the program ends
        spe_in_mbox_write(ctx, [1])

    err = deadlock(m, main)
    assert blocked_as(err) == {"PPE thread 0": "join(thread 1)", "SPE 0 (physical 0)": "spu_read_in_mbox()"}


def test_waiting_for_a_signal_nobody_sends(m: Machine) -> None:
    m.load(4, lambda speid, argp, envp: spu.spu_read_signal2())
    assert blocked_as(deadlock(m)) == {"SPE 4 (physical 4)": "spu_read_signal2()"}


def test_waiting_for_a_list_stall_without_a_list(m: Machine) -> None:
    m.load(1, lambda speid, argp, envp: spu.mfc_read_list_stall_status())
    assert blocked_as(deadlock(m)) == {"SPE 1 (physical 1)": "mfc_read_list_stall_status()"}


def test_a_stalled_list_never_acknowledged(m: Machine) -> None:
    src = m.alloc(256)

    def prog(speid: int, argp: int, envp: int) -> None:
        n = spu.mfc_list(0x4000, [(128, argp, True), (128, argp + 128)])
        spu.mfc_getl(0x8000, 0, 0x4000, n, 6)
        spu.mfc_write_tag_mask(1 << 6)
        spu.mfc_read_tag_status_all()  # forgot mfc_write_list_stall_ack

    m.load(0, prog, argp=src)
    (who, call, _), *_ = deadlock(m).blocked
    assert who == "SPE 0 (physical 0)" and "mfc_read_tag_status_all" in call


def test_a_deadlock_among_many_names_each(m: Machine) -> None:
    def main() -> None:
        contexts = [spe_context_create() for _ in range(3)]
        for i, ctx in enumerate(contexts):
            spe_program_load(ctx, lambda speid, argp, envp: spu.spu_read_signal1())
            pthread_create(spe_context_run, ctx, argp=i)
        spe_out_mbox_wait(contexts[0])

    err = deadlock(m, main)
    names = blocked_as(err)
    assert names["PPE thread 0"] == "spe_out_mbox_read(SPE 0)"
    assert [names[f"PPE thread {t}"] for t in (1, 2, 3)] == [f"join(thread {t})" for t in (4, 5, 6)]
    assert {names[f"SPE {s} (physical {s})"] for s in range(3)} == {"spu_read_signal1()"}


def test_waiting_for_a_proxy_dma_that_completes_is_not_a_deadlock(m: Machine) -> None:
    """The control: waiting on proxy tags of a command in flight ends normally."""

    def main() -> int:
        ctx = spe_context_create()
        spe_mfcio_get(ctx, 0x4000, 0, 16, 0)
        return spe_mfcio_tag_status_read(ctx, 1, SPE_TAG_ALL)

    assert m.run(main).value == 1


# -- errors at the call -----------------------------------------------------------------------


def mfc_error(m: Machine, prog, argp: int = 0) -> MfcError:
    m.load(0, prog, argp=argp)
    with pytest.raises(MfcError) as e:
        m.run()
    assert e.value.spe == 0
    assert any(entry.name == "prog" for entry in e.traceback), "raised at the program's line"
    return e.value


def test_reading_the_atomic_status_with_nothing_outstanding(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> None:
        spu.mfc_read_atomic_status()

    err = mfc_error(m, prog)
    assert err.kind == "channel"
    assert "no atomic command" in str(err) and "mfc_read_atomic_status" in err.command


def test_reading_the_atomic_status_twice(m: Machine) -> None:
    line = m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = spu.ls_alloc(128, align=128)
        spu.mfc_getllar(buf, argp)
        assert spu.mfc_read_atomic_status() == spu.MFC_GETLLAR_STATUS
        spu.mfc_read_atomic_status()  # the status was consumed

    assert mfc_error(m, prog, argp=line).kind == "channel"


def test_putllc_without_a_getllar(m: Machine) -> None:
    line = m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> None:
        spu.mfc_putllc(spu.ls_alloc(128, align=128), argp)

    err = mfc_error(m, prog, argp=line)
    assert err.kind == "atomic"
    assert "without a reservation" in str(err) and "mfc_putllc" in err.command


def test_putllc_to_another_line_than_the_getllar(m: Machine) -> None:
    lines = m.alloc(256)

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = spu.ls_alloc(128, align=128)
        spu.mfc_getllar(buf, argp)
        spu.mfc_read_atomic_status()
        spu.mfc_putllc(buf, argp + 128)

    err = mfc_error(m, prog, argp=lines)
    assert err.kind == "atomic" and f"0x{int(lines) + 128:x}" in str(err)


def test_a_second_putllc_after_a_successful_one(m: Machine) -> None:
    """A successful putllc uses the reservation up: another needs a new getllar."""
    line = m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = spu.ls_alloc(128, align=128)
        spu.mfc_getllar(buf, argp)
        spu.mfc_read_atomic_status()
        spu.mfc_putllc(buf, argp)
        assert spu.mfc_read_atomic_status() == 0
        spu.mfc_putllc(buf, argp)

    assert mfc_error(m, prog, argp=line).kind == "atomic"


def test_a_failed_putllc_is_not_an_error(m: Machine) -> None:
    """The control: a putllc whose reservation was lost to another writer just fails."""
    line = m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> int:
        buf = spu.ls_alloc(128, align=128)
        spu.mfc_getllar(buf, argp)
        spu.mfc_read_atomic_status()
        spu.mfc_put(buf, argp + 64, 16, 0)  # our own plain put to the line loses the reservation
        spu.mfc_write_tag_mask(1)
        spu.mfc_read_tag_status_all()
        spu.mfc_putllc(buf, argp)
        return spu.mfc_read_atomic_status()

    m.load(0, prog, argp=line)
    assert m.run().programs[0].exit_code == spu.MFC_PUTLLC_STATUS


@pytest.mark.parametrize(
    ("ea_off", "what"),
    [(64, "128-byte aligned"), (None, "main memory")],
    ids=["misaligned", "local-store"],
)
def test_atomics_need_an_aligned_line_in_main_memory(m: Machine, ea_off, what: str) -> None:
    line = m.alloc(256)
    ea = int(line) + ea_off if ea_off is not None else Machine.ls_ea(1)

    def prog(speid: int, argp: int, envp: int) -> None:
        spu.mfc_getllar(spu.ls_alloc(128, align=128), ea)

    err = mfc_error(m, prog)
    assert err.kind == "atomic" and what in str(err)


def test_signals_to_a_problem_state_address_that_is_no_register(m: Machine) -> None:
    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, lambda speid, argp, envp: spu.mfc_sndsig(0x4000, argp, 0))
        spe_context_run(ctx, argp=spe_ps_area_get(ctx) + 0x100)

    with pytest.raises(MfcError) as e:
        m.run(main)
    assert e.value.kind == "unmapped"
