"""Host cost of one SDK call made by a C program (``cellsim cc`` / ``cellsim exec``).

Builds a small app whose SPU programs each make ``--calls`` cheap SDK calls in a loop
(``spu_compute(1)``, or ``spu_readchcnt(SPU_RdInMbox)``), runs it ``--rounds`` times and
prints, for the best round, the calls per host second and the host microseconds per
call (each call is one request to the simulator and its reply). Numbers to compare
between builds, never asserted in tests.

    python benches/c_calls.py [--calls 20000] [--spes 1] [--rounds 3] [--call compute]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from _args import at_least  # this directory

from cellsim.c import build, run_app

SPU = r"""
#include <spu_mfcio.h>
#include <cellsim.h>
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    (void)speid; (void)argp;
    unsigned int sum = 0;
    for (unsigned long long i = 0; i < envp; i++) {
#ifdef CALL_CHCNT
        sum += spu_readchcnt(SPU_RdInMbox);
#else
        spu_compute(1);
#endif
    }
    return sum & 1;
}
"""

PPU = r"""
#include <libspe2.h>
#include <pthread.h>
#include <stdlib.h>
extern spe_program_handle_t worker;
static unsigned long long calls;
static void *run(void *arg) {
    spe_context_ptr_t ctx = arg;
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx, &entry, 0, 0, (void *)calls, 0);
    return 0;
}
int main(int argc, char **argv) {
    int spes = atoi(argv[1]);
    calls = strtoull(argv[2], 0, 10);
    spe_context_ptr_t ctx[16];
    pthread_t t[16];
    for (int i = 0; i < spes; i++) {
        ctx[i] = spe_context_create(0, 0);
        spe_program_load(ctx[i], &worker);
        pthread_create(&t[i], 0, run, ctx[i]);
    }
    for (int i = 0; i < spes; i++)
        pthread_join(t[i], 0);
    return 0;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=at_least(1), default=20000, help="SDK calls per SPE (default 20000)")
    ap.add_argument("--spes", type=at_least(1), default=1, help="SPEs making them, at most 16 (default 1)")
    ap.add_argument("--rounds", type=at_least(1), default=3, help="runs; the best is reported (default 3)")
    ap.add_argument(
        "--call", choices=["compute", "chcnt"], default="compute", help="the call (default compute)"
    )
    args = ap.parse_args()
    if args.spes > 16:
        ap.error("--spes: at most 16")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "spu.c").write_text(SPU)
        (d / "ppu.c").write_text(PPU)
        flags = ["-DCALL_CHCNT"] if args.call == "chcnt" else []
        app = build([d / "ppu.c"], {"worker": [d / "spu.c"]}, d / "app", cflags=flags)
        machine = "qs22" if args.spes > 8 else "qs20"
        best = float("inf")
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            run_app(app, machine=machine, argv=[str(args.spes), str(args.calls)])
            best = min(best, time.perf_counter() - t0)
    calls = args.spes * args.calls
    record = {
        "call": args.call,
        "spes": args.spes,
        "calls": calls,
        "best_s": round(best, 4),
        "calls_per_s": round(calls / best),
        "us_per_call": round(best / calls * 1e6, 2),
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
