"""SPU events (SPU_RdEventStat and friends) and libspe2's spe_event_* from Python, one
event at a time: each SPU program records what spu_read_event_status gave it."""

from __future__ import annotations

import pytest

from cellsim import Machine, MfcError, UsageError, spu
from cellsim.ppe import (
    SPE_EVENT_OUT_INTR_MBOX,
    SPE_EVENT_SPE_STOPPED,
    SPE_EVENT_TAG_GROUP,
    SpeEventUnit,
    compute,
    pthread_create,
    pthread_join,
    spe_context_create,
    spe_context_run,
    spe_event_handler_create,
    spe_event_handler_destroy,
    spe_event_handler_register,
    spe_event_wait,
    spe_in_mbox_write,
    spe_out_intr_mbox_read,
    spe_out_mbox_read,
    spe_program_load,
    spe_signal_write,
)

got: list[object] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    got.clear()


def _wait_event(mask: int) -> int:
    spu.spu_write_event_mask(mask)
    ev = spu.spu_read_event_status()
    spu.spu_write_event_ack(ev)
    return ev


def test_tag_group_event_after_a_tag_update(m: Machine) -> None:
    """Tg fires when the update requested with mfc_write_tag_update_all is met; the status
    read that follows returns the group, and the data is in."""
    src = m.alloc(16384)
    src.array()[:] = 5

    def prog(speid: int, argp: int, envp: int) -> None:  # answer in got
        buf = spu.ls_alloc(16384, 128)
        spu.spu_write_event_mask(spu.MFC_TAG_STATUS_UPDATE_EVENT)
        spu.mfc_get(buf, src, 16384, 2)
        spu.mfc_write_tag_mask(1 << 2)
        spu.mfc_write_tag_update_all()
        ev = spu.spu_read_event_status()
        got.append((ev, spu.mfc_read_tag_status(), int(buf.array()[-1])))

    m.load(0, prog)
    m.run()
    assert got[0] == (spu.MFC_TAG_STATUS_UPDATE_EVENT, 1 << 2, 5)


def test_tag_update_costs_what_the_combined_read_costs(m: Machine) -> None:
    """mfc_write_tag_update_all + mfc_read_tag_status takes the cycles of
    mfc_read_tag_status_all (the update write is charged with the read)."""
    src = m.alloc(4096)

    def split(speid: int, argp: int, envp: int) -> None:
        buf = spu.ls_alloc(4096, 128)
        spu.mfc_get(buf, src, 4096, 0)
        spu.mfc_write_tag_mask(1)
        spu.mfc_write_tag_update_all()
        spu.mfc_read_tag_status()

    def combined(speid: int, argp: int, envp: int) -> None:
        buf = spu.ls_alloc(4096, 128)
        spu.mfc_get(buf, src, 4096, 0)
        spu.mfc_write_tag_mask(1)
        spu.mfc_read_tag_status_all()

    cycles = []
    for prog in (split, combined):
        mm = Machine("qs20-1chip", seed=1, overrides={"placement": "identity"})
        src = mm.alloc(4096)
        mm.load(0, prog)
        cycles.append(mm.run().cycles)
    assert cycles[0] == cycles[1]


@pytest.mark.parametrize(
    ("bit", "cause"),
    [
        (spu.MFC_IN_MBOX_AVAILABLE_EVENT, "mbox"),
        (spu.MFC_SIGNAL_NOTIFY_1_EVENT, "sig1"),
        (spu.MFC_SIGNAL_NOTIFY_2_EVENT, "sig2"),
    ],
)
def test_ppe_writes_raise_their_event(m: Machine, bit: int, cause: str) -> None:
    """A mailbox message or a signal from the PPE wakes the SPU with its own bit."""
    mask = spu.MFC_IN_MBOX_AVAILABLE_EVENT | spu.MFC_SIGNAL_NOTIFY_1_EVENT | spu.MFC_SIGNAL_NOTIFY_2_EVENT

    def prog(speid: int, argp: int, envp: int) -> None:  # answer in got
        got.append(_wait_event(mask))

    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, prog)
        t = pthread_create(spe_context_run, ctx)
        compute(1000)
        if cause == "mbox":
            spe_in_mbox_write(ctx, [1])
        else:
            spe_signal_write(ctx, 1 if cause == "sig1" else 2, 1)
        pthread_join(t)

    m.run(main)
    assert got[0] == bit


def test_outbound_mailbox_available_after_the_ppe_reads(m: Machine) -> None:
    """Me: the outbound-interrupt mailbox, full, becomes free when the PPE reads it."""

    def prog(speid: int, argp: int, envp: int) -> None:  # answer in got
        spu.spu_write_event_mask(spu.MFC_OUT_INTR_MBOX_AVAILABLE_EVENT)
        spu.spu_write_out_intr_mbox(7)  # full until the PPE reads it
        got.append(spu.spu_read_event_status())

    def main() -> list[int]:
        ctx = spe_context_create()
        spe_program_load(ctx, prog)
        t = pthread_create(spe_context_run, ctx)
        compute(2000)
        msg = spe_out_intr_mbox_read(ctx)
        pthread_join(t)
        return msg

    assert m.run(main).value == [7]
    assert got[0] == spu.MFC_OUT_INTR_MBOX_AVAILABLE_EVENT


def test_decrementer_event(m: Machine) -> None:
    """Tm: the decrementer going negative."""

    def prog(speid: int, argp: int, envp: int) -> None:  # answer in got
        spu.spu_write_decrementer(100)
        ev = _wait_event(spu.MFC_DECREMENTER_EVENT)
        got.append((ev, spu.spu_read_decrementer() >> 31))

    m.load(0, prog)
    m.run()
    assert got[0] == (spu.MFC_DECREMENTER_EVENT, 1)


def test_mask_reads_back_and_stat_tells_pending(m: Machine) -> None:
    """spu_read_event_mask returns the mask; spu_stat_event_status is 1 only while a
    masked event is pending."""

    def prog(speid: int, argp: int, envp: int) -> None:  # answer in got
        spu.spu_write_event_mask(spu.MFC_SIGNAL_NOTIFY_1_EVENT)
        before = spu.spu_stat_event_status()
        spu.compute(30000)
        after = spu.spu_stat_event_status()
        got.append((spu.spu_read_event_mask(), before, after))

    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, prog)
        t = pthread_create(spe_context_run, ctx)
        compute(30000)  # the SPE program starts after about 16,000 cycles
        spe_signal_write(ctx, 1, 3)
        pthread_join(t)

    m.run(main)
    assert got[0] == (spu.MFC_SIGNAL_NOTIFY_1_EVENT, 0, 1)


def test_a_message_before_the_mask_is_pending(m: Machine) -> None:
    """A message that arrived before the first spu_write_event_mask is pending (as if
    events were tracked since the program began)."""

    def prog(speid: int, argp: int, envp: int) -> None:
        got.append(_wait_event(spu.MFC_IN_MBOX_AVAILABLE_EVENT))

    def main() -> None:
        ctx = spe_context_create()
        spe_in_mbox_write(ctx, [1])
        spe_program_load(ctx, prog)
        spe_context_run(ctx)

    m.run(main)
    assert got == [spu.MFC_IN_MBOX_AVAILABLE_EVENT]


def test_event_read_with_an_empty_mask_is_an_error(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> int:
        return spu.spu_read_event_status()

    m.load(0, prog)
    with pytest.raises(MfcError, match="event mask is empty"):
        m.run()


def test_ppe_event_handler_reports_intr_mailbox_then_stop(m: Machine) -> None:
    """libspe2: spe_event_wait returns the out-interrupt mailbox event, then (once) the stop."""

    def prog(speid: int, argp: int, envp: int) -> int:
        spu.compute(1000)
        spu.spu_write_out_intr_mbox(9)
        spu.compute(1000)
        return 0

    def main() -> list[tuple[int, int]]:
        ctx = spe_context_create()
        spe_program_load(ctx, prog)
        h = spe_event_handler_create()
        spe_event_handler_register(h, SpeEventUnit(SPE_EVENT_OUT_INTR_MBOX | SPE_EVENT_SPE_STOPPED, ctx, "x"))
        t = pthread_create(spe_context_run, ctx)
        seen = []
        for _ in range(2):
            (ev,) = spe_event_wait(h, 1, -1)
            if ev.events == SPE_EVENT_OUT_INTR_MBOX:
                seen.append((ev.events, spe_out_intr_mbox_read(ctx)[0]))
            else:
                seen.append((ev.events, 0))
        assert spe_event_wait(h, 4, 0) == []  # the stop is reported once
        pthread_join(t)
        spe_event_handler_destroy(h)
        return seen

    assert m.run(main).value == [(SPE_EVENT_OUT_INTR_MBOX, 9), (SPE_EVENT_SPE_STOPPED, 0)]


def test_tag_group_event_of_libspe2_is_refused(m: Machine) -> None:
    def main() -> None:
        ctx = spe_context_create()
        spe_event_handler_register(spe_event_handler_create(), SpeEventUnit(SPE_EVENT_TAG_GROUP, ctx))

    with pytest.raises(UsageError, match="SPE_EVENT_TAG_GROUP"):
        m.run(main)


def test_reservation_lost_event(m: Machine) -> None:
    """Lr: another SPE's putlluc to the reserved line takes SPE 0's reservation."""
    line = m.alloc(128, 128)

    def waiter(speid: int, argp: int, envp: int) -> None:
        ls = spu.ls_alloc(128, 128)
        spu.mfc_getllar(ls, line)
        spu.mfc_read_atomic_status()
        got.append(_wait_event(spu.MFC_LLR_LOST_EVENT))

    def writer(speid: int, argp: int, envp: int) -> None:
        ls = spu.ls_alloc(128, 128)
        spu.compute(3000)
        spu.mfc_putlluc(ls, line)
        spu.mfc_read_atomic_status()

    m.load(0, waiter)
    m.load(1, writer)
    m.run()
    assert got == [spu.MFC_LLR_LOST_EVENT]


def test_list_stall_event(m: Machine) -> None:
    """Sn: a DMA list stopping at a stall-and-notify element."""
    src = m.alloc(256)

    def prog(speid: int, argp: int, envp: int) -> None:
        lst = spu.ls_alloc(16, 8)
        buf = spu.ls_alloc(256, 128)
        spu.mfc_list(lst, [(128, int(src), True), (128, int(src) + 128)])
        spu.spu_write_event_mask(spu.MFC_LIST_STALL_NOTIFY_EVENT)
        spu.mfc_getl(buf, 0, lst, 16, 3)
        got.append(_wait_event(spu.MFC_LIST_STALL_NOTIFY_EVENT))
        got.append(spu.mfc_read_list_stall_status())
        spu.mfc_write_list_stall_ack(3)
        spu.mfc_write_tag_mask(1 << 3)
        spu.mfc_read_tag_status_all()

    m.load(0, prog)
    m.run()
    assert got == [spu.MFC_LIST_STALL_NOTIFY_EVENT, 1 << 3]


def test_outbound_mailbox_event(m: Machine) -> None:
    """Le: the full outbound mailbox becomes free when the PPE reads it."""

    def prog(speid: int, argp: int, envp: int) -> None:
        spu.spu_write_event_mask(spu.MFC_OUT_MBOX_AVAILABLE_EVENT)
        spu.spu_write_out_mbox(4)
        got.append(spu.spu_read_event_status())

    def main() -> list[int]:
        ctx = spe_context_create()
        spe_program_load(ctx, prog)
        t = pthread_create(spe_context_run, ctx)
        compute(20000)
        msg = spe_out_mbox_read(ctx)  # the SPE wrote it long ago
        pthread_join(t)
        return msg

    assert m.run(main).value == [4]
    assert got == [spu.MFC_OUT_MBOX_AVAILABLE_EVENT]
