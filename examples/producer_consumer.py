"""An SPE producer and an SPE consumer talking through mailboxes, and what a
mailbox message costs.

1. **Streaming.** SPE 0 produces 4 KB blocks and puts each straight into a
   4-slot ring in SPE 1's local store. After the data it writes the block's
   number into SPE 1's inbound mailbox: a 4-byte ``mfc_putf`` to SPE 1's
   problem-state area (``spe_ps_area_get(ctx) + 0x400C``, SPU_In_Mbox) in the
   same tag group, so the fence holds the message until the block has landed.
   The consumer reads the message (``spu_read_in_mbox``), checks and uses the
   block, and returns a credit to the producer's inbound mailbox the same
   way: credit-based flow control with a window of 4 slots. (Without the
   fence the message happens to land after the block in this model too, and
   the stream is faster, but the architecture does not promise that order.)
2. **Latency.** SPE 0 and SPE 1 bounce a message back and forth through their
   inbound mailboxes (Kistler et al. 2006: a round trip is about 300 ns), and the PPE
   and an SPE exchange messages (Kistler et al. 2006: as little as 150 ns one way).

Every time printed is simulated. Run: python examples/producer_consumer.py
"""

from __future__ import annotations

import numpy as np

from cellsim import Machine, ppe
from cellsim.ppe import (
    SPU_IN_MBOX,
    pthread_create,
    pthread_join,
    spe_context_create,
    spe_context_run,
    spe_in_mbox_write,
    spe_ls_area_get,
    spe_out_mbox_read,
    spe_program_load,
    spe_ps_area_get,
)
from cellsim.spu import (
    compute,
    ls_alloc,
    ls_array,
    mfc_get,
    mfc_put,
    mfc_putf,
    mfc_read_tag_status_all,
    mfc_write_tag_mask,
    spu_read_in_mbox,
    spu_write_out_mbox,
)

BLOCK = 4096
SLOTS = 4  # the inbound mailbox holds 4 messages: never more in flight
BLOCKS = 64
RING = 0x20000  # the ring's local-store address in the consumer (both programs agree on it)
WORK_CYCLES = 256  # the consumer's work on one block
ROUND_TRIPS = 50
CONTROL = np.dtype([("peer_ls", ">u8"), ("peer_inbox", ">u8"), ("count", ">u8"), ("pad", ">u8")])


def wait(mask: int) -> None:
    mfc_write_tag_mask(mask)
    mfc_read_tag_status_all()


def read_control(argp: int) -> tuple[int, int, int]:
    ctl = ls_alloc(CONTROL.itemsize, align=128)
    mfc_get(ctl, argp, CONTROL.itemsize, 31)
    wait(1 << 31)
    c = ctl.array(CONTROL)[0]
    return int(c["peer_ls"]), int(c["peer_inbox"]), int(c["count"])


def mailbox_word() -> tuple[int, np.ndarray]:
    """A 16-byte LS buffer whose last word is sent: a 4-byte DMA needs the same
    low 4 bits in the local store as the register's address (0xC)."""
    w = ls_alloc(16, align=16)
    return int(w) + 12, w.array(">u4")[3:]


def block_data(i: int) -> np.ndarray:
    return (np.arange(BLOCK // 4, dtype=np.uint32) + i * 7919).astype(">u4")


# -- 1. streaming -------------------------------------------------------------------


def producer(speid: int, argp: int, envp: int) -> int:
    consumer_ls, consumer_inbox, count = read_control(argp)
    bufs = [ls_alloc(BLOCK, align=128) for _ in range(2)]
    msgs = [mailbox_word() for _ in range(2)]
    for i in range(count):
        if i >= SLOTS:
            spu_read_in_mbox()  # a credit: the consumer freed a slot
        b = i % 2  # double buffering: buffer b belongs to tag group b
        wait(1 << b)  # its previous block has left
        bufs[b].array(">u4")[:] = block_data(i)
        compute(BLOCK // 16)  # producing it
        mfc_put(bufs[b], consumer_ls + RING + (i % SLOTS) * BLOCK, BLOCK, b)
        lsa, word = msgs[b]
        word[0] = i
        mfc_putf(lsa, consumer_inbox, 4, b)  # fenced: after the block, same tag
    wait(0b11)
    return 0


def consumer(speid: int, argp: int, envp: int) -> int:
    _, producer_inbox, count = read_control(argp)
    credit_lsa, credit = mailbox_word()
    bad = 0
    for i in range(count):
        n = spu_read_in_mbox()
        block = ls_array(RING + (n % SLOTS) * BLOCK, ">u4", BLOCK // 4)
        bad += n != i or not np.array_equal(block, block_data(i))
        compute(WORK_CYCLES)
        if i + SLOTS < count:  # the producer waits for credits only after the first SLOTS blocks
            credit[0] = 1
            mfc_put(credit_lsa, producer_inbox, 4, 0)
    wait(1)
    return bad


def streaming() -> tuple[float, float]:
    """Runs producer and consumer; returns the simulated ns from their start to
    the end, and the ns of the consumer's work on one block."""
    m = Machine("qs20", seed=0)
    ctl = m.alloc(2 * CONTROL.itemsize)

    def ppe_main() -> list[int]:
        prod, cons = spe_context_create(), spe_context_create()
        spe_program_load(prod, producer)
        spe_program_load(cons, consumer)
        c = ctl.array(CONTROL)
        c[0] = (spe_ls_area_get(cons), spe_ps_area_get(cons) + SPU_IN_MBOX, BLOCKS, 0)
        c[1] = (0, spe_ps_area_get(prod) + SPU_IN_MBOX, BLOCKS, 0)
        threads = [
            pthread_create(lambda: spe_context_run(prod, argp=ctl).exit_code),
            pthread_create(lambda: spe_context_run(cons, argp=int(ctl) + CONTROL.itemsize).exit_code),
        ]
        return [pthread_join(t) for t in threads]

    r = m.run(ppe_main)
    assert r.value == [0, 0], f"the consumer saw {r.value[1]} wrong blocks"
    return r.ns - m.cycles_to_ns(m.context_run_cycles), m.cycles_to_ns(WORK_CYCLES)


# -- 2. latency ---------------------------------------------------------------------


def pong(speid: int, argp: int, envp: int) -> int:
    """Sends every message it receives back to its peer's inbound mailbox."""
    _, peer_inbox, count = read_control(argp)
    lsa, word = mailbox_word()
    for _ in range(count):
        word[0] = spu_read_in_mbox()
        mfc_put(lsa, peer_inbox, 4, 0)
    wait(1)
    return 0


def spe_round_trip() -> float:
    """The mean SPE-SPE round trip, in ns, timed by the ping program."""
    m = Machine("qs20", seed=0)
    times: list[float] = []
    ctl = m.alloc(2 * CONTROL.itemsize)

    def ping(speid: int, argp: int, envp: int) -> int:
        _, peer_inbox, count = read_control(argp)
        lsa, word = mailbox_word()
        for i in range(count):
            t0 = m.now_ns
            word[0] = i
            mfc_put(lsa, peer_inbox, 4, 0)
            if spu_read_in_mbox() != i:
                return 1
            times.append(m.now_ns - t0)
        wait(1)
        return 0

    def ppe_main() -> list[int]:
        a, b = spe_context_create(), spe_context_create()
        spe_program_load(a, ping)
        spe_program_load(b, pong)
        c = ctl.array(CONTROL)
        c[0] = (0, spe_ps_area_get(b) + SPU_IN_MBOX, ROUND_TRIPS, 0)
        c[1] = (0, spe_ps_area_get(a) + SPU_IN_MBOX, ROUND_TRIPS, 0)
        ta = pthread_create(lambda: spe_context_run(a, argp=ctl).exit_code)
        tb = pthread_create(lambda: spe_context_run(b, argp=int(ctl) + CONTROL.itemsize).exit_code)
        return [pthread_join(t) for t in (ta, tb)]

    assert m.run(ppe_main).value == [0, 0]
    return float(np.mean(times))


def ppe_messages() -> tuple[float, float]:
    """PPE -> SPE one way (sent by the PPE until read by the waiting SPU) and the
    PPE's round trip with libspe2's non-blocking ``spe_out_mbox_read`` polled."""
    m = Machine("qs20", seed=0)
    one_way: list[float] = []
    round_trip: list[float] = []
    sent = [0.0]

    def echo(speid: int, argp: int, envp: int) -> int:
        for _ in range(envp):
            v = spu_read_in_mbox()
            one_way.append(m.now_ns - sent[0])
            spu_write_out_mbox(v + 1)
        return 0

    def ppe_main() -> int:
        ctx = spe_context_create()
        spe_program_load(ctx, echo)
        t = pthread_create(lambda: spe_context_run(ctx, envp=ROUND_TRIPS).exit_code)
        ppe.compute(m.ns_to_cycles(6000))  # the echo program waits in its mailbox by now
        for i in range(ROUND_TRIPS):
            sent[0] = m.now_ns
            spe_in_mbox_write(ctx, [i])
            while not (got := spe_out_mbox_read(ctx)):
                pass
            assert got == [i + 1]
            round_trip.append(m.now_ns - sent[0])
        return pthread_join(t)

    assert m.run(ppe_main).value == 0
    return float(np.mean(one_way)), float(np.mean(round_trip))


def main() -> None:
    ns, work_ns = streaming()
    moved = BLOCKS * BLOCK
    print(f"streaming: {BLOCKS} blocks of {BLOCK} B from SPE 0 to SPE 1, {SLOTS} slots, credits by mailbox")
    print(f"  {ns / 1000:.1f} us simulated: {moved / ns:.2f} GB/s, {ns / BLOCKS:.0f} ns per block")
    print(f"  (the consumer's work alone is {work_ns:.0f} ns per block)")
    rt = spe_round_trip()
    print(f"SPE-SPE mailbox round trip: {rt:.0f} ns (Kistler et al. 2006: about 300 ns)")
    one_way, ppe_rt = ppe_messages()
    print(f"PPE -> SPE mailbox message: {one_way:.0f} ns (Kistler et al. 2006: as little as 150 ns)")
    print(f"PPE -> SPE -> PPE with spe_out_mbox_read polling: {ppe_rt:.0f} ns")


if __name__ == "__main__":
    main()
