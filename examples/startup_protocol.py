"""Kistler et al. 2006's start-up protocol: a synchronised start and an unintrusive finish.

The benchmarks of Kistler et al. 2006 start every SPE at the same time
and learn that they have finished without disturbing the traffic measured:

1. the PPE creates 8 SPE contexts and runs each in a PPE thread; each SPE
   program fetches its control block and says "ready" in its outbound mailbox;
2. once all 8 are ready, the PPE writes "go" into each inbound mailbox
   (the SPE programs are blocked in ``spu_read_in_mbox``);
3. each SPE does its work: a 16 KB get from memory, a computation, a put back;
4. each SPE signals completion with an atomic fetch-and-add (getllar/putllc)
   on a counter in main memory;
5. the PPE polls that counter infrequently (a cacheable load every 2 us,
   computing in between) until it reads 8, then joins its threads.

The times printed are the simulator's clock (simulated microseconds since the
PPE program started); the example checks the results of the work.

Run: python examples/startup_protocol.py
"""

from __future__ import annotations

import numpy as np

from cellsim import Machine, ppe
from cellsim.ppe import (
    pthread_create,
    pthread_join,
    spe_context_create,
    spe_context_run,
    spe_in_mbox_write,
    spe_out_mbox_read,
    spe_program_load,
)
from cellsim.spu import (
    compute,
    ls_alloc,
    mfc_get,
    mfc_put,
    mfc_read_tag_status_all,
    mfc_write_tag_mask,
    spu_read_in_mbox,
    spu_write_out_mbox,
)
from cellsim.sync import atomic_add

SPES = 8
CHUNK = 16384  # bytes of work per SPE
GO = 0x60
POLL_NS = 2000  # the PPE looks at the counter every 2 us
CONTROL = np.dtype([("src", ">u8"), ("dst", ">u8"), ("counter", ">u8"), ("pad", ">u8")])  # 32 bytes

m = Machine("qs20", seed=0)
log: dict[str, float] = {}  # phase -> simulated us
spe_log: dict[int, dict[str, float]] = {}


def now_us() -> float:
    """The simulator's clock (an observation for this printout, not an SPU or PPE call)."""
    return m.now_ns / 1000


def wait(tag: int) -> None:
    mfc_write_tag_mask(1 << tag)
    mfc_read_tag_status_all()


def spe_main(speid: int, argp: int, envp: int) -> int:
    me = spe_log.setdefault(speid, {})
    me["started"] = now_us()
    ctl = ls_alloc(CONTROL.itemsize, align=128)
    mfc_get(ctl, argp, CONTROL.itemsize, 0)
    wait(0)
    c = ctl.array(CONTROL)[0]
    spu_write_out_mbox(speid)  # 1. ready
    if spu_read_in_mbox() != GO:  # 2. wait for go
        return 1
    me["go"] = now_us()
    buf = ls_alloc(CHUNK, align=128)  # 3. the work
    mfc_get(buf, int(c["src"]), CHUNK, 1)
    wait(1)
    x = buf.array(">f4")
    x *= 2
    compute(CHUNK // 16 * 2)
    mfc_put(buf, int(c["dst"]), CHUNK, 1)
    wait(1)
    me["worked"] = now_us()
    atomic_add(int(c["counter"]), 1)  # 4. done
    me["signalled"] = now_us()
    return 0


def ppe_main() -> int:
    data = m.alloc(SPES * CHUNK)
    out = m.alloc(SPES * CHUNK)
    counter = m.alloc(128, align=128)
    data.array(">f4")[:] = np.arange(SPES * CHUNK // 4, dtype=np.float32)

    contexts, threads = [], []
    for spe in range(SPES):
        ctl = m.alloc(CONTROL.itemsize)
        ctl.array(CONTROL)[0] = (int(data) + spe * CHUNK, int(out) + spe * CHUNK, int(counter), 0)
        ctx = spe_context_create()
        spe_program_load(ctx, spe_main)
        contexts.append(ctx)
        threads.append(pthread_create(lambda ctx=ctx, ctl=ctl: spe_context_run(ctx, argp=ctl).exit_code))
    log["contexts running"] = now_us()

    ready: set[int] = set()  # 1. collect the "ready" messages (spe_out_mbox_read never blocks)
    while len(ready) < SPES:
        for i, ctx in enumerate(contexts):
            if i not in ready and spe_out_mbox_read(ctx):
                ready.add(i)
        ppe.compute(100)
    log["all ready"] = now_us()

    for ctx in contexts:  # 2. go
        spe_in_mbox_write(ctx, [GO])
    log["go sent"] = now_us()

    polls = 0  # 5. poll the counter, rarely
    while ppe.load(counter) < SPES:
        polls += 1
        ppe.compute(m.ns_to_cycles(POLL_NS))
    log["saw count=8"] = now_us()
    codes = [pthread_join(t) for t in threads]
    log["threads joined"] = now_us()
    assert codes == [0] * SPES, codes
    assert np.array_equal(out.array(">f4"), 2 * data.array(">f4")), "wrong results"
    return polls


def main() -> None:
    r = m.run(ppe_main)
    print(f"start-up protocol on {SPES} SPEs ({m.name}, seed {m.seed}); times in simulated us")
    for phase, t in log.items():
        print(f"  PPE: {phase:<18} {t:8.2f}")
    print(f"  PPE: loaded the counter {r.value + 1} times, every {POLL_NS / 1000:.0f} us")
    print("  SPE (physical)   started       go   worked  signalled")
    for spe in range(SPES):
        s = spe_log[spe]
        print(
            f"  {spe} ({m.placement[spe]})        {s['started']:8.2f} {s['go']:8.2f} {s['worked']:8.2f}"
            f" {s['signalled']:10.2f}"
        )
    go = [spe_log[s]["go"] for s in range(SPES)]
    done = [spe_log[s]["signalled"] for s in range(SPES)]
    print(f"  go seen within {1000 * (max(go) - min(go)):.0f} ns of each other")
    print(f"  all done {1000 * (max(done) - log['go sent']):.0f} ns after go (last at {max(done):.2f} us)")
    assert log["saw count=8"] - max(done) < POLL_NS / 1000, "the PPE noticed within one poll period"


if __name__ == "__main__":
    main()
