"""A PPE program starting 8 SPE programs that share one atomic counter.

The PPE allocates a 128-byte lock line in main memory, creates eight SPE
contexts, loads the same SPE program into each and runs every context in its
own PPE thread (``spe_context_run`` blocks its caller until the SPE program
stops, as in libspe2, hence pthreads). Each SPE program increments the
counter 10,000 times with the atomic unit's loop: ``mfc_getllar`` (get the
line and reserve it), add one in the local store, ``mfc_putllc`` (put it back
only if the reservation still holds), and retry when the putllc failed because
another SPE wrote the line in between. Its exit value is its retry count.

No increment is lost, whatever the seed (the seed changes which physical SPE
runs each program): the count is exactly 80,000. The retries show the
contention: most of the time several SPEs hold a reservation on the line and
only the first putllc on the command bus wins.

This is slow-ish in Python: 80,000 increments plus their ~400,000 retries
are about 2 million SPU calls, about 4 s of host time (``--increments``
makes it shorter).

Run: python examples/atomic_counter.py [--seed N] [--increments N]
"""

from __future__ import annotations

import argparse

from cellsim import Machine
from cellsim.ppe import pthread_create, pthread_join, spe_context_create, spe_context_run, spe_program_load
from cellsim.spu import (
    MFC_PUTLLC_STATUS,
    ls_alloc,
    mfc_getllar,
    mfc_putllc,
    mfc_read_atomic_status,
)

SPES = 8
INCREMENTS = 10_000


def spe_main(speid: int, argp: int, envp: int) -> int:
    """``envp`` increments of the big-endian u32 counter at ``argp``; returns the retries."""
    line = ls_alloc(128, align=128)  # the lock line's copy in the local store
    words = line.array(">u4")
    retries = 0
    for _ in range(envp):
        while True:
            mfc_getllar(line, argp)  # get the line and reserve it
            mfc_read_atomic_status()
            words[0] += 1
            mfc_putllc(line, argp)  # put it back if nobody wrote it meanwhile
            if not mfc_read_atomic_status() & MFC_PUTLLC_STATUS:
                break
            retries += 1  # the reservation was lost: try again
    return retries


def ppe_main(m: Machine, increments: int) -> dict:
    counter = m.alloc(128, align=128)  # one lock line, zero-filled

    def run_context(ctx):  # the body of each pthread
        return spe_context_run(ctx, argp=counter, envp=increments).exit_code

    threads = []
    for _ in range(SPES):
        ctx = spe_context_create()
        spe_program_load(ctx, spe_main)
        threads.append(pthread_create(run_context, ctx))
    retries = [pthread_join(t) for t in threads]
    return {"count": int(counter.array(">u4")[0]), "retries": retries}


def run(seed: int = 0, increments: int = INCREMENTS) -> tuple[dict, Machine, float]:
    """Runs the program; returns (counts, machine, simulated ns)."""
    m = Machine("qs20", seed=seed)
    r = m.run(ppe_main, m, increments)
    out = r.value
    assert out["count"] == SPES * increments, f"lost increments: count={out['count']}"
    return out, m, r.ns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--increments", type=int, default=INCREMENTS, help="per SPE")
    args = ap.parse_args()
    out, m, ns = run(args.seed, args.increments)
    total = SPES * args.increments
    retries = sum(out["retries"])
    print(f"{SPES} SPEs x {args.increments} atomic increments of one counter ({m.name}, seed {args.seed})")
    print(f"count={out['count']}")
    print(f"simulated time: {ns / 1000:.1f} us ({ns / total:.1f} ns per increment)")
    print(f"putllc retries: {retries} ({retries / total:.2f} per increment)")
    for spe, (phys, r) in enumerate(zip(m.placement[:SPES], out["retries"], strict=True)):
        print(f"  SPE {spe} (physical {phys}): {r} retries")


if __name__ == "__main__":
    main()
