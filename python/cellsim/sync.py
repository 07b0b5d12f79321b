"""Synchronisation built on the atomic unit: fetch-and-add, a mutex and a
barrier, for SPE programs (getllar/putllc) and PPE programs (lwarx/stwcx).

Each lives in one 128-byte lock line of main memory (allocate it with
``Machine.alloc(128, align=128)``); SPE and PPE code can share the same line,
because reservations work across both (architecture notes, "Atomics").

>>> from cellsim import Machine
>>> from cellsim.sync import atomic_add
>>> m = Machine("qs20", seed=1)
>>> counter = m.alloc(128)
>>> def spe_main(speid, argp, envp):
...     for _ in range(10):
...         atomic_add(argp, 1)
>>> for s in range(8):
...     m.load(s, spe_main, argp=counter)
>>> _ = m.run()
>>> int(counter.array(">u4")[0])
80
"""

from __future__ import annotations

import numpy as np
from greenlet import getcurrent

from . import ppe
from ._checks import integer
from .exceptions import NotInProgramError, UsageError
from .machine import Program
from .spu import (
    MFC_PUTLLC_STATUS,
    compute,
    ls_alloc,
    mfc_getllar,
    mfc_putllc,
    mfc_putlluc,
    mfc_read_atomic_status,
)

__all__ = ["Barrier", "Mutex", "atomic_add", "ppe_atomic_add"]


def _line_buffer() -> tuple[int, np.ndarray]:
    """This SPE program's 128-byte lock-line buffer in its local store."""
    g = getcurrent()
    if not isinstance(g, Program) or g.spe is None:
        raise NotInProgramError("the SPE synchronisation helpers must be called from an SPE program")
    buf = getattr(g, "_lock_line", None)
    if buf is None:
        buf = ls_alloc(128, align=128)
        g._lock_line = buf  # type: ignore[attr-defined]
    return int(buf), buf.array(">u4")


def _line(ea: int) -> int:
    if ea % 128:
        raise UsageError(f"lock line 0x{ea:x} is not 128-byte aligned")
    return ea


def atomic_add(ea: int, delta: int, offset: int = 0) -> int:
    """Adds ``delta`` to the big-endian u32 at ``ea + 4*offset`` atomically;
    returns the old value (getllar / putllc, retried until it holds)."""
    offset = integer(offset, "atomic_add: offset (a word of the 128-byte line: 0 to 31)", 0, 32)
    delta = integer(delta, "atomic_add: delta", -(1 << 32) + 1, 1 << 32)
    lsa, words = _line_buffer()
    line = _line(ea)
    while True:
        mfc_getllar(lsa, line)
        mfc_read_atomic_status()
        old = int(words[offset])
        words[offset] = (old + delta) & 0xFFFFFFFF
        mfc_putllc(lsa, line)
        if not mfc_read_atomic_status() & MFC_PUTLLC_STATUS:
            return old


class Mutex:
    """A spin lock in word 0 of a lock line (0 free, 1 held)."""

    def __init__(self, ea: int, backoff_cycles: int = 100) -> None:
        self.ea = _line(int(ea))
        self.backoff = backoff_cycles

    def lock(self) -> None:
        """Spins (with a backoff) until the lock is taken."""
        lsa, words = _line_buffer()
        while True:
            mfc_getllar(lsa, self.ea)
            mfc_read_atomic_status()
            if words[0] == 0:
                words[0] = 1
                mfc_putllc(lsa, self.ea)
                if not mfc_read_atomic_status() & MFC_PUTLLC_STATUS:
                    return
            else:
                compute(self.backoff)

    def unlock(self) -> None:
        """Releases the lock (putlluc of the line with word 0 cleared)."""
        lsa, words = _line_buffer()
        mfc_getllar(lsa, self.ea)
        mfc_read_atomic_status()
        words[0] = 0
        mfc_putlluc(lsa, self.ea)
        mfc_read_atomic_status()

    def __enter__(self) -> Mutex:
        self.lock()
        return self

    def __exit__(self, *exc: object) -> None:
        self.unlock()


class Barrier:
    """A sense-reversing barrier for ``n`` SPE programs in one lock line
    (word 0: arrivals, word 1: the sense)."""

    def __init__(self, ea: int, n: int, poll_cycles: int = 200) -> None:
        if n < 1:
            raise UsageError(f"a barrier needs at least one participant, not {n}")
        self.ea = _line(int(ea))
        self.n = n
        self.poll = poll_cycles

    def wait(self) -> None:
        """Blocks until all ``n`` participants have called ``wait``."""
        lsa, words = _line_buffer()
        while True:
            mfc_getllar(lsa, self.ea)
            mfc_read_atomic_status()
            sense = int(words[1])
            arrived = int(words[0]) + 1
            if arrived == self.n:
                words[0], words[1] = 0, sense ^ 1
            else:
                words[0] = arrived
            mfc_putllc(lsa, self.ea)
            if not mfc_read_atomic_status() & MFC_PUTLLC_STATUS:
                break
        if arrived == self.n:
            return
        while True:  # the last to arrive flips the sense
            compute(self.poll)
            mfc_getllar(lsa, self.ea)
            mfc_read_atomic_status()
            if int(words[1]) != sense:
                return


def ppe_atomic_add(ea: int, delta: int, size: int = 4) -> int:
    """Adds ``delta`` to the word at ``ea`` from a PPE program (lwarx/stwcx); returns the old value."""
    while True:
        old = ppe.lwarx(ea, size)
        if ppe.stwcx(ea, (old + delta) & ((1 << (8 * size)) - 1), size):
            return old
