"""C programs can read the clock and see their compiler's warnings, and
`cellsim exec` pins SPEs (issue 34, item 7): `__mftb()`/`mftb()` and
`spu_read_decrementer()` return simulated time; `cellsim cc` builds with
-Wall, shows the warnings and refuses an implicit function declaration;
`cellsim exec --placement`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cellsim.tools.cli import cli

PPU = r"""
#include <stdio.h>
#include <libspe2.h>
#include <ppu_intrinsics.h>
extern spe_program_handle_t worker;
int main(void) {
    unsigned long long hz = cellsim_timebase_hz();
    unsigned long long t0 = __mftb();
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &worker);
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_stop_info_t stop;
    spe_context_run(ctx, &entry, 0, NULL, NULL, &stop);
    unsigned long long t1 = mftb();
    printf("hz %llu ppu ticks %llu spu exit %d\n", hz, t1 - t0, stop.result.spe_exit_code);
    return 0;
}
"""

SPU = r"""
#include <spu_mfcio.h>
#include <cellsim.h>
int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    spu_write_decrementer(0xFFFFFFFFu);
    unsigned int d0 = spu_read_decrementer();
    spu_compute(3200000);                  /* 1 ms at 3.2 GHz */
    unsigned int d1 = spu_read_decrementer();
    return (int)((d0 - d1) / 1000);        /* decrementer ticks, in thousands */
}
"""


def _cc(tmp_path: Path, ppu: str, spu: str, *extra: str) -> tuple[int, str, Path]:
    (tmp_path / "ppu.c").write_text(ppu)
    (tmp_path / "spu.c").write_text(spu)
    app = tmp_path / "app"
    r = CliRunner().invoke(
        cli,
        ["cc", str(tmp_path / "ppu.c"), "--spu", f"worker={tmp_path / 'spu.c'}", "-o", str(app), *extra],
        catch_exceptions=False,
    )
    return r.exit_code, r.stderr, app


def _exec(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["exec", *args], standalone_mode=False)
    out = capfd.readouterr()
    return code, out.out, out.err


def test_the_timebase_and_the_decrementer_are_simulated_time(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code, err, app = _cc(tmp_path, PPU, SPU)
    assert code == 0, err
    code, out, err = _exec(capfd, "--quiet", str(app))
    assert code == 0, err
    words = out.split()
    hz, ppu_ticks, spu_k = int(words[1]), int(words[4]), int(words[7])
    assert hz == 14_318_000  # qs20's timebase (cellsim machine show qs20: timebase_mhz)
    assert spu_k == 14, "1 ms of SPU time is 14,318 decrementer ticks"
    assert 14_318 < ppu_ticks < 2 * 14_318, "the PPU's time base saw the SPE's millisecond and its start-up"


def test_cc_shows_warnings_and_refuses_an_implicit_declaration(tmp_path: Path) -> None:
    warn = PPU.replace("int main(void) {", "int main(void) {\n    int unused;")
    code, err, _ = _cc(tmp_path, warn, SPU)
    assert code == 0 and "warning: unused variable 'unused'" in err.replace("‘", "'").replace("’", "'")
    implicit = (
        '#include <stdio.h>\nint main(void) { char *p = memalign(128, 64); printf("%p", p); return 0; }\n'
    )
    (tmp_path / "again").mkdir()
    code, err, _ = _cc(tmp_path / "again", implicit, SPU)
    assert code == 2 and "implicit declaration of function 'memalign'" in err.replace("‘", "'").replace(
        "’", "'"
    )


def test_cellsims_own_runtime_builds_without_a_warning(tmp_path: Path) -> None:
    """The warnings a user sees are theirs: cellsim's runtime sources, compiled with the same
    -Wall, say nothing."""
    code, err, _ = _cc(tmp_path, PPU, SPU)
    assert code == 0 and "warning" not in err, err


def test_exec_placement_pins_the_spes(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, err, app = _cc(tmp_path, PPU, SPU)
    assert code == 0, err
    code, _, err = _exec(capfd, "--trace", str(tmp_path / "t.json"), "--placement", "5,4,3", str(app))
    assert code == 0, err
    import json

    names = [e["args"]["name"] for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]
             if e.get("name") == "thread_name" and e["args"]["name"].startswith("SPE 0 ")]  # fmt: skip
    assert names and all(n.startswith("SPE 0 (phys 5") for n in names), names
    bad = CliRunner().invoke(cli, ["exec", "--placement", "1,1", str(app)])
    assert bad.exit_code == 2 and "each at most once" in bad.stderr
    bad = CliRunner().invoke(cli, ["exec", "--placement", "a,b", str(app)])
    assert bad.exit_code == 2 and "comma-separated" in bad.stderr


@pytest.mark.parametrize("spes", ["99"])
def test_exec_placement_out_of_range_is_one_error(tmp_path: Path, spes: str) -> None:
    code, err, app = _cc(tmp_path, PPU, SPU)
    assert code == 0, err
    r = CliRunner().invoke(cli, ["exec", "--placement", spes, str(app)])
    assert r.exit_code == 2 and r.stderr.startswith("error: "), r.output
    assert "Traceback" not in r.output
