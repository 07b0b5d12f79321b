"""``cellsim.spu.LibraryChannels``: the fast path a library (``cellsim.mpi``) takes to its SPU's
MFC and channels keeps the checks of ``cellsim.spu``'s functions (issue 35, item 3): arguments
out of range are the MFC's error, ``--check-dma`` checks the library's commands against the
program's DMAs in flight, and the library's tag mask is restored before the program reads its
own."""

from __future__ import annotations

from typing import Any

import pytest

from cellsim import Machine
from cellsim.dmacheck import DmaHazardError
from cellsim.exceptions import MfcError
from cellsim.spu import (
    MFC_GET_CMD,
    MFC_PUT_CMD,
    LibraryChannels,
    ls_alloc,
    mfc_get,
    mfc_read_tag_mask,
    mfc_write_tag_mask,
)


def run(prog: Any, check: bool = False) -> list[Any]:
    m = Machine("qs20", check_dma=check)
    data = m.alloc(16384)
    out: list[Any] = []
    m.load(0, lambda speid, argp, envp: out.append(prog(argp)), argp=int(data))
    m.run()
    return out


def test_a_library_dma_moves_and_is_waited_on() -> None:
    def prog(argp: int) -> int:
        lib = LibraryChannels()
        buf = ls_alloc(4096, align=128)
        lib.mfc(MFC_GET_CMD, int(buf), argp, 4096, 30)
        return lib.wait_tags(1 << 30)

    assert run(prog) == [1 << 30]


@pytest.mark.parametrize("arg", ["ls", "ea", "size", "tag"])
def test_an_argument_out_of_range_is_the_mfcs_error(arg: str) -> None:
    def prog(argp: int) -> None:
        args = {"ls": 0, "ea": argp, "size": 128, "tag": 30}
        args[arg] = -1
        LibraryChannels().mfc(MFC_GET_CMD, **args)

    with pytest.raises(MfcError, match=f"{arg} -1 is out of range"):
        run(prog)


def test_check_dma_sees_a_library_put_of_what_the_programs_get_writes() -> None:
    def prog(argp: int) -> None:
        buf = ls_alloc(4096, align=128)
        mfc_get(buf, argp, 4096, 3)  # the program's, not waited on
        LibraryChannels().mfc(MFC_PUT_CMD, int(buf), argp + 8192, 4096, 30)

    with pytest.raises(DmaHazardError, match="mfc_put"):
        run(prog, check=True)


def test_the_librarys_own_dmas_are_not_the_programs_to_wait_on() -> None:
    def prog(argp: int) -> int:
        lib = LibraryChannels()
        buf = ls_alloc(4096, align=128)
        lib.mfc(MFC_PUT_CMD, int(buf), argp, 128, 30)
        lib.mfc(MFC_PUT_CMD, int(buf), argp, 128, 30)  # a flag word rewritten in flight
        return lib.wait_tags(1 << 30)

    assert run(prog, check=True) == [1 << 30]


def test_the_programs_tag_mask_is_back_before_it_reads_it() -> None:
    def prog(argp: int) -> int:
        mfc_write_tag_mask(0b1010)
        LibraryChannels().wait_tags(1 << 30)
        return mfc_read_tag_mask()

    assert run(prog) == [0b1010]
