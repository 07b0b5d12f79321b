"""What each synchronisation facility costs on the simulated chip.

Measures, on one machine (default qs20) and seed, the simulated time of:
a blocking 128-byte DMA to another local store and to memory, a DMA list
against the same transfers as single DMAs, mailbox messages PPE -> SPE and
SPE -> PPE, an SPU-SPU mailbox round trip, a signal sent to another SPE,
a lock-line update (getllar + putllc) alone and under contention, the
`cellsim.sync` mutex and barrier, and a proxy DMA issued by the PPE. Where seed
000 published a figure (calibration.md) it is printed beside.

Every time is simulated (read from the machine's clock around the call); the
script takes a few seconds of host time. Run:

    python benches/facilities.py [--machine qs20] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics

from cellsim import Machine, ppe, spu, sync
from cellsim.ppe import (
    pthread_create,
    pthread_join,
    spe_context_create,
    spe_context_run,
    spe_in_mbox_write,
    spe_mfcio_put,
    spe_mfcio_tag_status_read,
    spe_out_mbox_wait,
    spe_program_load,
    spe_ps_area_get,
)

SPU_IN_MBOX = 0x400C  # problem-state offsets (architecture.md)
SIG_NOTIFY_1 = 0x1400C
REPEAT = 20


def wait_tag(tag: int = 0) -> None:
    spu.mfc_write_tag_mask(1 << tag)
    spu.mfc_read_tag_status_all()


def dma_blocking(m: Machine, to_memory: bool, op: str) -> float:
    """Mean ns of a blocking 128-byte get or put (issue to tag status)."""
    times: list[float] = []
    target = m.alloc(4096, align=128)

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = spu.ls_alloc(128, align=128)
        ea = int(target) if to_memory else Machine.ls_ea(1) + 0x30000
        dma = spu.mfc_get if op == "get" else spu.mfc_put
        for _ in range(REPEAT):
            t0 = m.now_ns
            dma(int(buf), ea, 128, 0)
            wait_tag()
            times.append(m.now_ns - t0)

    m.load(0, prog)
    m.run()
    return statistics.mean(times)


def dma_list_vs_single(m: Machine) -> tuple[float, float]:
    """ns to get 16 x 128 B from memory: one DMA list, and 16 DMAs on one tag."""
    src = m.alloc(16 * 4096, align=128)
    out: list[float] = []

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = spu.ls_alloc(16 * 128, align=128)
        lst = spu.ls_alloc(16 * 8, align=8)
        size = spu.mfc_list(int(lst), [(128, (int(src) + i * 4096) & 0xFFFF_FFFF) for i in range(16)])
        t0 = m.now_ns
        spu.mfc_getl(int(buf), int(src), int(lst), size, 0)
        wait_tag()
        out.append(m.now_ns - t0)
        t0 = m.now_ns
        for i in range(16):
            spu.mfc_get(int(buf) + i * 128, int(src) + i * 4096, 128, 0)
        wait_tag()
        out.append(m.now_ns - t0)

    m.load(0, prog)
    m.run()
    return out[0], out[1]


def mailbox_ppe_spe(m: Machine) -> tuple[float, float]:
    """Mean ns of a PPE -> SPE message (PPE write to SPU read returning) and back."""
    down: list[float] = []
    up: list[float] = []
    sent = [0.0]

    def echo(speid: int, argp: int, envp: int) -> None:
        for _ in range(REPEAT):
            v = spu.spu_read_in_mbox()
            down.append(m.now_ns - sent[0])
            spu.compute(2000)  # the PPE waits in its read by now
            sent[0] = m.now_ns
            spu.spu_write_out_mbox(v)

    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, echo)
        t = pthread_create(spe_context_run, ctx)
        ppe.compute(m.ns_to_cycles(6000))  # the SPU waits in its read by now
        for i in range(REPEAT):
            sent[0] = m.now_ns
            spe_in_mbox_write(ctx, [i])
            echoed = spe_out_mbox_wait(ctx)
            up.append(m.now_ns - sent[0])
            if echoed != i:  # the measurement is of a message that arrived whole
                raise RuntimeError(f"mailbox echo: sent {i}, got {echoed}")
            ppe.compute(2000)
        pthread_join(t)

    m.run(main)
    return statistics.mean(down), statistics.mean(up)


def spu_spu(m: Machine, kind: str) -> float:
    """Mean ns of an SPU-SPU mailbox round trip, or of a one-way signal."""
    times: list[float] = []
    areas: list[int] = []

    def word() -> spu.LsBuffer:
        return spu.ls_alloc(16, align=16)

    def ping(speid: int, argp: int, envp: int) -> None:
        w = word()
        for i in range(REPEAT):
            w.array(">u4")[3] = i + 1
            t0 = m.now_ns
            spu.mfc_put(int(w) + 12, areas[1] + SPU_IN_MBOX, 4, 0)
            spu.spu_read_in_mbox()
            times.append(m.now_ns - t0)

    def pong(speid: int, argp: int, envp: int) -> None:
        w = word()
        for _ in range(REPEAT):
            w.array(">u4")[3] = spu.spu_read_in_mbox()
            spu.mfc_put(int(w) + 12, areas[0] + SPU_IN_MBOX, 4, 0)
            wait_tag()

    sent = [0.0]

    def signaller(speid: int, argp: int, envp: int) -> None:
        w = word()
        for i in range(REPEAT):
            spu.compute(3000)  # the receiver waits in its read by now
            w.array(">u4")[3] = i + 1
            sent[0] = m.now_ns
            spu.mfc_sndsig(int(w) + 12, areas[1] + SIG_NOTIFY_1, 0)
            wait_tag()

    def receiver(speid: int, argp: int, envp: int) -> None:
        for _ in range(REPEAT):
            spu.spu_read_signal1()
            times.append(m.now_ns - sent[0])

    def main() -> None:
        ctxs = [spe_context_create() for _ in range(2)]
        areas.extend(spe_ps_area_get(c) for c in ctxs)
        progs = (ping, pong) if kind == "mailbox" else (signaller, receiver)
        for c, p in zip(ctxs, progs, strict=True):
            spe_program_load(c, p)
        threads = [pthread_create(spe_context_run, c) for c in ctxs]
        for t in threads:
            pthread_join(t)

    m.run(main)
    return statistics.mean(times)


def lock_line(m: Machine, spes: int) -> tuple[float, float]:
    """Mean ns per increment of one counter by `spes` SPEs with getllar/putllc,
    and the retries per increment."""
    counter = m.alloc(128, align=128)
    n = 200
    retries = [0]

    def prog(speid: int, argp: int, envp: int) -> None:
        line = spu.ls_alloc(128, align=128)
        for _ in range(n):
            while True:
                spu.mfc_getllar(int(line), argp)
                spu.mfc_read_atomic_status()
                line.array(">u4")[0] += 1
                spu.mfc_putllc(int(line), argp)
                if not spu.mfc_read_atomic_status() & spu.MFC_PUTLLC_STATUS:
                    break
                retries[0] += 1

    for s in range(spes):
        m.load(s, prog, argp=int(counter))
    r = m.run()
    assert int(counter.array(">u4")[0]) == spes * n
    return r.ns / (spes * n), retries[0] / (spes * n)


def mutex_and_barrier(m: Machine) -> tuple[float, float]:
    """ns of an uncontended Mutex lock + unlock, and of an 8-SPE Barrier wait
    (from the last SPE's arrival until the last SPE leaves)."""
    lock = m.alloc(128, align=128)
    bar = m.alloc(128, align=128)
    pair: list[float] = []
    arrive: list[float] = []
    leave: list[float] = []

    def prog(speid: int, argp: int, envp: int) -> None:
        if speid == 0:
            mx = sync.Mutex(int(lock))
            for _ in range(REPEAT):
                t0 = m.now_ns
                mx.lock()
                mx.unlock()
                pair.append(m.now_ns - t0)
        b = sync.Barrier(int(bar), 8)
        spu.compute(1000 * (speid + 1))
        arrive.append(m.now_ns)
        b.wait()
        leave.append(m.now_ns)

    for s in range(8):
        m.load(s, prog)
    m.run()
    return statistics.mean(pair), max(leave) - max(arrive)


def proxy_put(m: Machine) -> float:
    """ns of a 128-byte proxy put issued by the PPE into an SPE's local store,
    from the command to the tag status read returning."""
    src = m.alloc(128, align=128)
    times: list[float] = []

    def idle(speid: int, argp: int, envp: int) -> None:
        spu.spu_read_in_mbox()

    def main() -> None:
        ctx = spe_context_create()
        spe_program_load(ctx, idle)
        t = pthread_create(spe_context_run, ctx)
        for _ in range(REPEAT):
            t0 = m.now_ns
            spe_mfcio_put(ctx, 0x30000, int(src), 128, 0)
            spe_mfcio_tag_status_read(ctx, 1)
            times.append(m.now_ns - t0)
        spe_in_mbox_write(ctx, [0])
        pthread_join(t)

    m.run(main)
    return statistics.mean(times)


def measure(machine: str, seed: int) -> list[dict[str, object]]:
    def fresh() -> Machine:
        return Machine(machine, seed=seed)

    rows: list[dict[str, object]] = []

    def row(facility: str, ns: float, published: str = "", note: str = "") -> None:
        rows.append(
            {"facility": facility, "simulated_ns": round(ns, 1), "published": published, "note": note}
        )

    row("DMA put 128 B to another LS, blocking", dma_blocking(fresh(), False, "put"), "90.6 ns (Table 1)")
    row("DMA get 128 B from another LS, blocking", dma_blocking(fresh(), False, "get"), "91 ns (Fig 4a)")
    row("DMA put 128 B to memory, blocking", dma_blocking(fresh(), True, "put"), "91 ns (Fig 4a)")
    row("DMA get 128 B from memory, blocking", dma_blocking(fresh(), True, "get"), "< 100 ns (Fig 4a)")
    lst, single = dma_list_vs_single(fresh())
    row("DMA list, 16 x 128 B from memory", lst, note=f"16 single DMAs on one tag: {single:.1f} ns")
    down, up = mailbox_ppe_spe(fresh())
    row("mailbox PPE -> SPE (write to SPU read)", down, "as little as 150 ns")
    row("mailbox SPE -> PPE (SPU write to PPE read)", up, "as little as 150 ns")
    row(
        "mailbox SPU-SPU round trip (puts to the problem-state area)",
        spu_spu(fresh(), "mailbox"),
        "about 300 ns",
    )
    row("signal SPE -> SPE, sndsig to the SPU read returning", spu_spu(fresh(), "signal"))
    ns, _ = lock_line(fresh(), 1)
    row("lock-line increment (getllar + putllc), one SPE", ns)
    ns, retries = lock_line(fresh(), 8)
    row(
        "lock-line increment, 8 SPEs on one counter (per increment)",
        ns,
        note=f"{retries:.2f} retries per increment",
    )
    mx, bar = mutex_and_barrier(fresh())
    row("sync.Mutex lock + unlock, uncontended", mx)
    row("sync.Barrier, 8 SPEs: last arrival to last departure", bar)
    row("proxy put 128 B by the PPE into a local store", proxy_put(fresh()))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machine", default="qs20")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    rows = measure(args.machine, args.seed)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    width = max(len(str(r["facility"])) for r in rows)
    print(f"{'facility':<{width}}  {'simulated':>10}  published (Kistler et al. 2006)")
    for r in rows:
        extra = f"  [{r['note']}]" if r["note"] else ""
        print(f"{r['facility']:<{width}}  {r['simulated_ns']:>7.1f} ns  {r['published']}{extra}")


if __name__ == "__main__":
    main()
