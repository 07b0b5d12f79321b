"""The SPU side of the Cell SDK (``spu_mfcio.h``), for Python SPE programs.

Call these from an SPE program loaded with :meth:`cellsim.Machine.load`.
Calls that wait (tag status) block the program in simulated time; the engine
runs the other programs meanwhile. Every call costs what it costs on the chip.

=================================  ========  ==========================================
SDK call                           opcode    simulated cost
=================================  ========  ==========================================
``mfc_put(ls, ea, size, tag)``     0x20      issue (10 cycles) unless the queue is full
``mfc_putb`` / ``mfc_putf``        0x21/22   same; barrier / fence on the tag group
``mfc_get(ls, ea, size, tag)``     0x40      issue (10 cycles) unless the queue is full
``mfc_getb`` / ``mfc_getf``        0x41/42   same; barrier / fence on the tag group
``mfc_barrier(tag)``               0xC0      orders all earlier commands before later ones
``mfc_write_tag_mask(mask)``       ch 22     one channel write
``mfc_read_tag_status_all()``      ch 23/24  blocks until every group in the mask is done
``mfc_read_tag_status_any()``      ch 23/24  blocks until some group in the mask is done
``mfc_read_tag_status_immediate``  ch 23/24  one channel read, never blocks
``spu_read_decrementer()``         ch 8      one channel read
``spu_write_decrementer(v)``       ch 7      one channel write
``compute(cycles)``                —         the program's own work: ``cycles`` SPU cycles
=================================  ========  ==========================================

``tid`` and ``rid`` (transfer and replacement class IDs) are accepted for
compatibility and have no effect, as on most real code. Local-store memory
comes from :func:`ls_alloc`, which returns an :class:`~cellsim.machine.LsBuffer`
(an ``int`` address with ``.array(dtype)`` for a numpy view).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from greenlet import getcurrent

from .exceptions import MfcError, NotInProgramError
from .machine import LsBuffer, Program

__all__ = [
    "MFC_GET_CMD",
    "MFC_PUT_CMD",
    "compute",
    "ls_alloc",
    "ls_array",
    "mfc_barrier",
    "mfc_get",
    "mfc_getb",
    "mfc_getf",
    "mfc_put",
    "mfc_putb",
    "mfc_putf",
    "mfc_read_tag_status_all",
    "mfc_read_tag_status_any",
    "mfc_read_tag_status_immediate",
    "mfc_write_tag_mask",
    "spe_id",
    "spu_ls",
    "spu_read_decrementer",
    "spu_write_decrementer",
]

MFC_PUT_CMD = 0x20
MFC_PUTB_CMD = 0x21
MFC_PUTF_CMD = 0x22
MFC_GET_CMD = 0x40
MFC_GETB_CMD = 0x41
MFC_GETF_CMD = 0x42
MFC_BARRIER_CMD = 0xC0

MFC_TAG_UPDATE_IMMEDIATE = 0
MFC_TAG_UPDATE_ANY = 1
MFC_TAG_UPDATE_ALL = 2


def _program(call: str) -> Program:
    g = getcurrent()
    if not isinstance(g, Program):
        raise NotInProgramError(
            f"{call} must be called from an SPE program run by Machine.run() "
            "(load it with Machine.load(spe, program))"
        )
    return g


def _dma(call: str, opcode: int, ls: int, ea: int, size: int, tag: int) -> None:
    p = _program(call)
    p.call(p.engine.mfc, opcode, int(ls), int(ea), int(size), int(tag))


def mfc_get(ls: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """Moves ``size`` bytes from effective address ``ea`` to local-store address ``ls``."""
    _dma("mfc_get", MFC_GET_CMD, ls, ea, size, tag)


def mfc_getb(ls: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_get`` with a barrier: it and later commands of ``tag`` wait for earlier ones."""
    _dma("mfc_getb", MFC_GETB_CMD, ls, ea, size, tag)


def mfc_getf(ls: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_get`` with a fence: it waits for earlier commands of ``tag``."""
    _dma("mfc_getf", MFC_GETF_CMD, ls, ea, size, tag)


def mfc_put(ls: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """Moves ``size`` bytes from local-store address ``ls`` to effective address ``ea``."""
    _dma("mfc_put", MFC_PUT_CMD, ls, ea, size, tag)


def mfc_putb(ls: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_put`` with a barrier."""
    _dma("mfc_putb", MFC_PUTB_CMD, ls, ea, size, tag)


def mfc_putf(ls: int, ea: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_put`` with a fence."""
    _dma("mfc_putf", MFC_PUTF_CMD, ls, ea, size, tag)


def mfc_barrier(tag: int) -> None:
    """Every command issued before it completes before any issued after it starts."""
    _dma("mfc_barrier", MFC_BARRIER_CMD, 0, 0, 0, tag)


def mfc_write_tag_mask(mask: int) -> None:
    """Selects the tag groups that the tag-status reads look at."""
    p = _program("mfc_write_tag_mask")
    p.call(p.engine.write_tag_mask, int(mask) & 0xFFFFFFFF)


def mfc_read_tag_status_all() -> int:
    """Blocks until every tag group in the mask is complete; returns the status."""
    p = _program("mfc_read_tag_status_all")
    return p.call(p.engine.read_tag_status, MFC_TAG_UPDATE_ALL)


def mfc_read_tag_status_any() -> int:
    """Blocks until some tag group in the mask is complete; returns the status."""
    p = _program("mfc_read_tag_status_any")
    return p.call(p.engine.read_tag_status, MFC_TAG_UPDATE_ANY)


def mfc_read_tag_status_immediate() -> int:
    """Returns the tag groups of the mask that are complete, without waiting."""
    p = _program("mfc_read_tag_status_immediate")
    return p.call(p.engine.read_tag_status, MFC_TAG_UPDATE_IMMEDIATE)


def spu_read_decrementer() -> int:
    """Reads the decrementer, which counts down at the machine's timebase frequency."""
    p = _program("spu_read_decrementer")
    return p.call(p.engine.read_decrementer)


def spu_write_decrementer(value: int) -> None:
    """Sets the decrementer."""
    p = _program("spu_write_decrementer")
    p.call(p.engine.write_decrementer, int(value) & 0xFFFFFFFF)


def compute(cycles: int) -> None:
    """Spends ``cycles`` SPU cycles computing (the program's own work)."""
    if cycles < 0:
        raise ValueError(f"compute({cycles}): cycles must not be negative")
    p = _program("compute")
    p.call(p.engine.compute, int(cycles))


def spe_id() -> int:
    """The logical SPE number this program runs on."""
    return _program("spe_id").spe


def spu_ls() -> np.ndarray:
    """The whole local store as a writable ``uint8`` array."""
    return _program("spu_ls").ls


def ls_alloc(size: int, align: int = 16) -> LsBuffer:
    """Reserves ``size`` bytes of local store aligned to ``align`` (a power of two).

    Raises ``MfcError`` (kind ``ls_overflow``) when the local store is full.
    """
    p = _program("ls_alloc")
    if align <= 0 or align & (align - 1):
        raise ValueError(f"ls_alloc alignment {align} is not a power of two")
    start = -(-p.ls_next // align) * align
    end = start + int(size)
    if end > p.ls_top:
        raise MfcError(
            f"ls_alloc({size}, align={align}) needs local store up to 0x{end:x} but it ends at "
            f"0x{p.ls_top:x} ({max(p.ls_top - start, 0)} bytes left)",
            kind="ls_overflow",
            spe=p.spe,
            command=f"ls_alloc({size}, align={align})",
        )
    p.ls_next = end
    return LsBuffer(start, int(size), p.ls[start:end])


def ls_array(ls: int, dtype: Any = np.uint8, count: int = -1) -> np.ndarray:
    """A writable numpy view of local store from address ``ls``."""
    p = _program("ls_array")
    return np.frombuffer(p.ls, dtype=dtype, count=count, offset=int(ls))
