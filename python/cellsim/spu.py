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
``mfc_getl/putl(ls, ea, list, n)``  0x44/0x24 a DMA list of ``n`` bytes of 8-byte elements
``mfc_barrier(tag)``               0xC0      orders all earlier commands before later ones
``mfc_sync`` / ``mfc_eieio``         0xCC/C8   like ``mfc_barrier`` here
``mfc_getllar/putllc/putlluc``     0xD0/B4/B0 the atomic unit: one 128-byte lock line
``mfc_read_atomic_status()``       ch 27     blocks until the atomic command is done
``mfc_sndsig(ls, ea, tag)``        0xA0      4-byte write to a signal-notification register
``spu_read_in_mbox()``             ch 29     blocks while the inbound mailbox is empty
``spu_write_out_mbox(v)``          ch 28     blocks while the outbound mailbox is full
``spu_write_out_intr_mbox(v)``     ch 30     blocks while the outbound-interrupt mailbox is full
``spu_stat_*``                     rchcnt    channel counts, never block
``spu_read_signal1/2()``           ch 3/4    blocks until a signal arrives; reading clears it
``mfc_read_list_stall_status()``   ch 25     blocks until a list stalls (stall-and-notify)
``mfc_write_list_stall_ack(tag)``  ch 26     the stalled list goes on
``mfc_write_tag_mask(mask)``       ch 22     one channel write
``mfc_read_tag_mask()``            ch 22     one channel read
``mfc_read_tag_status_all()``      ch 23/24  blocks until every group in the mask is done
``mfc_read_tag_status_any()``      ch 23/24  blocks until some group in the mask is done
``mfc_read_tag_status_immediate``  ch 23/24  one channel read, never blocks
``mfc_write_tag_update_all/any()``  ch 23     requests a tag-status update (raises the Tg
                                             event when met); charged with the read below
``mfc_read_tag_status()``          ch 24     the update last requested: blocks like the
                                             ``mfc_read_tag_status_*`` of its mode
``spu_write_event_mask(m)``        ch 1      one channel write; the first starts tracking events
``spu_read_event_status()``        ch 0      blocks until an event in the mask is pending;
                                             returns pending AND mask
``spu_write_event_ack(m)``         ch 2      one channel write: clears those pending events
``spu_read_event_mask()``          ch 11     one channel read
``spu_stat_event_status()``        rchcnt    1 if an event in the mask is pending
``spu_read_decrementer()``         ch 8      one channel read
``spu_write_decrementer(v)``       ch 7      one channel write
``compute(cycles)``                —         the program's own work: ``cycles`` SPU cycles
``ls_access_loop(op, ls, n)``      —         loads/stores to the own LS: 16 B per cycle at best,
                                             DMA to the same LS goes first
=================================  ========  ==========================================

``tid`` and ``rid`` (transfer and replacement class IDs) are accepted for
compatibility and have no effect, as on most real code. Local-store memory
comes from :func:`ls_alloc`, which returns an :class:`~cellsim.machine.LsBuffer`
(an ``int`` address with ``.array(dtype)`` for a numpy view).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from greenlet import getcurrent

from . import dmacheck as _dmacheck
from ._checks import integer, mfc_args, word
from .exceptions import MfcError, NotInProgramError, UsageError
from .machine import EaBuffer, LsBuffer, Program

__all__ = [
    "MFC_COMMAND_QUEUE_AVAILABLE_EVENT",
    "MFC_DECREMENTER_EVENT",
    "MFC_GETLLAR_STATUS",
    "MFC_GET_CMD",
    "MFC_IN_MBOX_AVAILABLE_EVENT",
    "MFC_LIST_STALL_NOTIFY_EVENT",
    "MFC_LLR_LOST_EVENT",
    "MFC_OUT_INTR_MBOX_AVAILABLE_EVENT",
    "MFC_OUT_MBOX_AVAILABLE_EVENT",
    "MFC_PUTLLC_STATUS",
    "MFC_PUTLLUC_STATUS",
    "MFC_PUT_CMD",
    "MFC_SIGNAL_NOTIFY_1_EVENT",
    "MFC_SIGNAL_NOTIFY_2_EVENT",
    "MFC_TAG_STATUS_UPDATE_EVENT",
    "MFC_TAG_UPDATE_ALL",
    "MFC_TAG_UPDATE_ANY",
    "MFC_TAG_UPDATE_IMMEDIATE",
    "LibraryChannels",
    "ListElement",
    "compute",
    "ls_access_loop",
    "ls_alloc",
    "ls_array",
    "mfc_barrier",
    "mfc_eieio",
    "mfc_get",
    "mfc_getb",
    "mfc_getf",
    "mfc_getl",
    "mfc_getlb",
    "mfc_getlf",
    "mfc_getllar",
    "mfc_list",
    "mfc_put",
    "mfc_putb",
    "mfc_putf",
    "mfc_putl",
    "mfc_putlb",
    "mfc_putlf",
    "mfc_putllc",
    "mfc_putlluc",
    "mfc_read_atomic_status",
    "mfc_read_list_stall_status",
    "mfc_read_tag_mask",
    "mfc_read_tag_status",
    "mfc_read_tag_status_all",
    "mfc_read_tag_status_any",
    "mfc_read_tag_status_immediate",
    "mfc_sndsig",
    "mfc_sndsigb",
    "mfc_sndsigf",
    "mfc_sync",
    "mfc_write_list_stall_ack",
    "mfc_write_tag_mask",
    "mfc_write_tag_update",
    "mfc_write_tag_update_all",
    "mfc_write_tag_update_any",
    "mfc_write_tag_update_immediate",
    "spe_id",
    "spu_ls",
    "spu_read_decrementer",
    "spu_read_event_mask",
    "spu_read_event_status",
    "spu_read_in_mbox",
    "spu_read_signal1",
    "spu_read_signal2",
    "spu_stat_event_status",
    "spu_stat_in_mbox",
    "spu_stat_out_intr_mbox",
    "spu_stat_out_mbox",
    "spu_stat_signal1",
    "spu_stat_signal2",
    "spu_write_decrementer",
    "spu_write_event_ack",
    "spu_write_event_mask",
    "spu_write_out_intr_mbox",
    "spu_write_out_mbox",
]

MFC_PUT_CMD = 0x20
MFC_PUTB_CMD = 0x21
MFC_PUTF_CMD = 0x22
MFC_GET_CMD = 0x40
MFC_GETB_CMD = 0x41
MFC_GETF_CMD = 0x42
MFC_PUTL_CMD = 0x24
MFC_PUTLB_CMD = 0x25
MFC_PUTLF_CMD = 0x26
MFC_GETL_CMD = 0x44
MFC_GETLB_CMD = 0x45
MFC_GETLF_CMD = 0x46
MFC_SNDSIG_CMD = 0xA0
MFC_SNDSIGB_CMD = 0xA1
MFC_SNDSIGF_CMD = 0xA2
MFC_PUTLLUC_CMD = 0xB0
MFC_PUTLLC_CMD = 0xB4
MFC_BARRIER_CMD = 0xC0
MFC_EIEIO_CMD = 0xC8
MFC_SYNC_CMD = 0xCC
MFC_GETLLAR_CMD = 0xD0

MFC_PUTLLC_STATUS = 1
"""Atomic status bit: the putllc failed because the reservation was lost."""
MFC_PUTLLUC_STATUS = 2
MFC_GETLLAR_STATUS = 4

SPU_RD_EVENT_STAT = 0
SPU_WR_EVENT_MASK = 1
SPU_WR_EVENT_ACK = 2
SPU_RD_EVENT_MASK = 11
MFC_WR_TAG_UPDATE = 23
SPU_RD_SIG_NOTIFY_1 = 3
SPU_RD_SIG_NOTIFY_2 = 4
MFC_RD_LIST_STALL_STAT = 25
MFC_WR_LIST_STALL_ACK = 26
MFC_RD_ATOMIC_STAT = 27
SPU_WR_OUT_MBOX = 28
SPU_RD_IN_MBOX = 29
SPU_WR_OUT_INTR_MBOX = 30

MFC_TAG_UPDATE_IMMEDIATE = 0
MFC_TAG_UPDATE_ANY = 1
MFC_TAG_UPDATE_ALL = 2

# SPU events: the bits of SPU_RdEventStat, SPU_WrEventMask and SPU_WrEventAck
# (CBEA, "SPU Event Facility"); docs/model.md says when each is raised.
MFC_LLR_LOST_EVENT = 0x0400
MFC_SIGNAL_NOTIFY_1_EVENT = 0x0200
MFC_SIGNAL_NOTIFY_2_EVENT = 0x0100
MFC_OUT_MBOX_AVAILABLE_EVENT = 0x0080
MFC_OUT_INTR_MBOX_AVAILABLE_EVENT = 0x0040
MFC_DECREMENTER_EVENT = 0x0020
MFC_IN_MBOX_AVAILABLE_EVENT = 0x0010
MFC_COMMAND_QUEUE_AVAILABLE_EVENT = 0x0008
MFC_LIST_STALL_NOTIFY_EVENT = 0x0002
MFC_TAG_STATUS_UPDATE_EVENT = 0x0001


def _program(call: str) -> Program:
    g = getcurrent()
    if not isinstance(g, Program) or g.spe is None:
        raise NotInProgramError(
            f"{call} must be called from an SPE program run by Machine.run() "
            "(load it with Machine.load(spe, program))"
        )
    return g


def _dma(call: str, opcode: int, ls: Any, ea: Any, size: Any, tag: Any) -> None:
    p = _program(call)
    args = mfc_args(call, p.spe, p.engine_now, ls=ls, ea=ea, size=size, tag=tag)
    if _dmacheck.ACTIVE and p.machine._dma_checker is not None:
        p.machine._dma_checker.issue(p, call, opcode, args[0], args[1], args[2], args[3])
    p.call(p.engine.mfc, opcode, *args)


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


def _list_dma(call: str, opcode: int, ls: Any, ea: Any, lst: Any, size: Any, tag: Any) -> None:
    p = _program(call)
    args = mfc_args(call, p.spe, p.engine_now, ls=ls, ea=ea, size=size, tag=tag, lst=lst)
    if _dmacheck.ACTIVE and p.machine._dma_checker is not None:
        # a list's main-memory side is its elements': only its local-store range is checked
        p.machine._dma_checker.issue(p, call, opcode, int(ls), 0, int(size), int(tag), ea_checked=False)
    p.call(p.engine.mfc, opcode, *args)


def mfc_getl(ls: int, ea: int, lst: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """A DMA list into the local store from ``ls`` on: ``lst`` is the local-store
    address of the list (8-byte elements, see :func:`mfc_list`), ``size`` its
    size in bytes; the high word of ``ea`` is used with each element's low word."""
    _list_dma("mfc_getl", MFC_GETL_CMD, ls, ea, lst, size, tag)


def mfc_getlb(ls: int, ea: int, lst: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_getl`` with a barrier."""
    _list_dma("mfc_getlb", MFC_GETLB_CMD, ls, ea, lst, size, tag)


def mfc_getlf(ls: int, ea: int, lst: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_getl`` with a fence."""
    _list_dma("mfc_getlf", MFC_GETLF_CMD, ls, ea, lst, size, tag)


def mfc_putl(ls: int, ea: int, lst: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """A DMA list out of the local store (see :func:`mfc_getl`)."""
    _list_dma("mfc_putl", MFC_PUTL_CMD, ls, ea, lst, size, tag)


def mfc_putlb(ls: int, ea: int, lst: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_putl`` with a barrier."""
    _list_dma("mfc_putlb", MFC_PUTLB_CMD, ls, ea, lst, size, tag)


def mfc_putlf(ls: int, ea: int, lst: int, size: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_putl`` with a fence."""
    _list_dma("mfc_putlf", MFC_PUTLF_CMD, ls, ea, lst, size, tag)


ListElement = tuple[int, int] | tuple[int, int, bool] | EaBuffer
"""One element of a DMA list: ``(size, ea)``, ``(size, ea, stall_and_notify)``,
or a main-memory buffer (all of it: ``(buf.size, buf)``)."""


def mfc_list(lst: int, elements: Sequence[ListElement]) -> int:
    """Writes a DMA list at local-store address ``lst`` (an :class:`LsBuffer`
    from :func:`ls_alloc`, or an address): each element is ``(size, ea)``,
    ``(size, ea, stall_and_notify)`` or an :class:`EaBuffer` (the whole
    buffer). Returns the list's size in bytes, for ``mfc_getl``/``mfc_putl``."""
    p = _program("mfc_list")
    if isinstance(elements, (str, bytes)) or not hasattr(elements, "__iter__"):
        raise UsageError(
            f"mfc_list: elements must be a sequence of (size, ea[, stall]) or EaBuffers, not {elements!r}"
        )
    elements = list(elements)
    words = np.zeros(len(elements), dtype=">u8")
    for i, e in enumerate(elements):
        if isinstance(e, EaBuffer):
            e = (e.size, int(e))
        if not isinstance(e, (tuple, list)) or not 2 <= len(e) <= 3:
            raise UsageError(
                f"mfc_list: element {i} must be (size, ea), (size, ea, stall) or an EaBuffer, not {e!r}"
            )
        # The size field has 15 bits; the MFC checks the rules of a transfer.
        size = integer(e[0], f"mfc_list: element {i} size", 0, 0x8000)
        eal = integer(e[1], f"mfc_list: element {i} ea", 0, 1 << 64) & 0xFFFFFFFF
        stall = bool(e[2]) if len(e) > 2 else False
        words[i] = (int(stall) << 63) | (size << 32) | eal
    n = 8 * len(elements)
    if isinstance(lst, LsBuffer) and n > lst.size:
        raise UsageError(
            f"mfc_list: {len(elements)} elements need {n} bytes but the list buffer {lst!r} has {lst.size}"
        )
    start = integer(lst, "mfc_list: lst", 0, len(p.ls) - n + 1)
    p.ls[start : start + n] = words.view(np.uint8)
    return n


def mfc_sync(tag: int) -> None:
    """Every earlier command completes before any later one starts (``mfcsync``)."""
    _dma("mfc_sync", MFC_SYNC_CMD, 0, 0, 0, tag)


def mfc_eieio(tag: int) -> None:
    """Orders earlier storage accesses before later ones (``mfceieio``)."""
    _dma("mfc_eieio", MFC_EIEIO_CMD, 0, 0, 0, tag)


def mfc_getllar(ls: int, ea: int, tid: int = 0, rid: int = 0) -> None:
    """Gets the 128-byte lock line at ``ea`` into ``ls`` and reserves it."""
    _dma("mfc_getllar", MFC_GETLLAR_CMD, ls, ea, 128, 0)


def mfc_putllc(ls: int, ea: int, tid: int = 0, rid: int = 0) -> None:
    """Puts the lock line back if the reservation still holds (see ``mfc_read_atomic_status``)."""
    _dma("mfc_putllc", MFC_PUTLLC_CMD, ls, ea, 128, 0)


def mfc_putlluc(ls: int, ea: int, tid: int = 0, rid: int = 0) -> None:
    """Puts the lock line unconditionally."""
    _dma("mfc_putlluc", MFC_PUTLLUC_CMD, ls, ea, 128, 0)


def mfc_read_atomic_status() -> int:
    """Waits for the atomic command; returns ``MFC_GETLLAR_STATUS``,
    ``MFC_PUTLLUC_STATUS``, or for a putllc ``MFC_PUTLLC_STATUS`` if it failed (0 if it succeeded)."""
    p = _program("mfc_read_atomic_status")
    return p.call(p.engine.read_channel, MFC_RD_ATOMIC_STAT)


def mfc_sndsig(ls: int, ea: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """Writes the 4-byte word at ``ls`` to the signal-notification register at ``ea``
    (another SPE's problem-state area: ``spe_ps_area + SIG_NOTIFY_1``)."""
    _dma("mfc_sndsig", MFC_SNDSIG_CMD, ls, ea, 4, tag)


def mfc_sndsigb(ls: int, ea: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_sndsig`` with a barrier."""
    _dma("mfc_sndsigb", MFC_SNDSIGB_CMD, ls, ea, 4, tag)


def mfc_sndsigf(ls: int, ea: int, tag: int, tid: int = 0, rid: int = 0) -> None:
    """``mfc_sndsig`` with a fence (e.g. after the data puts it announces)."""
    _dma("mfc_sndsigf", MFC_SNDSIGF_CMD, ls, ea, 4, tag)


def spu_read_in_mbox() -> int:
    """Waits for a message in the inbound mailbox and returns it."""
    p = _program("spu_read_in_mbox")
    return p.call(p.engine.read_channel, SPU_RD_IN_MBOX)


def spu_write_out_mbox(value: int) -> None:
    """Writes the outbound mailbox; waits while it is full."""
    p = _program("spu_write_out_mbox")
    p.call(p.engine.write_channel, SPU_WR_OUT_MBOX, word(value, "spu_write_out_mbox: value"))


def spu_write_out_intr_mbox(value: int) -> None:
    """Writes the outbound-interrupt mailbox; waits while it is full."""
    p = _program("spu_write_out_intr_mbox")
    p.call(p.engine.write_channel, SPU_WR_OUT_INTR_MBOX, word(value, "spu_write_out_intr_mbox: value"))


def spu_stat_in_mbox() -> int:
    """Messages waiting in the inbound mailbox."""
    p = _program("spu_stat_in_mbox")
    return p.call(p.engine.channel_count, SPU_RD_IN_MBOX)


def spu_stat_out_mbox() -> int:
    """Free entries in the outbound mailbox (0 or 1)."""
    p = _program("spu_stat_out_mbox")
    return p.call(p.engine.channel_count, SPU_WR_OUT_MBOX)


def spu_stat_out_intr_mbox() -> int:
    """Free entries in the outbound-interrupt mailbox (0 or 1)."""
    p = _program("spu_stat_out_intr_mbox")
    return p.call(p.engine.channel_count, SPU_WR_OUT_INTR_MBOX)


def spu_read_signal1() -> int:
    """Waits for signal-notification register 1, returns it and clears it."""
    p = _program("spu_read_signal1")
    return p.call(p.engine.read_channel, SPU_RD_SIG_NOTIFY_1)


def spu_read_signal2() -> int:
    """Waits for signal-notification register 2, returns it and clears it."""
    p = _program("spu_read_signal2")
    return p.call(p.engine.read_channel, SPU_RD_SIG_NOTIFY_2)


def spu_stat_signal1() -> int:
    """1 if signal register 1 holds a signal."""
    p = _program("spu_stat_signal1")
    return p.call(p.engine.channel_count, SPU_RD_SIG_NOTIFY_1)


def spu_stat_signal2() -> int:
    """1 if signal register 2 holds a signal."""
    p = _program("spu_stat_signal2")
    return p.call(p.engine.channel_count, SPU_RD_SIG_NOTIFY_2)


def mfc_read_list_stall_status() -> int:
    """Waits until a DMA list stalls on a stall-and-notify element; returns the tag groups."""
    p = _program("mfc_read_list_stall_status")
    return p.call(p.engine.read_channel, MFC_RD_LIST_STALL_STAT)


def mfc_write_list_stall_ack(tag: int) -> None:
    """Lets the stalled list of ``tag`` go on."""
    p = _program("mfc_write_list_stall_ack")
    p.call(
        p.engine.write_channel, MFC_WR_LIST_STALL_ACK, integer(tag, "mfc_write_list_stall_ack: tag", 0, 32)
    )


def mfc_write_tag_mask(mask: int) -> None:
    """Selects the tag groups that the tag-status reads look at."""
    p = _program("mfc_write_tag_mask")
    p.tag_mask = integer(mask, "mfc_write_tag_mask: mask", 0, 1 << 32)
    p.library_mask = False
    p.call(p.engine.write_tag_mask, p.tag_mask)


def mfc_read_tag_mask() -> int:
    """The tag mask (the tag-mask channel read back)."""
    p = _tag_user("mfc_read_tag_mask")
    return p.call(p.engine.read_tag_mask)


def mfc_read_tag_status_all() -> int:
    """Blocks until every tag group in the mask is complete; returns the status."""
    p = _tag_user("mfc_read_tag_status_all")
    return _tags_done(p, p.call(p.engine.read_tag_status, MFC_TAG_UPDATE_ALL))


def mfc_read_tag_status_any() -> int:
    """Blocks until some tag group in the mask is complete; returns the status."""
    p = _tag_user("mfc_read_tag_status_any")
    return _tags_done(p, p.call(p.engine.read_tag_status, MFC_TAG_UPDATE_ANY))


def mfc_read_tag_status_immediate() -> int:
    """Returns the tag groups of the mask that are complete, without waiting."""
    p = _tag_user("mfc_read_tag_status_immediate")
    return _tags_done(p, p.call(p.engine.read_tag_status, MFC_TAG_UPDATE_IMMEDIATE))


def mfc_write_tag_update(mode: int) -> None:
    """Requests a tag-status update (``MFC_TAG_UPDATE_IMMEDIATE``, ``_ANY`` or ``_ALL``) on
    the tag mask: the tag-group event (``MFC_TAG_STATUS_UPDATE_EVENT``) fires when it is met,
    and :func:`mfc_read_tag_status` reads it. Free here: charged with that read."""
    p = _tag_user("mfc_write_tag_update")
    p.tag_update = integer(mode, "mfc_write_tag_update: mode", 0, 3)
    p.call(p.engine.write_channel, MFC_WR_TAG_UPDATE, p.tag_update)


def mfc_write_tag_update_all() -> None:
    """Requests the update "every group in the mask is done"."""
    mfc_write_tag_update(MFC_TAG_UPDATE_ALL)


def mfc_write_tag_update_any() -> None:
    """Requests the update "some group in the mask is done"."""
    mfc_write_tag_update(MFC_TAG_UPDATE_ANY)


def mfc_write_tag_update_immediate() -> None:
    """Requests the immediate update."""
    mfc_write_tag_update(MFC_TAG_UPDATE_IMMEDIATE)


def mfc_read_tag_status() -> int:
    """Reads the tag status the last :func:`mfc_write_tag_update` requested (blocking
    for ``any``/``all`` until it is met)."""
    p = _tag_user("mfc_read_tag_status")
    return _tags_done(p, p.call(p.engine.read_tag_status, p.tag_update))


def spu_write_event_mask(mask: int) -> None:
    """Selects the events ``spu_read_event_status`` reports (``MFC_*_EVENT`` bits). The
    first write starts tracking this program's events; events are recorded as pending
    whatever the mask."""
    p = _program("spu_write_event_mask")
    p.call(p.engine.write_channel, SPU_WR_EVENT_MASK, word(mask, "spu_write_event_mask: mask"))


def spu_read_event_mask() -> int:
    """The event mask, read back."""
    p = _program("spu_read_event_mask")
    return p.call(p.engine.read_channel, SPU_RD_EVENT_MASK)


def spu_read_event_status() -> int:
    """Waits until an event of the mask is pending; returns the pending events AND the
    mask (they stay pending until :func:`spu_write_event_ack`)."""
    p = _program("spu_read_event_status")
    return p.call(p.engine.read_channel, SPU_RD_EVENT_STAT)


def spu_stat_event_status() -> int:
    """1 if an event of the mask is pending (``spu_read_event_status`` would not wait)."""
    p = _program("spu_stat_event_status")
    return p.call(p.engine.channel_count, SPU_RD_EVENT_STAT)


def spu_write_event_ack(events: int) -> None:
    """Clears these pending events."""
    p = _program("spu_write_event_ack")
    p.call(p.engine.write_channel, SPU_WR_EVENT_ACK, word(events, "spu_write_event_ack: events"))


def library_wait_tags(mask: int, mode: int = MFC_TAG_UPDATE_ALL) -> int:
    """For libraries built on this API (``cellsim.mpi``, ``cellsim.messaging``):
    waits on the library's own tag groups ``mask`` (``mode``: one of the
    ``MFC_TAG_UPDATE_*``), as ``mfc_write_tag_mask`` then a tag-status read.

    The program's own mask is written back, as SDK libraries restore it,
    before the program next depends on it (its next tag-status or tag-mask
    read), so the program never waits on the library's groups. The
    restore's channel write is charged then (a program that writes its own
    mask first needs none); the save costs nothing, the program's mask being
    known.
    """
    p = _program("library_wait_tags")
    p.library_mask = True
    p.call(p.engine.write_tag_mask, integer(mask, "library_wait_tags: mask", 0, 1 << 32))
    return _tags_done(p, p.call(p.engine.read_tag_status, mode))


def _tags_done(p: Program, status: int) -> int:
    """A tag-status read's answer; ``--check-dma`` forgets the DMAs of the groups it reports done."""
    if _dmacheck.ACTIVE and p.machine._dma_checker is not None:
        p.machine._dma_checker.completed(p, int(status))
    return status


class LibraryChannels:
    """The fast path of a library built on this API (``cellsim.mpi``) to its SPU's MFC and
    channels: bound once to the program (the one calling, or ``program``), it makes the calls
    this module's functions make, with their checks, without finding the calling program at
    each call (a library makes millions).

    Kept from the functions: an MFC argument out of its register's range is the MFC's error
    (checked with two shifts; the full check runs only to word the error), ``--check-dma``
    checks every command against the program's DMAs in flight (a library's own are not kept:
    its protocol orders them, see :meth:`cellsim.dmacheck.DmaChecker.issue`) and sees every
    tag-status read, and the library's tag mask is the library's (:func:`library_wait_tags`:
    the program's own is written back before it next depends on it). Left to the caller:
    arguments are ints (the library's own values, not a program's); a transfer's size and
    alignment are the MFC's rules, which the engine checks.
    """

    __slots__ = ("_call", "_checker", "_engine", "program")

    def __init__(self, program: Program | None = None) -> None:
        p = program if program is not None else _program("LibraryChannels")
        if p.spe is None:
            raise NotInProgramError("LibraryChannels needs an SPE program (this one runs on the PPE)")
        self.program = p
        self._call = p.call
        self._engine = p.engine
        # A machine's checker is chosen when it is built (and it is in dmacheck.ACTIVE for
        # its life): read once, not through the WeakSet at each call.
        self._checker = p.machine._dma_checker

    def mfc(self, opcode: int, ls: int, ea: int, size: int, tag: int) -> None:
        """Issues one MFC command (``MFC_*_CMD``; not a list), as ``mfc_get`` and the others do."""
        if (ls | size | tag) >> 32 or ea >> 64:  # negative values too (-1 >> n is -1)
            p = self.program
            mfc_args(_CMD_NAMES.get(opcode, "mfc"), p.spe, p.engine_now, ls=ls, ea=ea, size=size, tag=tag)
        if self._checker is not None:
            name = _CMD_NAMES.get(opcode, "mfc")
            self._checker.issue(self.program, name, opcode, ls, ea, size, tag, library=True)
        self._call(self._engine.mfc, opcode, ls, ea, size, tag)

    def wait_tags(self, mask: int, mode: int = MFC_TAG_UPDATE_ALL) -> int:
        """:func:`library_wait_tags`: the library's tag groups ``mask`` read with ``mode``."""
        p = self.program
        p.library_mask = True
        self._call(self._engine.write_tag_mask, mask & 0xFFFFFFFF)
        status = self._call(self._engine.read_tag_status, mode)
        if self._checker is not None:
            self._checker.completed(p, int(status))
        return status

    def spu_stat_signal1(self) -> int:
        """:func:`spu_stat_signal1`."""
        return self._call(self._engine.channel_count, SPU_RD_SIG_NOTIFY_1)

    def spu_read_signal1(self) -> int:
        """:func:`spu_read_signal1`: waits for a signal and clears the register."""
        return self._call(self._engine.read_channel, SPU_RD_SIG_NOTIFY_1)

    def compute(self, cycles: int) -> None:
        """:func:`compute` of the library's own SPU code (``cycles`` >= 0)."""
        if cycles >> 64:  # out of range, negative too: the full check words the error
            integer(cycles, "compute: cycles")
        self._call(self._engine.compute, cycles)


# The SDK call of each MFC opcode (for messages).
_CMD_NAMES = {v: f"mfc_{k[4:-4].lower()}" for k, v in list(globals().items()) if re.match("MFC_.+_CMD$", k)}


def _tag_user(call: str) -> Program:
    """The program, with its own tag mask back in the channel if a library replaced it."""
    p = _program(call)
    if p.library_mask:
        p.library_mask = False
        p.call(p.engine.write_tag_mask, p.tag_mask)
    return p


def spu_read_decrementer() -> int:
    """Reads the decrementer, which counts down at the machine's timebase frequency."""
    p = _program("spu_read_decrementer")
    return p.call(p.engine.read_decrementer)


def spu_write_decrementer(value: int) -> None:
    """Sets the decrementer."""
    p = _program("spu_write_decrementer")
    p.call(p.engine.write_decrementer, word(value, "spu_write_decrementer: value"))


def compute(cycles: int, ls_accesses: int = 0) -> None:
    """Spends ``cycles`` SPU cycles computing (the program's own work).

    ``ls_accesses`` of those cycles load or store in the local store: DMA
    takes the local store's one port first, so the DMA lines that land or
    leave meanwhile delay the computation by the share of cycles it wanted
    the port (docs/model.md, "The local store's port")."""
    p = _program("compute")
    n = integer(cycles, "compute: cycles")
    if ls_accesses:
        p.call(p.engine.compute, n, integer(ls_accesses, "compute: ls_accesses"))
    else:
        p.call(p.engine.compute, n)


def ls_access_loop(
    op: str, lsa: int, nbytes: int, element: int = 16, *, dst: int | None = None, fill: int = 0
) -> int:
    """A loop of SPU loads (``"load"``), stores of ``fill`` (``"store"``) or
    copies to ``dst`` (``"copy"``) over ``nbytes`` of this SPE's local store,
    ``element`` (1, 2, 4, 8 or 16) bytes per access, simulated in the engine;
    returns the cycles it took.

    The SPU moves 16 bytes per cycle with a 6-cycle load latency; its ISA has
    only quadword loads and stores, so a narrower load costs a rotate and a
    narrower store a read-modify-write (``spu.ls_narrow_load_slots`` /
    ``spu.ls_narrow_store_slots`` issue slots). DMA transfers into or out of
    the same local store take the port first (``spu.dma_ls_cycles`` per
    128-byte request), delaying loads and stores that want it.
    """
    p = _program("ls_access_loop")
    if op not in ("load", "store", "copy"):
        raise UsageError(f"ls_access_loop: op {op!r} is not one of load, store, copy")
    if op == "copy" and dst is None:
        raise UsageError("ls_access_loop: a copy needs dst=")
    args = (
        integer(lsa, "ls_access_loop: lsa", 0, 1 << 32),
        integer(dst or 0, "ls_access_loop: dst", 0, 1 << 32),
        integer(nbytes, "ls_access_loop: nbytes", 0, 1 << 32),
        integer(element, "ls_access_loop: element", 0, 256),
        integer(fill, "ls_access_loop: fill", -128, 256) & 0xFF,
    )
    return int(p.call(p.engine.ls_access_loop, op, *args))


def spe_id() -> int:
    """The logical SPE number this program runs on."""
    spe = _program("spe_id").spe
    assert spe is not None, "an SPE program runs on an SPE"
    return spe


def spu_ls() -> np.ndarray:
    """The whole local store as a writable ``uint8`` array."""
    return _program("spu_ls").ls


def ls_alloc(size: int, align: int = 16) -> LsBuffer:
    """Reserves ``size`` bytes of local store aligned to ``align`` (a power of two).

    Raises ``MfcError`` (kind ``ls_overflow``) when the local store is full.
    """
    p = _program("ls_alloc")
    size = integer(size, "ls_alloc: size", 0, 1 << 32)
    align = integer(align, "ls_alloc: align", 1, 1 << 32)
    if align & (align - 1):
        raise UsageError(f"ls_alloc alignment {align} is not a power of two")
    start = -(-p.ls_next // align) * align
    end = start + size
    if end > p.ls_top:
        raise MfcError(
            f"ls_alloc({size}, align={align}) needs local store up to 0x{end:x} but it ends at "
            f"0x{p.ls_top:x} ({max(p.ls_top - start, 0)} bytes left)",
            kind="ls_overflow",
            spe=p.spe,
            command=f"ls_alloc({size}, align={align})",
        )
    p.ls_next = end
    return LsBuffer(start, size, p.ls[start:end])


def ls_array(ls: int, dtype: Any = np.uint8, count: int = -1) -> np.ndarray:
    """A writable numpy view of local store from address ``ls``."""
    p = _program("ls_array")
    offset = integer(ls, "ls_array: ls", 0, len(p.ls) + 1)
    count = integer(count, "ls_array: count", -1, len(p.ls) + 1)
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise UsageError(f"ls_array: dtype {dtype!r} is not a numpy dtype") from None
    room = (len(p.ls) - offset) // max(dt.itemsize, 1)
    if count == -1:
        count = room
    if count > room or dt.itemsize == 0:
        raise UsageError(
            f"ls_array: {count} items of {dt} from 0x{offset:x} run past the local store ({room} fit)"
        )
    view = np.frombuffer(p.ls, dtype=dt, count=count, offset=offset)
    if _dmacheck.ACTIVE and p.machine._dma_checker is not None:
        p.machine._dma_checker.access(p, offset, offset + view.nbytes, "ls_array()")
    return view
