"""SPU events: one wait for "my DMA is done OR the PPE has a message".

An SPE streams 16 KB blocks from main memory, one at a time, and works on each.
Instead of blocking in ``mfc_read_tag_status_all`` (deaf to the mailbox while the
DMA runs) it waits in ``spu_read_event_status`` on two events at once:

- the tag-group event (``MFC_TAG_STATUS_UPDATE_EVENT``): the tag-status update it
  requested with ``mfc_write_tag_update_all`` after each ``mfc_get`` is met;
- the inbound-mailbox event (``MFC_IN_MBOX_AVAILABLE_EVENT``): the PPE wrote it a
  message, here "stop".

It acknowledges what it got (``spu_write_event_ack``), works on a block or stops,
and reports how far it got in its outbound-interrupt mailbox. The PPE, meanwhile,
waits with libspe2's event handler (``spe_event_wait``) for that message and for
the SPE program's stop, the two events ``SPE_EVENT_OUT_INTR_MBOX`` and
``SPE_EVENT_SPE_STOPPED``.

examples/c/events is the same program in C on the SDK headers; it runs in the
same simulated cycles. Every time printed is simulated. Run: python examples/events.py
"""

from __future__ import annotations

from typing import Any

from cellsim import Machine
from cellsim.ppe import (
    SPE_EVENT_OUT_INTR_MBOX,
    SPE_EVENT_SPE_STOPPED,
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
    spe_program_load,
)
from cellsim.spu import (
    MFC_IN_MBOX_AVAILABLE_EVENT,
    MFC_TAG_STATUS_UPDATE_EVENT,
    ls_alloc,
    mfc_get,
    mfc_read_tag_status,
    mfc_write_tag_mask,
    mfc_write_tag_update_all,
    spu_read_event_status,
    spu_read_in_mbox,
    spu_write_event_ack,
    spu_write_event_mask,
    spu_write_out_intr_mbox,
)
from cellsim.spu import compute as spu_compute

BLOCK = 16384
BLOCKS = 64  # the stream: longer than the SPE gets through before the PPE says stop
WORK_CYCLES = 4096  # the SPE's work on one block
STOP_AFTER = 100_000  # PPE cycles before it writes "stop"
STOP = 1
DATA_ALIGN = 65536  # the stream's alignment: the C twin's lands on the same memory banks


def spu_main(speid: int, argp: int, envp: int) -> int:
    """Streams ``envp`` blocks from ``argp`` until they are done or the PPE says stop."""
    buf = ls_alloc(BLOCK, align=128)
    spu_write_event_mask(MFC_TAG_STATUS_UPDATE_EVENT | MFC_IN_MBOX_AVAILABLE_EVENT)
    mfc_write_tag_mask(1 << 0)
    done = 0
    mfc_get(buf, argp, BLOCK, 0)
    mfc_write_tag_update_all()
    while done < envp:
        events = spu_read_event_status()
        spu_write_event_ack(events)
        if events & MFC_IN_MBOX_AVAILABLE_EVENT and spu_read_in_mbox() == STOP:
            mfc_read_tag_status()  # the get in flight lands before the program ends
            break
        if events & MFC_TAG_STATUS_UPDATE_EVENT:
            mfc_read_tag_status()
            spu_compute(WORK_CYCLES)
            done += 1
            if done < envp:
                mfc_get(buf, argp + done * BLOCK, BLOCK, 0)
                mfc_write_tag_update_all()
    spu_write_out_intr_mbox(done)
    return done


def ppe_main(m: Machine, program: Any) -> list[str]:
    """Starts the SPE, says stop after a while, and waits for its two events."""
    data = m.alloc(BLOCK * BLOCKS, DATA_ALIGN)
    ctx = spe_context_create()
    spe_program_load(ctx, program)
    handler = spe_event_handler_create()
    spe_event_handler_register(handler, SpeEventUnit(SPE_EVENT_OUT_INTR_MBOX | SPE_EVENT_SPE_STOPPED, ctx))
    runner = pthread_create(spe_context_run, ctx, argp=data, envp=BLOCKS)
    compute(STOP_AFTER)
    spe_in_mbox_write(ctx, [STOP])
    log = []
    for _ in range(2):
        (event,) = spe_event_wait(handler, 1, -1)
        if event.events == SPE_EVENT_OUT_INTR_MBOX:
            (done,) = spe_out_intr_mbox_read(ctx)
            log.append(f"SPE_EVENT_OUT_INTR_MBOX: the SPE streamed {done} of {BLOCKS} blocks before the stop")
        else:
            log.append("SPE_EVENT_SPE_STOPPED: the SPE program ended")
    pthread_join(runner)
    spe_event_handler_destroy(handler)
    return log


def run(program: Any = spu_main) -> tuple[int, list[str]]:
    """The example's run: simulated cycles and what the PPE saw."""
    m = Machine("qs20", seed=0)
    r = m.run(ppe_main, m, program)
    return r.cycles, r.value


def main() -> None:
    cycles, log = run()
    print(f"the PPE writes 'stop' after {STOP_AFTER} cycles; the SPE waits on tag group OR mailbox")
    for line in log:
        print(f"  {line}")
    m = Machine("qs20", seed=0)
    print(f"ended at cycle {cycles:,} ({m.cycles_to_ns(cycles) / 1000:.1f} us simulated)")


if __name__ == "__main__":
    main()
