"""Real libspe2 programs as people wrote them (issue 36): one test per problem
the issue numbers, each failing before and passing after.

1. image names as programs write them, resolved (or refused) at build time;
2. ``pthread_exit`` in a PPU thread ends it (no hang), mutexes and condition variables;
3. ``__vector``/``vector``/``qword`` and a header beside the original source;
4. ``spe_stop_info_read``, timed ``spe_event_wait``, ``SPE_RUN_USER_REGS``, 8-bit exit codes,
   and every libspe2 call cellsim lacks a link-time error naming it;
5. a PPU stack array as ``argp`` and an SPU stack buffer as a DMA target;
6. compiler diagnostics passed through whole.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cellsim.c import build, run_app
from cellsim.c.surface import LIBSPE2, MISSING
from cellsim.exceptions import CompileError, UsageError
from cellsim.limits import command_limits
from cellsim.tools.cli import cli

ROOT = Path(__file__).resolve().parents[2]

SPU_ARGS = r"""
#include <stdio.h>
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    printf("spu %llu %llu %llu\n", speid, argp, envp);
    return (int)argp - 8; /* exit(-1) for argp 7 */
}
"""


def _write(d: Path, **files: str) -> dict[str, Path]:
    d.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, text in files.items():
        path = d / name.replace("__", ".")
        path.write_text(text)
        out[name] = path
    return out


# -- 1. image names --------------------------------------------------------------------

PPU_NAMES = r"""
#include <libspe2.h>
#include <stdio.h>
extern spe_program_handle_t hello_spu; /* embedspu's, not spe_image_open("old.elf") */
int main(void) {
    spe_program_handle_t *task = spe_image_open("spu-task");
    spe_program_handle_t *elf = spe_image_open("./build/hello.spu.elf");
    spe_stop_info_t stop;
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_program_handle_t *images[] = {&hello_spu, task, elf};
    for (int i = 0; i < 3; i++) {
        spe_context_ptr_t ctx = spe_context_create(0, NULL);
        spe_program_load(ctx, images[i]);
        spe_context_run(ctx, &entry, 0, (void *)(unsigned long)(8 + i), NULL, &stop);
        spe_context_destroy(ctx);
    }
    return 0;
}
"""


def test_image_names_as_programs_write_them(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, ppu__c=PPU_NAMES, spu__c=SPU_ARGS)
    app = build([f["ppu__c"]], {"hello.spu.elf": [f["spu__c"]], "spu-task": [f["spu__c"]]}, tmp_path / "app")
    assert run_app(app).exit_code == 0
    out = capfd.readouterr().out.splitlines()
    assert [line.split()[2] for line in out] == ["8", "9", "10"]


def test_an_image_name_that_matches_nothing_is_a_build_error_naming_the_candidates(tmp_path: Path) -> None:
    f = _write(tmp_path, ppu__c=PPU_NAMES.replace('"spu-task"', '"spu-tusk"'), spu__c=SPU_ARGS)
    with pytest.raises(
        UsageError,
        match=r"ppu\.c:6: spe_image_open 'spu-tusk' matches no SPU program.*"
        r"hello\.spu\.elf, spu-task",
    ):
        build([f["ppu__c"]], {"hello.spu.elf": [f["spu__c"]], "spu-task": [f["spu__c"]]}, tmp_path / "app")
    assert not (tmp_path / "app").exists()  # nothing half-built left behind


# -- 2. pthread_exit, mutexes, condition variables ----------------------------------------

PPU_THREADS = r"""
#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static int queue[4], head, tail;

static void *producer(void *arg) {
    for (int i = 1; i <= 8; i++) {
        pthread_mutex_lock(&lock);
        while (tail - head == 4)
            pthread_cond_wait(&ready, &lock);
        queue[tail++ % 4] = i;
        pthread_cond_broadcast(&ready);
        pthread_mutex_unlock(&lock);
    }
    pthread_exit(arg); /* not a return: must end this thread only */
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, (void *)42);
    int sum = 0;
    for (int n = 0; n < 8; n++) {
        pthread_mutex_lock(&lock);
        while (head == tail)
            pthread_cond_wait(&ready, &lock);
        sum += queue[head++ % 4];
        pthread_cond_signal(&ready);
        pthread_mutex_unlock(&lock);
    }
    void *ret;
    pthread_join(t, &ret);
    printf("sum %d ret %ld\n", sum, (long)ret);
    pthread_exit(NULL); /* main too: the run ends when every thread has */
}
"""


def test_pthread_exit_and_condition_variables(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, ppu__c=PPU_THREADS)
    with command_limits(60):  # it used to hang for ever
        r = run_app(build([f["ppu__c"]], {}, tmp_path / "app"))
    assert r.exit_code == 0
    assert capfd.readouterr().out == "sum 36 ret 42\n"


# -- 3. the language extensions and headers beside the source ----------------------------

SPU_VECTOR = r"""
#include <spu_intrinsics.h>
#include <stdio.h>
#include "params.h"
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    vector unsigned int a = spu_splats((unsigned int)SCALE);
    __vector float b = spu_splats(1.5f);
    vector bool int m = spu_cmpgt(a, spu_splats(1u));
    qword q = (qword)a;
    struct pair p = {a, b};
    printf("%u %g %u %u\n", spu_extract(p.u, 0), spu_extract(p.f, 3), spu_extract(m, 1),
           spu_extract((vec_uint4)q, 2));
    return 0;
}
"""
PARAMS_H = """#define SCALE 3
struct pair { vector unsigned int u; __vector float f; };
"""


def test_vector_spellings_and_a_header_beside_the_source(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    f = _write(tmp_path / "src", spu__c=SPU_VECTOR, params__h=PARAMS_H)
    ppu = _write(tmp_path / "src", ppu__c=PPU_NAMES.replace("hello_spu", "spu"))["ppu__c"]
    monkeypatch.chdir(tmp_path)  # built from elsewhere: the header is found beside its source
    app = build(
        [ppu], {"spu": [Path("src/spu.c")], "spu-task": [f["spu__c"]], "hello.spu.elf": [f["spu__c"]]}, "app"
    )
    assert run_app(app).exit_code == 0
    assert capfd.readouterr().out.splitlines()[0] == "3 1.5 4294967295 3"


# -- 4. libspe2 calls ---------------------------------------------------------------------

PPU_LIBSPE2 = r"""
#include <libspe2.h>
#include <stdio.h>
#include <string.h>
extern spe_program_handle_t args;
int main(void) {
    spe_context_ptr_t ctx = spe_context_create(SPE_EVENTS_ENABLE, NULL);
    spe_program_load(ctx, &args);
    unsigned long long regs[6] = {11, 0, 22, 0, 33, 0}; /* r3, r4, r5: preferred doublewords */
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_stop_info_t stop, read;
    int rc = spe_context_run(ctx, &entry, SPE_RUN_USER_REGS, regs, NULL, &stop);
    spe_stop_info_read(ctx, &read);
    printf("rc %d exit %d read %d reason %u\n", rc, stop.result.spe_exit_code, read.result.spe_exit_code,
           read.stop_reason);
    rc = spe_context_run(ctx, &entry, 0, (void *)7, (void *)5, &stop); /* the SPU returns -1 */
    printf("exit code %d\n", stop.result.spe_exit_code);

    spe_event_handler_ptr_t h = spe_event_handler_create();
    spe_event_unit_t unit = {.events = SPE_EVENT_OUT_INTR_MBOX, .spe = ctx};
    spe_event_handler_register(h, &unit);
    spe_event_unit_t got;
    int n = spe_event_wait(h, &got, 1, 5); /* nothing comes: after 5 ms, 0 */
    printf("events %d\n", n);
    return 0;
}
"""


def test_libspe2_stop_info_user_regs_timeouts_and_exit_codes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    f = _write(tmp_path, ppu__c=PPU_LIBSPE2, spu__c=SPU_ARGS)
    r = run_app(build([f["ppu__c"]], {"args": [f["spu__c"]]}, tmp_path / "app"))
    out = capfd.readouterr().out
    assert out.splitlines() == [
        "spu 11 22 33",
        "rc 0 exit 14 read 14 reason 1",
        "spu 0 7 5",
        "exit code 255",
        "events 0",
    ]
    assert r.run.ns >= 5e6  # the wait lasted its 5 ms of simulated time


@pytest.mark.parametrize("call", [c for c, status in LIBSPE2.items() if status == MISSING][:3])
def test_a_libspe2_call_cellsim_lacks_fails_to_link_naming_it(tmp_path: Path, call: str) -> None:
    f = _write(tmp_path, ppu__c=f"#include <libspe2.h>\nint main(void) {{ return (int)(long){call}; }}\n")
    with pytest.raises(CompileError, match=rf"{call} is part of libspe2 but not implemented by cellsim"):
        build([f["ppu__c"]], {}, tmp_path / "app")


def test_every_libspe2_call_is_in_the_docs_table() -> None:
    doc = (ROOT / "docs" / "c-programs.md").read_text()
    for call, status in LIBSPE2.items():
        assert f"| `{call}` | {status}" in doc, call


# -- 5. stacks where the Cell puts them ----------------------------------------------------

PPU_STACK = r"""
#include <libspe2.h>
#include <stdio.h>
extern spe_program_handle_t stack_spu;
int main(void) {
    unsigned int words[32] __attribute__((aligned(128))); /* on the PPU's stack: main memory */
    for (int i = 0; i < 32; i++)
        words[i] = i * 3;
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &stack_spu);
    spe_stop_info_t stop;
    spe_context_run(ctx, NULL, 0, words, NULL, &stop);
    printf("sum %d first %u\n", stop.result.spe_exit_code, words[0]);
    return 0;
}
"""
SPU_STACK = r"""
#include <spu_mfcio.h>
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    unsigned int buf[32] __attribute__((aligned(128))); /* on the SPU's stack: the local store */
    mfc_get(buf, argp, sizeof buf, 1, 0, 0);
    mfc_write_tag_mask(1 << 1);
    mfc_read_tag_status_all();
    unsigned int sum = 0;
    for (int i = 0; i < 32; i++)
        sum += buf[i];
    buf[0] = 1000;
    mfc_put(buf, argp, sizeof buf, 1, 0, 0);
    mfc_read_tag_status_all();
    return (int)(sum & 0xFF);
}
"""


def test_stack_buffers_are_memory_the_mfc_reaches(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, ppu__c=PPU_STACK, spu__c=SPU_STACK)
    assert run_app(build([f["ppu__c"]], {"stack_spu": [f["spu__c"]]}, tmp_path / "app")).exit_code == 0
    assert capfd.readouterr().out == f"sum {sum(i * 3 for i in range(32)) & 0xFF} first 1000\n"


# -- 6. compiler diagnostics ---------------------------------------------------------------


def test_compiler_diagnostics_come_whole(tmp_path: Path) -> None:
    f = _write(tmp_path, spu__c="int main(void) {\n    return nope +\n        nada;\n}\n")
    r = CliRunner().invoke(cli, ["cc", "--spu", f"p={f['spu__c']}", "-o", str(tmp_path / "app")])
    assert r.exit_code == 2
    lines = r.output.splitlines()
    assert lines[0].startswith("error: the C compiler")
    assert any("nope" in line and "error" in line for line in lines[1:])
    assert any("nada" in line for line in lines[1:])
    assert any(line.strip().startswith("|") or line.strip().startswith("^") for line in lines), r.output


# -- local stores that are real memory --------------------------------------------------

SPU_LOCAL_STORE = r"""
#include <cellsim.h>
static unsigned int word __attribute__((aligned(16))) = 0x1234;
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    unsigned int lsa = (unsigned int)(unsigned long)&word; /* as on the SPU: its local-store address */
    if (argp) /* one byte past the 256 KB local store */
        ((volatile char *)&word)[0x40000 - lsa] = 1;
    return lsa == cellsim_lsa(&word) && lsa >= 0x4000 && lsa < 0x30000;
}
"""


SPU_HEAP = r"""
#include <libmisc.h>
#include <spu_mfcio.h>
#include <stdlib.h>
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    unsigned int *buf = malloc_align(4096, 7); /* the heap is local store: a DMA target */
    char *small = malloc(24);
    void *too_big = malloc(256 * 1024);
    mfc_get(buf, argp, 128, 0, 0, 0);
    mfc_write_tag_mask(1);
    mfc_read_tag_status_all();
    unsigned int lsa = (unsigned int)(unsigned long)buf;
    int ok = buf[0] == 7 && lsa % 128 == 0 && lsa < 0x30000 && small && !too_big;
    free(small);
    free_align(buf);
    return ok;
}
"""


def test_the_spu_heap_is_local_store(tmp_path: Path) -> None:
    from cellsim import Machine
    from cellsim.c import CProgram

    f = _write(tmp_path, spu__c=SPU_HEAP)
    m = Machine("qs20-1chip", seed=0)
    ea = m.alloc(128)
    m.memory(int(ea), 4)[:] = [7, 0, 0, 0]
    m.load(0, CProgram(build([], {"heap": [f["spu__c"]]}, tmp_path / "app"), "heap"), argp=int(ea))
    assert [p.exit_code for p in m.run().programs] == [1]


def test_statics_sit_at_their_local_store_address(tmp_path: Path) -> None:
    from cellsim import Machine
    from cellsim.c import CProgram
    from cellsim.exceptions import ProgramCrashError

    f = _write(tmp_path, spu__c=SPU_LOCAL_STORE)
    prog = CProgram(build([], {"ls": [f["spu__c"]]}, tmp_path / "app"), "ls")
    m = Machine("qs20-1chip", seed=0)
    m.load(0, prog)
    assert [p.exit_code for p in m.run().programs] == [1]
    m = Machine("qs20-1chip", seed=0)
    m.load(0, prog, argp=1)
    with pytest.raises(ProgramCrashError, match=r"local-store address 0x40000: past the end of the 256 KB"):
        m.run()


# -- building from the SDK's Makefiles ---------------------------------------------------


def test_make_reads_the_sdk_makefiles_and_names_a_missing_embedding(tmp_path: Path) -> None:
    from cellsim.c import makefile

    _write(
        tmp_path / "spu", Makefile="PROGRAMS_spu := a_spu \\\n  \nLIBRARY_embed = lib_a.a\nCFLAGS += -DX=1\n"
    )
    _write(tmp_path / "spu", a_spu__c=SPU_ARGS)
    _write(
        tmp_path,
        Makefile="DIRS = spu\nPROGRAM_ppu = app\nIMPORTS = spu/lib_a.a -lspe2 $(SDKLIB)/libmisc.a\n",
        app__c=PPU_NAMES,
    )
    project = makefile.read(tmp_path)
    assert [p.name for p in project.ppu] == ["app"]
    assert list(project.spu) == ["a_spu"] and project.spu["a_spu"].flags == ["-DX=1"]
    assert makefile.embedded(project, project.ppu[0]) == ["a_spu"]
    (tmp_path / "Makefile").write_text("DIRS = spu\nPROGRAM_ppu = app\nIMPORTS = spu/lib_b.a\n")
    project = makefile.read(tmp_path)
    with pytest.raises(UsageError, match=r"IMPORTS spu/lib_b\.a: no Makefile.*lib_a\.a.*a_spu"):
        makefile.embedded(project, project.ppu[0])


def test_an_intrinsic_cellsim_lacks_is_a_build_error_naming_it(tmp_path: Path) -> None:
    f = _write(
        tmp_path,
        spu__c="#include <spu_intrinsics.h>\nint main(void) {\n"
        "    return spu_extract(spu_genc(spu_splats(1u), spu_splats(2u)), 0);\n}\n",
    )
    with pytest.raises(CompileError, match="spu_genc"):
        build([], {"p": [f["spu__c"]]}, tmp_path / "app")


def test_an_isolated_context_is_refused_naming_the_flag(tmp_path: Path) -> None:
    f = _write(
        tmp_path,
        ppu__c="#include <libspe2.h>\nint main(void) {\n"
        "    return spe_context_create(SPE_ISOLATE, NULL) != NULL;\n}\n",
    )
    with pytest.raises(UsageError, match=r"SPE_ISOLATE.*not model.*\(in C at .*ppu\.c:3\)"):
        run_app(build([f["ppu__c"]], {}, tmp_path / "app"))


def test_libspe2_from_an_spu_program_is_a_link_error_saying_whose_library_it_is(tmp_path: Path) -> None:
    f = _write(
        tmp_path, spu__c="#include <libspe2.h>\nint main(void) {\n    return spe_in_mbox_status(NULL);\n}\n"
    )
    with pytest.raises(CompileError, match="spe_in_mbox_status: libspe2 is the PPU's library"):
        build([], {"p": [f["spu__c"]]}, tmp_path / "app")


PPU_PROXY = r"""
#include <libspe2.h>
#include <stdio.h>
static int src[32] __attribute__((aligned(128))), dst[32] __attribute__((aligned(128)));
int main(void) {
    for (int i = 0; i < 32; i++)
        src[i] = i + 1;
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_mfcio_get(ctx, 0x20000, src, sizeof src, 3, 0, 0);
    spe_mfcio_putb(ctx, 0x20000, dst, sizeof dst, 3, 0, 0); /* the barrier: after the get */
    spe_mfcio_getf(ctx, 0x20080, src, sizeof src, 4, 0, 0);
    spe_mfcio_putf(ctx, 0x20080, dst, sizeof dst, 4, 0, 0);
    spe_mfcio_getb(ctx, 0x20100, src, sizeof src, 5, 0, 0);
    unsigned int status;
    spe_mfcio_tag_status_read(ctx, 0x38, SPE_TAG_ALL, &status);
    printf("%d %d\n", dst[0], dst[31]);
    return 0;
}
"""


def test_the_barriered_and_fenced_proxy_dmas(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, ppu__c=PPU_PROXY)
    assert run_app(build([f["ppu__c"]], {}, tmp_path / "app")).exit_code == 0
    assert capfd.readouterr().out == "1 32\n"


def test_the_closest_image_name_wins() -> None:
    from cellsim.c.names import resolve, symbols

    programs = ["hello.spu.elf", "hello.elf", "spu-task", "x_spu"]
    assert resolve("hello_spu", programs) == ["hello.spu.elf"]  # embedspu's symbol
    assert resolve("/opt/app/hello.elf", programs) == ["hello.elf"]
    assert resolve("task", programs) == ["spu-task"]
    assert resolve("x", programs) == ["x_spu"]
    assert resolve("hello", programs) == ["hello.spu.elf", "hello.elf"]  # ambiguous: a build error
    assert resolve("nothing", programs) == []
    # never a handle named like a C keyword or a C library function
    assert "read" not in symbols(["spu-read.elf", "read"]) and "int" not in symbols(["int"])
