"""The DMA hazard checker (`Machine(check_dma=True)`, `--check-dma`): a
local-store range used while a DMA moves it, and overlapping DMAs without a
fence or barrier, stop the program with a report naming the SPE, the tags,
the range and both call sites (Python lines, C lines). Off, nothing
changes: a racy program reads what the chip would give it."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from cellsim import Machine
from cellsim.dmacheck import DmaHazardError, check_dma_default
from cellsim.spu import (
    ls_alloc,
    mfc_barrier,
    mfc_get,
    mfc_getf,
    mfc_put,
    mfc_read_tag_status_all,
    mfc_write_tag_mask,
)
from cellsim.tools.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def wait(tag: int) -> None:
    mfc_write_tag_mask(1 << tag)
    mfc_read_tag_status_all()


def view_too_early(speid: int, argp: int, envp: int) -> int:
    buf = ls_alloc(4096, align=128)
    mfc_get(buf, argp, 4096, 3)
    return int(buf.array(">u4")[0])  # before the get is waited on


def put_what_a_get_writes(speid: int, argp: int, envp: int) -> None:
    buf = ls_alloc(4096, align=128)
    mfc_get(buf, argp, 4096, 3)
    mfc_put(buf, argp + 8192, 4096, 4)
    mfc_write_tag_mask(0b11000)
    mfc_read_tag_status_all()


def ordered(speid: int, argp: int, envp: int) -> int:
    buf = ls_alloc(4096, align=128)
    mfc_get(buf, argp, 4096, 3)
    mfc_getf(buf, argp, 4096, 3)  # same tag, fenced
    mfc_barrier(0)
    mfc_put(buf, argp + 8192, 4096, 5)  # after the barrier
    mfc_get(ls_alloc(4096, align=128), argp, 4096, 6)  # another LS range, main memory only read
    wait(3)
    wait(5)
    wait(6)
    return int(buf.array(">u4")[0])


def _run(prog: Callable[..., object], check: bool | None) -> Machine:
    m = Machine("qs20", check_dma=check)
    data = m.alloc(16384)
    data.array(">u4")[:] = 7
    m.load(0, prog, argp=int(data))
    m.run()
    return m


def test_a_view_of_a_buffer_a_get_is_filling_is_reported() -> None:
    with pytest.raises(DmaHazardError) as e:
        _run(view_too_early, True)
    err = e.value
    assert err.spe == 0 and err.tags == (3,) and err.range[0] == "local store"
    assert err.range[2] - err.range[1] == 4096
    first, second = err.sites
    assert first.endswith("(view_too_early)") and "test_dma_checker.py:42" in first
    assert "test_dma_checker.py:43" in second
    assert "wait for tag 3 first" in str(err)


def test_overlapping_dmas_without_an_order_are_reported() -> None:
    with pytest.raises(DmaHazardError, match=r"mfc_put \(tag 4\) .* mfc_get \(tag 3\)") as e:
        _run(put_what_a_get_writes, True)
    assert e.value.tags == (3, 4) and e.value.range[0] == "local store"


def test_fences_barriers_and_waits_order_them() -> None:
    _run(ordered, True)


def test_off_by_default_the_racy_program_runs() -> None:
    _run(view_too_early, False)
    with check_dma_default(True), pytest.raises(DmaHazardError):
        _run(view_too_early, None)


@pytest.mark.parametrize("name", ["double_buffer", "producer_consumer", "events", "signal_gather"])
def test_the_examples_are_race_free(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [name])
    out = io.StringIO()
    with check_dma_default(True), contextlib.redirect_stdout(out):
        runpy.run_path(str(ROOT / "examples" / f"{name}.py"), run_name="__main__")
    assert out.getvalue() == (ROOT / "examples" / f"{name}.out").read_text()


PPU = r"""
#include <libspe2.h>
extern spe_program_handle_t worker;
int main(void) {
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &worker);
    unsigned int entry = SPE_DEFAULT_ENTRY;
    static char data[16384] __attribute__((aligned(128)));
    spe_context_run(ctx, &entry, 0, data, NULL, NULL);
    return 0;
}
"""

SPU = r"""
#include <spu_mfcio.h>
static char buf[4096] __attribute__((aligned(128)));
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    mfc_get(buf, argp, 4096, 1, 0, 0);
    mfc_put(buf, argp + 8192, 4096, 2, 0, 0);
    mfc_write_tag_mask(6);
    mfc_read_tag_status_all();
    return 0;
}
"""


def test_a_c_programs_race_names_its_c_lines(tmp_path: Path) -> None:
    (tmp_path / "ppu.c").write_text(PPU)
    (tmp_path / "spu.c").write_text(SPU)
    runner = CliRunner()
    app = str(tmp_path / "app")
    r = runner.invoke(
        cli, ["cc", str(tmp_path / "ppu.c"), "--spu", f"worker={tmp_path / 'spu.c'}", "-o", app]
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["exec", "--quiet", app])
    assert r.exit_code == 0, r.output  # off: the chip's own stale data
    r = runner.invoke(cli, ["exec", "--quiet", "--check-dma", app])
    assert r.exit_code == 1 and "Traceback" not in r.output
    (line,) = r.stderr.splitlines()
    assert line.startswith("error: DMA race on SPE 0: mfc_put (tag 2) at ")
    assert "spu.c:6" in line and "mfc_get (tag 1) at " in line and "spu.c:5" in line


def test_native_programs_run_alike_with_the_checker_on() -> None:
    """Native (Rust) programs are checked in the engine (its twin of this checker, tested in
    the engine's own tests with a racy program); a correct one runs cycle for cycle as without."""
    from cellsim.experiments._common import load_dma_bench

    def run(check: bool) -> tuple[int, object]:
        m = Machine("qs20-1chip", seed=3, check_dma=check)
        load_dma_bench(m, 0, put=False, ea=int(m.alloc(1 << 16)), size=4096, batch=1, count=16, native=True)
        r = m.run()
        return r.cycles, r.stats

    assert run(True) == run(False)
