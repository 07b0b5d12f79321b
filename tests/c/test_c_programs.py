"""C programs on the SDK headers (``cellsim cc``, ``cellsim exec``, ``CProgram``):
the examples' golden output, the same cycles as their Python twins, the
intrinsics against a scalar reference, compute-time modes and errors with the
C line. A missing C compiler fails these tests (it is a CI requirement), never
skips them."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from cellsim import Machine
from cellsim.c import CProgram, build, compiler, include_dir, run_app
from cellsim.exceptions import DeadlockError, MfcError, UsageError
from cellsim.ppe import pthread_create, pthread_join, spe_context_create, spe_context_run, spe_program_load
from cellsim.spu import (
    ls_alloc,
    mfc_getl,
    mfc_list,
    mfc_put,
    mfc_read_tag_status_all,
    mfc_write_tag_mask,
)
from cellsim.tools.cli import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "c"
NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "cc.args").exists())
sys.path.insert(0, str(ROOT / "examples"))


def _build_example(name: str, out: Path) -> Path:
    words = (EXAMPLES / name / "cc.args").read_text().split()
    ppu = [str(EXAMPLES / name / w) for w in words if w.endswith(".c") and "=" not in w]
    spus: dict[str, list[str]] = {}
    for i, w in enumerate(words):
        if w == "--spu":
            n, _, f = words[i + 1].partition("=")
            spus.setdefault(n, []).append(str(EXAMPLES / name / f))
    return build(ppu, spus, out / name)


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("apps")
    with ThreadPoolExecutor(2) as pool:  # the compilers run in parallel
        return dict(zip(NAMES, pool.map(lambda n: _build_example(n, out), NAMES), strict=True))


def _spu_only(tmp_path: Path, source: str, name: str = "prog", **kw: bool) -> CProgram:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    return CProgram(build([], {name: [src]}, tmp_path / f"app-{name}", **kw), name)


def test_a_compiler_is_there_and_the_headers_ship() -> None:
    assert compiler()
    for h in ("spu_mfcio.h", "spu_intrinsics.h", "libspe2.h", "libsync.h", "ppu_intrinsics.h", "cellsim.h"):
        assert (include_dir() / h).is_file(), h


def test_the_examples_are_there() -> None:
    assert {"double_buffer", "pingpong", "atomic_counter", "list_gather", "events"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_example_prints_its_golden_output(
    name: str, apps: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["exec", str(apps[name])], standalone_mode=False)
    out = capfd.readouterr()
    assert code == 0, out.err
    assert out.out + out.err == (EXAMPLES / name / "expected.out").read_text()


def test_cellsim_exec_is_a_command_with_the_programs_exit_status(apps: dict[str, Path]) -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "cellsim.tools.cli",
            "exec",
            str(apps["atomic_counter"]),
            "--seed",
            "3",
            "--",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "8 SPEs x 5 atomic increments: count=40 (none lost)" in p.stdout
    assert "(seed 3)" in p.stderr and "compute time: spu_compute() annotations only" in p.stderr
    inc = subprocess.run(
        [sys.executable, "-m", "cellsim.tools.cli", "cc", "--include-dir"], capture_output=True, text=True
    )
    assert Path(inc.stdout.strip()) == include_dir()


# -- the same cycles as the Python twins -------------------------------------------------------


def test_double_buffer_runs_in_the_cycles_of_its_python_twin(apps: dict[str, Path]) -> None:
    import double_buffer as py

    def run(program: object, order: str) -> tuple[int, list[int | None]]:
        m = Machine("qs20", seed=1)
        data, out = m.alloc(py.FLOATS * 4), m.alloc(py.FLOATS * 4)
        share = py.CHUNKS_PER_SPE * py.CHUNK
        control = py.CONTROL.newbyteorder(order)  # C code reads its data in the host's order
        for spe in range(py.SPES):
            ctl = m.alloc(control.itemsize)
            ctl.array(control)[0] = (int(data) + spe * share, int(out) + spe * share, py.CHUNKS_PER_SPE, 0)
            m.load(spe, program, argp=ctl)  # type: ignore[arg-type]
        r = m.run()
        return r.cycles, [p.end_cycle for p in r.programs]

    assert run(CProgram(apps["double_buffer"], "square"), "<") == run(py.spe_main, ">")


def test_events_runs_in_the_cycles_of_its_python_twin(apps: dict[str, Path]) -> None:
    """The event example: the C SPU program under the Python PPE program, the Python
    twin, and the whole C app (its PPU side too) end at the same cycle."""
    import events as py

    cycles, log = py.run(py.spu_main)
    assert py.run(CProgram(apps["events"], "stream")) == (cycles, log)
    assert run_app(apps["events"]).run.cycles == cycles
    assert "streamed" in log[0] and "ended" in log[1]


def test_atomic_counter_runs_in_the_cycles_of_its_python_twin(apps: dict[str, Path]) -> None:
    import atomic_counter as py

    def run(program: object) -> tuple[int, int]:
        m = Machine("qs20", seed=0)

        def main() -> int:
            counter = m.alloc(128, align=128)

            def body(ctx: object) -> int:
                return spe_context_run(ctx, argp=counter, envp=40).exit_code  # type: ignore[arg-type]

            threads = []
            for _ in range(8):
                ctx = spe_context_create()
                spe_program_load(ctx, program)
                threads.append(pthread_create(body, ctx))
            for t in threads:
                pthread_join(t)
            return int(counter.array("<u4" if isinstance(program, CProgram) else ">u4")[0])

        r = m.run(main)
        return r.cycles, r.value

    python = run(py.spe_main)
    assert python[1] == 320
    assert run(CProgram(apps["atomic_counter"], "counter_spu")) == python
    # the whole C app, its PPU main included, ends on the same cycle
    assert run_app(apps["atomic_counter"], argv=["40"]).run.cycles == python[0]


def test_list_gather_runs_in_the_cycles_of_its_python_twin(apps: dict[str, Path]) -> None:
    blocks, block, table_blocks = 64, 128, 4096

    def python_gather(speid: int, argp: int, envp: int) -> int:
        table, result, first, stride = envp, argp, speid * 17, 61
        lst = ls_alloc(8 * blocks, align=8)
        buf = ls_alloc(blocks * block, align=128)
        elements = [(block, table + ((first + i * stride) % table_blocks) * block) for i in range(blocks)]
        n = mfc_list(lst, elements)
        mfc_write_tag_mask(1)  # as the C program: its control block's get, then the list
        mfc_read_tag_status_all()
        mfc_getl(buf, table, lst, n, 0)
        mfc_read_tag_status_all()
        total = int(buf.array("<u4").sum())
        out = ls_alloc(16, align=16)
        out.array("<u8")[0] = total
        from cellsim.spu import compute

        compute(blocks * block // 16)
        mfc_put(out, result, 16, 0)
        mfc_read_tag_status_all()
        return 0

    def run(c: bool) -> tuple[int, list[int]]:
        m = Machine("qs20", seed=0)
        table = m.alloc(table_blocks * block)
        table.array("<u4")[:] = np.arange(table_blocks * block // 4)
        results = [m.alloc(128) for _ in range(4)]
        for s in range(4):
            if c:
                g = m.alloc(32)
                g.array("<u8")[:2] = (int(table), int(results[s]))
                g.array("<u4")[4:6] = (17 * s, 61)
                m.load(s, CProgram(apps["list_gather"], "gather_spu"), argp=g)
            else:
                m.load(s, python_gather, argp=results[s], envp=table)
        r = m.run()
        return r.cycles, [int(x.array("<u8")[0]) for x in results]

    c_cycles, c_sums = run(True)
    py_cycles, py_sums = run(False)
    assert c_sums == py_sums
    # the C program fetches its control block first (one 32-byte get and its wait)
    assert c_cycles > py_cycles


# -- intrinsics and compute time -------------------------------------------------------------


def test_every_intrinsic_matches_the_scalar_reference(tmp_path: Path) -> None:
    exe = tmp_path / "check"
    src = ROOT / "tests" / "c" / "intrinsics_check.c"
    for opt in ("-O0", "-O2"):
        subprocess.run(
            [
                compiler(),
                opt,
                "-std=gnu11",
                "-D__SPU__",
                "-I",
                str(include_dir()),
                str(src),
                "-o",
                str(exe),
                "-lm",
            ],
            check=True,
        )
        out = subprocess.run([str(exe)], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.endswith(" 0 failures\n"), out.stdout
    # with --count-intrinsics every intrinsic compiles to its cost too
    counted = [compiler(), "-c", "-std=gnu11", "-D__SPU__", "-DCELLSIM_COUNT_INTRINSICS", "-Werror"]
    subprocess.run([*counted, "-I", str(include_dir()), str(src), "-o", str(tmp_path / "c.o")], check=True)


KERNEL = """
#include <spu_intrinsics.h>
#include <spu_mfcio.h>
#include <cellsim.h>
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    vector float acc = spu_splats(0.0f), x = spu_splats(1.5f);  /* the SPU language's spelling */
    vec_uchar16 pat = spu_splats((unsigned char)3);
    for (int i = 0; i < 1000; i++) {
        acc = spu_madd(x, x, acc);     /* even */
        x = spu_shuffle(x, x, pat);    /* odd */
    }
    spu_compute(500);
    return (int)spu_extract(acc, 0);
}
"""


def test_compute_time_is_the_annotation_or_the_intrinsics_issue(tmp_path: Path) -> None:
    def cycles(prog: CProgram) -> int:
        m = Machine("qs20-1chip", seed=0)
        m.load(0, prog)
        return m.run().cycles

    plain = cycles(_spu_only(tmp_path, KERNEL, "plain"))
    counted = cycles(_spu_only(tmp_path, KERNEL, "counted", count_intrinsics=True))
    # 1000 madds (even) and 1000 shuffles (odd) dual-issue; the odd pipe also has
    # the 3 splats and the extract: max(1000, 1004)
    assert counted - plain == 1004


# -- errors, with the C line -----------------------------------------------------------------


def _run_spu(prog: CProgram, argp: int = 0) -> None:
    m = Machine("qs20-1chip", seed=0)
    m.load(0, prog, argp=argp)
    m.run()


def test_a_misaligned_dma_names_the_c_line(tmp_path: Path) -> None:
    src = """#include <spu_mfcio.h>
static char buf[256] __attribute__((aligned(128)));
int main(unsigned long long s, unsigned long long argp, unsigned long long e) {
    mfc_get(buf + 3, argp, 16, 0, 0, 0);
    return 0;
}
"""
    with pytest.raises(MfcError, match=r"in C at .*prog\.c:4\)") as e:
        _run_spu(_spu_only(tmp_path, src), argp=0x1000)
    assert e.value.kind


def test_a_bad_tag_and_a_host_heap_buffer_are_mfc_errors(tmp_path: Path) -> None:
    bad_tag = """#include <spu_mfcio.h>
static char buf[128] __attribute__((aligned(128)));
int main(unsigned long long s, unsigned long long argp, unsigned long long e) {
    mfc_get(buf, argp, 128, 40, 0, 0);
    return 0;
}
"""
    with pytest.raises(MfcError, match=r"tag.*in C at .*tag\.c:4\)"):
        _run_spu(_spu_only(tmp_path, bad_tag, "tag"), argp=0x1000)
    heap = """#include <spu_mfcio.h>
#include <string.h>
int main(unsigned long long s, unsigned long long argp, unsigned long long e) {
    char *buf = strdup("the C library's own allocation: the host's heap");
    mfc_get(buf, argp, 128, 0, 0, 0);
    return buf[0];
}
"""
    with pytest.raises(MfcError, match=r"not in the local store.*static.*in C at .*heap\.c:5\)"):
        _run_spu(_spu_only(tmp_path, heap, "heap"), argp=0x1000)


def test_statics_larger_than_the_local_store_overflow_it(tmp_path: Path) -> None:
    src = """static char big[300 * 1024] __attribute__((aligned(128)));
int main(unsigned long long s, unsigned long long argp, unsigned long long e) {
    big[argp] = 1;
    return big[argp / 2];
}
"""
    with pytest.raises(MfcError, match="does not fit in the local store") as e:
        _run_spu(_spu_only(tmp_path, src, "big"))
    assert e.value.kind == "ls_overflow"


def test_a_c_program_waiting_forever_is_a_deadlock(tmp_path: Path) -> None:
    src = """#include <spu_mfcio.h>
int main(unsigned long long s, unsigned long long argp, unsigned long long e) { return spu_read_in_mbox(); }
"""
    with pytest.raises(DeadlockError):
        _run_spu(_spu_only(tmp_path, src, "wait"))


def test_exit_ends_the_spu_program_and_each_spe_has_its_own_statics(tmp_path: Path) -> None:
    src = """#include <stdlib.h>
#include <spu_mfcio.h>
static int calls;
int main(unsigned long long speid, unsigned long long argp, unsigned long long e) {
    calls += 1 + (int)speid;
    spu_write_decrementer(100);  /* a call into the simulator: the other SPEs run meanwhile */
    if (speid == 1) exit(40 + calls);
    return calls;
}
"""
    prog = _spu_only(tmp_path, src, "statics")
    m = Machine("qs20-1chip", seed=0)
    for s in range(3):
        m.load(s, prog)
    r = m.run()
    assert [p.exit_code for p in r.programs] == [1, 42, 3]


def test_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not an app built by `cellsim cc`"):
        run_app(tmp_path)
    with pytest.raises(UsageError, match="without a directory"):
        build([], {"no/good": [str(tmp_path / "x.c")]}, tmp_path / "o")
    broken = tmp_path / "broken.c"
    broken.write_text("int main(void) { return nope; }\n")
    with pytest.raises(UsageError, match=r"(?s)the C compiler \(.*\) failed.*nope"):
        build([], {"b": [broken]}, tmp_path / "o2")


PPU_MISC = r"""
#include <errno.h>
#include <libspe2.h>
#include <cellsim.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

extern spe_program_handle_t lsa_spu;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int counter;

static void *bump(void *arg) {
    for (int i = 0; i < 10; i++) {
        pthread_mutex_lock(&lock);
        int v = counter;
        ppu_compute(50); /* the other thread runs meanwhile, and must wait for the lock */
        counter = v + 1;
        pthread_mutex_unlock(&lock);
    }
    return arg;
}

static void *run(void *ctx) {
    spe_context_run(ctx, NULL, 0, NULL, NULL, NULL);
    return NULL;
}

int main(int argc, char **argv) {
    pthread_t t[3];
    pthread_create(&t[0], NULL, bump, (void *)1);
    pthread_create(&t[1], NULL, bump, (void *)2);
    void *r0, *r1;
    pthread_join(t[0], &r0);
    pthread_join(t[1], &r1);

    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &lsa_spu);
    pthread_create(&t[2], NULL, run, ctx);
    unsigned int lsa;
    while (spe_out_mbox_read(ctx, &lsa, 1) == 0)
        ;
    unsigned int value = 1234;
    memcpy((char *)spe_ls_area_get(ctx) + lsa, &value, 4); /* straight into the local store */
    spe_in_mbox_write(ctx, &value, 1, SPE_MBOX_ALL_BLOCKING);
    while (spe_out_mbox_read(ctx, &value, 1) == 0)
        ;
    pthread_join(t[2], NULL);
    printf("counter=%d returns=%ld,%ld spu-saw=%u cpus=%d\n", counter, (long)r0, (long)r1, value,
           spe_cpu_info_get(SPE_COUNT_USABLE_SPES, -1));
    if (argc > 1) {
        spe_context_ptr_t other = spe_context_create(0, NULL);
        spe_program_handle_t *missing = spe_image_open(argv[1]); /* as libspe2: NULL, ENOENT */
        printf("%s: %s\n", argv[1], missing ? "found" : strerror(errno));
        spe_context_run(other, NULL, 0, NULL, NULL, NULL); /* nothing loaded */
    }
    return 0;
}
"""

SPU_LSA = r"""
#include <spu_mfcio.h>
#include <cellsim.h>
static unsigned int buf[4] __attribute__((aligned(16)));
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    spu_write_out_mbox(cellsim_lsa(buf));
    spu_read_in_mbox();
    spu_write_out_mbox(buf[0]);
    return 0;
}
"""


def test_ppu_threads_mutexes_and_the_local_store_through_spe_ls_area_get(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ppu.c").write_text(PPU_MISC)
    (tmp_path / "spu.c").write_text(SPU_LSA)
    app = build([tmp_path / "ppu.c"], {"lsa_spu": [tmp_path / "spu.c"]}, tmp_path / "app")
    r = run_app(app, machine="qs20-1chip")
    assert r.exit_code == 0
    assert capfd.readouterr().out == "counter=20 returns=1,2 spu-saw=1234 cpus=8\n"
    # a libspe2 call's error names the PPU's C line
    line = (
        PPU_MISC.splitlines().index(
            "        spe_context_run(other, NULL, 0, NULL, NULL, NULL); /* nothing loaded */"
        )
        + 1
    )
    with pytest.raises(UsageError, match=rf"no program loaded.*\(in C at .*ppu\.c:{line}\)"):
        run_app(app, machine="qs20-1chip", argv=["/no/such/program"])
    assert capfd.readouterr().out.endswith("/no/such/program: No such file or directory\n")


CHANNEL_DMA = r"""
#include <spu_mfcio.h>
static unsigned int buf[32] __attribute__((aligned(128)));
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
#if RAW
    spu_writech(MFC_LSA, cellsim_lsa(buf));
    spu_writech(MFC_EAH, mfc_ea2h(argp));
    spu_writech(MFC_EAL, mfc_ea2l(argp));
    spu_writech(MFC_Size, 64);
    spu_writech(MFC_TagID, 5);
    spu_writech(MFC_Cmd, MFC_GET_CMD);
    spu_mfcdma64(buf + 16, mfc_ea2h(argp + 64), mfc_ea2l(argp + 64), 64, 5, MFC_GET_CMD);
    spu_writech(MFC_WrTagMask, 1 << 5);
    spu_mfcstat(MFC_TAG_UPDATE_ALL);
#else
    mfc_get(buf, argp, 64, 5, 0, 0);
    mfc_get(buf + 16, argp + 64, 64, 5, 0, 0);
    mfc_write_tag_mask(1 << 5);
    mfc_read_tag_status_all();
#endif
    unsigned int s = 0;
    for (int i = 0; i < 32; i++) s += buf[i];
    return s;
}
"""


def test_raw_channel_dma_is_the_mfc_macros(tmp_path: Path) -> None:
    def run(raw: int) -> tuple[int, int | None]:
        src = "#include <cellsim.h>\n#define RAW " + str(raw) + "\n" + CHANNEL_DMA
        prog = _spu_only(tmp_path, src, f"raw{raw}")
        m = Machine("qs20-1chip", seed=0)
        data = m.alloc(128)
        data.array("<u4")[:] = np.arange(32)
        m.load(0, prog, argp=data)
        r = m.run()
        return r.cycles, r.programs[0].exit_code

    assert run(1) == run(0) == (run(0)[0], sum(range(32)))


def test_a_deadlocked_app_names_the_c_lines(tmp_path: Path) -> None:
    (tmp_path / "ppu.c").write_text(
        "#include <libspe2.h>\n"
        "int main(void) {\n"
        "    spe_context_ptr_t ctx = spe_context_create(0, NULL);\n"
        "    unsigned int v;\n"
        "    spe_out_intr_mbox_read(ctx, &v, 1, SPE_MBOX_ALL_BLOCKING);  /* nobody writes it */\n"
        "    return 0;\n"
        "}\n"
    )
    code = cli.main(
        ["cc", "-O0", "-DUNUSED=1", str(tmp_path / "ppu.c"), "-o", str(tmp_path / "app")],
        standalone_mode=False,
    )
    assert code in (0, None)
    with pytest.raises(DeadlockError, match=r"the C threads' last calls: thread 0 at .*ppu\.c:5"):
        run_app(tmp_path / "app")


def test_host_time_scaling_is_off_by_default_and_said_when_on(tmp_path: Path) -> None:
    (tmp_path / "ppu.c").write_text(
        "#include <libspe2.h>\n"
        "volatile unsigned long sink;\n"
        "int main(void) {\n"
        "    for (unsigned long i = 0; i < 20000000; i++) sink += i;  /* host work, no annotation */\n"
        "    spe_cpu_info_get(SPE_COUNT_USABLE_SPES, -1);\n"
        "    return 0;\n"
        "}\n"
    )
    app = build([tmp_path / "ppu.c"], {}, tmp_path / "app")
    plain = run_app(app, machine="qs20-1chip")
    scaled = run_app(app, machine="qs20-1chip", host_time_scale=1.0)
    assert plain.run.cycles == 0  # C code between calls takes no simulated time
    assert scaled.run.cycles > 1000  # a few ms of host CPU time, as cycles
    assert "not deterministic" in scaled.compute_mode and "annotations only" in plain.compute_mode
    with pytest.raises(UsageError, match="host_time_scale"):
        run_app(app, host_time_scale=-1)


EVENTS_SPU = r"""
#include <spu_mfcio.h>
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    spu_write_event_mask(MFC_SIGNAL_NOTIFY_1_EVENT);
    if (spu_read_event_mask() != MFC_SIGNAL_NOTIFY_1_EVENT) return 100;
    if (spu_read_event_status() != MFC_SIGNAL_NOTIFY_1_EVENT) return 101;
    spu_write_event_ack(MFC_SIGNAL_NOTIFY_1_EVENT);
    spu_read_signal1();
    spu_write_event_mask(MFC_IN_MBOX_AVAILABLE_EVENT);
    if (spu_read_event_status() != MFC_IN_MBOX_AVAILABLE_EVENT) return 102;
    spu_write_event_ack(MFC_IN_MBOX_AVAILABLE_EVENT);
    spu_read_in_mbox();
    spu_write_decrementer(1000);
    spu_write_event_mask(MFC_DECREMENTER_EVENT);
    if (spu_readch(SPU_RdEventStat) != MFC_DECREMENTER_EVENT) return 103;
    spu_writech(SPU_WrEventAck, MFC_DECREMENTER_EVENT);
    if (spu_stat_event_status() != 0) return 104;
    return 0;
}
"""


def test_c_event_channels_signal_mailbox_decrementer(tmp_path: Path) -> None:
    """spu_mfcio.h's event macros and the raw channels (0, 1, 2, 11) in C: a signal, a
    mailbox message and the decrementer, each waited for alone."""
    from cellsim.ppe import compute, spe_in_mbox_write, spe_signal_write

    prog = _spu_only(tmp_path, EVENTS_SPU, "events")
    m = Machine("qs20-1chip", seed=1)

    def main() -> int:
        ctx = spe_context_create()
        spe_program_load(ctx, prog)
        t = pthread_create(spe_context_run, ctx)
        compute(30000)
        spe_signal_write(ctx, 1, 5)
        compute(5000)
        spe_in_mbox_write(ctx, [7])
        return pthread_join(t).exit_code

    assert m.run(main).value == 0
