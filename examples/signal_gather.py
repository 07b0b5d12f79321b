"""Gathering 7 SPEs with one signal-notification register in OR mode.

SPE 0's context is created with ``SPE_CFG_SIGNOTIFY1_OR``: writes to its
signal-notification register 1 are ORed together instead of replacing each
other. Each of the 7 worker SPEs computes for a while (a different time each)
and then sets its own bit, ``1 << speid``, with ``mfc_sndsig``: a 4-byte write
to SPE 0's problem-state area at ``SIG_NOTIFY_1`` (0x1400C). SPE 0 reads the
register (``spu_read_signal1`` blocks until something arrived, returns the
bits and clears them) until it has seen all seven bits. SPE 0 spends a little
time on each read; signals that arrive meanwhile are ORed together and come
in one read.

Then the same mechanism used the other way round makes a barrier: SPE 0
releases each worker with a signal to its register 1 (overwrite mode), and
the round repeats. The rounds show what such a gather-and-release costs.

Every time printed is simulated. Run: python examples/signal_gather.py
"""

from __future__ import annotations

from cellsim import Machine
from cellsim.ppe import (
    SIG_NOTIFY_1,
    SPE_CFG_SIGNOTIFY1_OR,
    pthread_create,
    pthread_join,
    spe_context_create,
    spe_context_run,
    spe_program_load,
    spe_ps_area_get,
)
from cellsim.spu import (
    compute,
    ls_alloc,
    mfc_read_tag_status_all,
    mfc_sndsig,
    mfc_write_tag_mask,
    spu_read_signal1,
)

WORKERS = 7
ALL = sum(1 << s for s in range(1, WORKERS + 1))  # 0b1111_1110
ROUNDS = 3
HANDLE_CYCLES = 500  # SPE 0's work on each read

m = Machine("qs20", seed=0)
reads: list[tuple[int, float, int]] = []  # (round, time, bits) of each read by SPE 0
sent: dict[tuple[int, int], float] = {}  # (round, worker) -> time its signal was sent
released: dict[int, float] = {}  # round -> time SPE 0 finished releasing
ps_areas: list[int] = []  # problem-state area of each SPE, filled in by the PPE


def now_ns() -> float:
    """The simulator's clock (an observation for this printout)."""
    return m.now_ns


class Signaller:
    """A 16-byte local-store word for ``mfc_sndsig``: the register's address ends
    in 0xC, so the 4 bytes sent must sit at an LS address ending in 0xC too."""

    def __init__(self) -> None:
        buf = ls_alloc(16, align=16)
        self.lsa = int(buf) + 12
        self.word = buf.array(">u4")[3:]

    def send(self, spe: int, value: int, wait: bool = True) -> None:
        """Sends ``value`` to signal register 1 of SPE ``spe`` (and waits until it is sent)."""
        self.word[0] = value
        mfc_sndsig(self.lsa, ps_areas[spe] + SIG_NOTIFY_1, 0)
        if wait:
            self.wait()

    def wait(self) -> None:
        mfc_write_tag_mask(1)
        mfc_read_tag_status_all()


def gatherer(speid: int, argp: int, envp: int) -> int:
    sig = Signaller()
    for r in range(ROUNDS):
        seen = 0
        while seen != ALL:
            bits = spu_read_signal1()  # blocks; returns the ORed bits and clears them
            reads.append((r, now_ns(), bits))
            if bits & seen or bits & ~ALL:
                return 1  # a bit twice, or a bit nobody should send
            seen |= bits
            compute(HANDLE_CYCLES)  # meanwhile, new signals OR into the register
        for w in range(1, WORKERS + 1):  # release everyone: 7 signals in flight at once
            sig.send(w, r + 1, wait=False)
        sig.wait()
        released[r] = now_ns()
    return 0


def worker(speid: int, argp: int, envp: int) -> int:
    sig = Signaller()
    for r in range(ROUNDS):
        compute(1000 * ((speid + r) % 3 + 1))  # 1000, 2000 or 3000 cycles: some finish together
        sent[(r, speid)] = now_ns()
        sig.send(0, 1 << speid)  # my bit, ORed into SPE 0's register
        if spu_read_signal1() != r + 1:  # wait for the release
            return 1
    return 0


def ppe_main() -> list[int]:
    contexts = [spe_context_create(SPE_CFG_SIGNOTIFY1_OR)]  # SPE 0: OR mode
    contexts += [spe_context_create() for _ in range(WORKERS)]  # workers: overwrite mode
    ps_areas.extend(spe_ps_area_get(c) for c in contexts)
    spe_program_load(contexts[0], gatherer)
    for c in contexts[1:]:
        spe_program_load(c, worker)
    threads = [pthread_create(lambda c=c: spe_context_run(c).exit_code) for c in contexts]
    return [pthread_join(t) for t in threads]


def main() -> None:
    r = m.run(ppe_main)
    assert r.value == [0] * (WORKERS + 1), r.value
    start = m.cycles_to_ns(m.context_run_cycles)
    print(f"SPE 0 gathers {WORKERS} SPEs' bits in signal register 1 (OR mode), {ROUNDS} rounds")
    print("times in simulated ns since the SPE programs started")
    for rnd in range(ROUNDS):
        order = sorted(range(1, WORKERS + 1), key=lambda w: sent[(rnd, w)])
        print(
            f"round {rnd}: signals sent by SPE "
            + ", ".join(f"{w} at {sent[(rnd, w)] - start:.0f}" for w in order)
        )
        for rr, t, bits in reads:
            if rr == rnd:
                print(f"  SPE 0 read 0b{bits:08b} at {t - start:.0f}")
        last = max(sent[(rnd, w)] for w in order)
        gathered = max(t for rr, t, _ in reads if rr == rnd)
        print(
            f"  all {WORKERS} gathered {gathered - last:.0f} ns after the last signal was sent;"
            f" all released {released[rnd] - gathered:.0f} ns later"
        )


if __name__ == "__main__":
    main()
