"""Gaps of the SDK API met by users: the problem-state offsets and areas,
DMA lists made of buffers, and types that pass mypy on the examples."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cellsim import Machine
from cellsim.exceptions import UsageError
from cellsim.ppe import (
    SIG_NOTIFY_1,
    SPE_CONTROL_AREA,
    SPE_MSSYNC_AREA,
    SPE_SIG_NOTIFY_1_AREA,
    SPU_IN_MBOX,
    pthread_create,
    pthread_join,
    spe_context_create,
    spe_context_run,
    spe_program_load,
    spe_ps_area_get,
)
from cellsim.problem_state import AREA_OFFSETS, SIG_NOTIFY_1_AREA_OFFSET
from cellsim.spu import (
    ls_alloc,
    mfc_getl,
    mfc_list,
    mfc_read_tag_status_all,
    mfc_sndsig,
    mfc_write_tag_mask,
    spu_read_in_mbox,
    spu_read_signal1,
)

ROOT = Path(__file__).resolve().parent.parent


def test_ps_area_get_honours_its_area_and_the_offsets_reach_the_registers() -> None:
    """A signal sent to SPE_SIG_NOTIFY_1_AREA + its register's offset, and a PPE
    store to SPU_IN_MBOX, arrive: the exported offsets are the engine's."""
    got: dict[str, int] = {}

    def receiver(speid: int, argp: int, envp: int) -> None:
        got["signal"] = spu_read_signal1()
        got["mbox"] = spu_read_in_mbox()

    def sender(speid: int, argp: int, envp: int) -> None:
        word = ls_alloc(16, align=16)
        word.array(">u4")[3] = 0x5A
        mfc_sndsig(word + 12, argp, 1)
        mfc_write_tag_mask(1 << 1)
        mfc_read_tag_status_all()

    def ppe_main(m: Machine) -> None:
        from cellsim import ppe

        rx, tx = spe_context_create(), spe_context_create()
        base = spe_ps_area_get(rx)
        assert spe_ps_area_get(rx, SPE_MSSYNC_AREA) == base
        assert spe_ps_area_get(rx, SPE_CONTROL_AREA) == base + AREA_OFFSETS[SPE_CONTROL_AREA] == base + 0x4000
        sig = spe_ps_area_get(rx, SPE_SIG_NOTIFY_1_AREA) + SIG_NOTIFY_1_AREA_OFFSET
        assert sig == base + SIG_NOTIFY_1
        spe_program_load(rx, receiver)
        spe_program_load(tx, sender)
        threads = [pthread_create(spe_context_run, rx), pthread_create(spe_context_run, tx, argp=sig)]
        ppe.compute(20_000)
        ppe.store(base + SPU_IN_MBOX, 77, 4)
        for t in threads:
            pthread_join(t)

    m = Machine("qs20-1chip", seed=1)
    m.run(ppe_main, m)
    assert got == {"signal": 0x5A, "mbox": 77}


def test_ps_area_get_names_a_bad_area() -> None:
    def ppe_main() -> None:
        spe_ps_area_get(spe_context_create(), 9)

    with pytest.raises(UsageError, match=r"area 9 is not one of libspe2's areas: SPE_MSSYNC_AREA \(0\)"):
        Machine("qs20-1chip").run(ppe_main)


def test_a_dma_list_of_buffers() -> None:
    m = Machine("qs20-1chip", seed=1)
    parts = [m.alloc(256) for _ in range(3)]
    for i, p in enumerate(parts):
        p.array()[:] = i + 1

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = ls_alloc(768, align=128)
        lst = ls_alloc(24, align=8)
        n = mfc_list(lst, parts)  # buffers: each whole
        mfc_getl(buf, int(parts[0]), lst, n, 2)
        mfc_write_tag_mask(1 << 2)
        mfc_read_tag_status_all()
        assert list(buf.array()[::256]) == [1, 2, 3]
        with pytest.raises(UsageError, match="need 32 bytes but the list buffer"):
            mfc_list(lst, [*parts, (16, int(parts[0]))])

    m.load(0, prog)
    assert m.run().programs[0].exit_code == 0
    assert np.all(parts[2].array() == 3)


def test_the_examples_pass_mypy() -> None:
    pytest.importorskip("mypy")
    p = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "examples"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert p.returncode == 0, p.stdout + p.stderr
