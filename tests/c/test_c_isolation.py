"""C programs in their own processes (docs/c-programs.md, "The process boundary"):
a fault in user C code stops that program, never the simulator; spe_context_run
reports it to the PPU program as libspe2 does; the report names the SPE, the
signal and the C line; every SPE has its own statics and C library state; a
rebuilt app runs its new code; Ctrl-C and the host-time limit stop C code that
makes no SDK call."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from cellsim import Machine
from cellsim.c import CProgram, build
from cellsim.exceptions import ProgramCrashError, RunawayError, UsageError
from cellsim.tools.cli import cli

PPU = r"""
#include <errno.h>
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
extern spe_program_handle_t good, bad;
static void *run(void *arg) {
    spe_context_ptr_t ctx = arg;
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_stop_info_t stop;
    int rc = spe_context_run(ctx, &entry, 0, 0, 0, &stop);
    printf("rc=%d errno=%s reason=%u detail=%d\n", rc, rc ? strerror(errno) : "-", stop.stop_reason,
           stop.result.spe_exit_code);
    return 0;
}
int main(void) {
    spe_context_ptr_t a = spe_context_create(0, 0), b = spe_context_create(0, 0);
    spe_program_load(a, &good);
    spe_program_load(b, &bad);
    pthread_t ta, tb;
    pthread_create(&ta, 0, run, a);
    pthread_create(&tb, 0, run, b);
    pthread_join(ta, 0);
    pthread_join(tb, 0);
    printf("the PPU program goes on\n");
    return 0;
}
"""

GOOD = r"""
#include <cellsim.h>
int main(unsigned long long s, unsigned long long a, unsigned long long e) {
    for (int i = 0; i < 20; i++)
        spu_compute(1000);
    return 7;
}
"""

SPU_HEAD = r"""#include <cellsim.h>
#include <stdlib.h>
#include <unistd.h>
int main(unsigned long long s, unsigned long long a, unsigned long long e) {
    spu_compute(100);
"""


def _app(tmp: Path, bad_body: str, ppu: str = PPU, name: str = "app") -> Path:
    (tmp / "ppu.c").write_text(ppu)
    (tmp / "good.c").write_text(GOOD)
    (tmp / "bad.c").write_text(SPU_HEAD + bad_body + "\n    return 0;\n}\n")
    return build([tmp / "ppu.c"], {"good": [tmp / "good.c"], "bad": [tmp / "bad.c"]}, tmp / name)


def _exec(app: Path, capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["exec", str(app), *args], standalone_mode=False)
    out = capfd.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("body", "sig", "reason", "err", "detail", "fault_line"),
    [
        ("    volatile int *p = 0;\n    *p = 1;", "SIGSEGV", 4, "Bad address", 0x20, 7),
        ("    abort();", "SIGABRT", 3, "Input/output error", 0x04, 6),
        (
            "    volatile int z = 0;\n    volatile int r = 100 / z;",
            "SIGFPE",
            3,
            "Input/output error",
            0x04,
            7,
        ),
    ],
)
def test_a_crashing_spu_program_stops_its_spe_and_spe_context_run_says_so(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    body: str,
    sig: str,
    reason: int,
    err: str,
    detail: int,
    fault_line: int,
) -> None:
    app = _app(tmp_path, body)
    code, out, errs = _exec(app, capfd)
    assert code == 0, errs
    # the other SPE finished, the PPU program got libspe2's error and went on
    assert "rc=0 errno=- reason=1 detail=7" in out
    assert f"rc=-1 errno={err} reason={reason} detail={detail}" in out
    assert "the PPU program goes on" in out
    summary = [line for line in errs.splitlines() if "C program bad" in line]
    assert len(summary) == 1, errs
    assert f"SPE 1 (C program bad) was killed by {sig}" in summary[0]
    assert f"bad.c:{fault_line} (in main)" in summary[0]
    assert "last SDK call was at" in summary[0] and "bad.c:5" in summary[0]


def test_exit_status_of_a_spu_process_is_its_exit_code(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    app = _app(tmp_path, "    _exit(3);")
    code, out, errs = _exec(app, capfd)
    assert code == 0, errs
    assert "rc=0 errno=- reason=1 detail=3" in out
    assert "killed" not in errs


def test_a_crashing_ppu_program_stops_the_run_with_its_signal_and_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ppu = r"""#include <libspe2.h>
#include <stdio.h>
int main(void) {
    printf("before\n");
    spe_context_ptr_t a = spe_context_create(0, 0);
    volatile char *p = (char *)16;
    *p = 1;
    return a != 0;
}
"""
    app = _app(tmp_path, "", ppu=ppu)
    code, out, errs = _exec(app, capfd)
    assert code == 128 + signal.SIGSEGV
    assert out == "before\n"
    assert "the PPU program (C program ppu) was killed by SIGSEGV" in errs
    assert "address 0x10" in errs and "ppu.c:7 (in main)" in errs and "ppu.c:5" in errs
    assert "Traceback" not in errs


def test_a_crash_of_a_loaded_c_program_stops_the_run_cleanly(tmp_path: Path) -> None:
    src = tmp_path / "prog.c"
    src.write_text(
        SPU_HEAD + "    volatile char *p = (volatile char *)&e;\n    for (;;) { *p = 1; p += 4096; }\n}\n"
    )
    prog = CProgram(build([], {"prog": [src]}, tmp_path / "app"), "prog")
    m = Machine("qs20-1chip", seed=0)
    m.load(0, prog)
    m.load(1, CProgram(build([], {"good": [_write(tmp_path / "good.c", GOOD)]}, tmp_path / "g"), "good"))
    with pytest.raises(ProgramCrashError) as e:
        m.run()
    assert e.value.who == "SPE 0" and e.value.signal == "SIGSEGV"
    assert e.value.location is not None and "prog.c:7" in e.value.location
    assert "SPE 0 (C program prog) was killed by SIGSEGV" in str(e.value)
    # the simulator is fine: a new machine runs the same program
    m2 = Machine("qs20-1chip", seed=0)
    m2.load(1, CProgram(tmp_path / "g", "good"))
    assert [p.exit_code for p in m2.run().programs] == [7]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_stack_overflow_is_reported_not_fatal(tmp_path: Path) -> None:
    src = _write(
        tmp_path / "deep.c",
        "#include <cellsim.h>\nstatic int down(volatile char *p, int n) { volatile char big[4096];\n"
        "  big[0] = *p; return n ? down(big, n - 1) + big[0] : 0; }\n"
        "int main(unsigned long long s, unsigned long long a, unsigned long long e) {\n"
        "  spu_compute(1);\n  char c = 0;\n  return down(&c, 1 << 20);\n}\n",
    )
    m = Machine("qs20-1chip", seed=0)
    m.load(0, CProgram(build([], {"deep": [src]}, tmp_path / "app"), "deep"))
    with pytest.raises(ProgramCrashError, match="SIGSEGV") as e:
        m.run()
    assert e.value.last_call is not None and "deep.c:5" in e.value.last_call


def test_every_spe_has_its_own_statics_and_c_library(tmp_path: Path) -> None:
    # rand() without srand: each SPE's C library starts from the same state; a
    # write past one SPE's .bss is not seen by another
    src = _write(
        tmp_path / "own.c",
        "#include <cellsim.h>\n#include <stdlib.h>\nstatic volatile char tiny[16];\n"
        "int main(unsigned long long s, unsigned long long a, unsigned long long e) {\n"
        "  int r = rand() % 1000;\n  spu_compute(10);\n"
        "  if (s == 0) { tiny[15] = 9; tiny[16 + 100] = 42; }\n  spu_compute(10);\n"
        "  return s == 0 ? r : r * 1000 + tiny[15] * 100 + tiny[16 + 100];\n}\n",
    )
    prog = CProgram(build([], {"own": [src]}, tmp_path / "app"), "own")
    m = Machine("qs20-1chip", seed=0)
    m.load(0, prog)
    m.load(1, prog)
    codes = [p.exit_code for p in m.run().programs]
    assert codes[1] == codes[0] * 1000  # same first rand(), none of SPE 0's bytes


def test_a_rebuilt_app_runs_its_new_code(tmp_path: Path) -> None:
    for value in (11, 22):
        src = _write(
            tmp_path / "v.c",
            "int main(unsigned long long s, unsigned long long a, unsigned long long e)"
            f" {{ return {value}; }}\n",
        )
        app = build([], {"v": [src]}, tmp_path / "app")
        m = Machine("qs20-1chip", seed=0)
        m.load(0, CProgram(app, "v"))
        assert [p.exit_code for p in m.run().programs] == [value]


def test_an_app_from_an_older_cellsim_or_a_broken_manifest_is_a_usage_error(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "cellsim-app.json").write_text("{not json")
    with pytest.raises(UsageError, match="not a readable app manifest"):
        CProgram(app, "x")
    (app / "cellsim-app.json").write_text('{"format": 1, "ppu": null, "spu": {"x": "spu-x.so"}}')
    with pytest.raises(UsageError, match="another version of cellsim"):
        CProgram(app, "x")
    (app / "cellsim-app.json").write_text('{"format": 2, "spu": [1]}')
    with pytest.raises(UsageError, match="not an app manifest"):
        CProgram(app, "x")


SPIN = "    for (volatile unsigned long i = 0;; i++) {}"


def test_the_wall_limit_stops_c_code_that_makes_no_call_and_says_what_it_did(tmp_path: Path) -> None:
    src = _write(tmp_path / "spin.c", SPU_HEAD + SPIN + "\n}\n")
    m = Machine("qs20-1chip", seed=0)
    m.load(0, CProgram(build([], {"spin": [src]}, tmp_path / "app"), "spin"))
    with pytest.raises(RunawayError) as e:
        m.run(wall_limit_s=0.3)
    assert "host-time limit" in str(e.value)
    assert ("SPE 0", "running its own C code since its last SDK call at " + str(src) + ":5") in [
        (w.split(" (")[0], d) for w, d in e.value.activity
    ] or any("running its own C code" in d and "spin.c:5" in d for _, d in e.value.activity)


def test_exec_wall_limit_and_time_limit(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    app = _app(tmp_path, SPIN)
    code, _, errs = _exec(app, capfd, "--wall-limit", "0.5")
    assert code == 1
    assert "host-time limit reached" in errs and "running its own C code" in errs and "bad.c:5" in errs
    loop = "    for (;;) spu_compute(1000);"
    app2 = _app(tmp_path, loop, name="app2")
    code, _, errs = _exec(app2, capfd, "--time-limit", "0.0001")
    assert code == 1 and "simulated-time limit" in errs


def test_ctrl_c_stops_c_code_that_makes_no_call(tmp_path: Path) -> None:
    src = _write(tmp_path / "spin.c", SPU_HEAD + SPIN + "\n}\n")
    m = Machine("qs20-1chip", seed=0)
    m.load(0, CProgram(build([], {"spin": [src]}, tmp_path / "app"), "spin"))
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            m.run()
    finally:
        timer.cancel()


def test_a_bad_mfc_command_from_an_spu_names_that_spe(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """An opcode the MFC does not have, written by an SPU program, is that SPE's error (it was
    reported "on PPE")."""
    (tmp_path / "ppu.c").write_text(PPU)
    (tmp_path / "good.c").write_text(GOOD)
    bad = r"""#include <spu_mfcio.h>
static char buf[128] __attribute__((aligned(128)));
int main(unsigned long long s, unsigned long long a, unsigned long long e) {
    spu_mfcdma64(buf, 0, 0x10000, 128, 3, 0x77);
    return 0;
}
"""
    (tmp_path / "bad.c").write_text(bad)
    app = build(
        [tmp_path / "ppu.c"], {"good": [tmp_path / "good.c"], "bad": [tmp_path / "bad.c"]}, tmp_path / "app"
    )
    code, _, err = _exec(app, capfd)
    assert code == 1
    assert "MFC error on SPE 1" in err and "opcode 0x77" in err and "bad.c:4" in err, err
