"""The DMA hazard checker (``Machine(check_dma=True)``, ``--check-dma`` on
``cellsim run``, ``exec`` and ``mpirun``): for students, the races that the
real chip lets through silently.

A program's DMA is *in flight* from its issue until a tag-status read
reports its tag group complete. The checker stops the program with a
:class:`DmaHazardError` when

* it views a local-store range (``LsBuffer.array()``, ``spu.ls_array``)
  while a DMA into or out of that range is in flight: the data may be stale,
  or be overwritten under it;
* it issues a DMA whose local-store or main-memory range overlaps that of a
  DMA in flight, one of the two writing it (a get writes the local store, a
  put main memory), without an order between them: the same tag group and a
  fence or barrier form (``mfc_getf``, ``mfc_putb``...), or an
  ``mfc_barrier``/``mfc_sync`` in between.

The report names the SPE, both tags, the range and both call sites: the
program's line (Python) or ``file.c:line`` (C programs, whose DMAs reach
the chip through the same calls). Native (Rust) programs issue theirs inside
the engine, whose twin of this checker (``cellsim_engine::dma_check``, the same
rules; DMA lists not checked) raises the same error with their Rust
``file:line`` sites. Off by default: the chip's realistic stale
data stays what a program sees, and the check costs one test of a global
when no machine has it on.
"""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .exceptions import CellsimError

if TYPE_CHECKING:
    from .machine import Program

__all__ = ["ACTIVE", "DmaChecker", "DmaHazardError", "check_dma_default"]

ACTIVE: weakref.WeakSet[Any] = weakref.WeakSet()
"""The machines that check their DMAs now (empty: every check is skipped)."""

_DEFAULT: list[bool] = [False]

_PACKAGE = str(Path(__file__).resolve().parent)


class check_dma_default:
    """Within the block, every new Machine checks its DMAs (``--check-dma``)."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __enter__(self) -> None:
        self.saved = _DEFAULT[0]
        _DEFAULT[0] = self.on or self.saved

    def __exit__(self, *exc: object) -> None:
        _DEFAULT[0] = self.saved


def default() -> bool:
    """Whether a Machine built now checks its DMAs when not told."""
    return _DEFAULT[0]


class DmaHazardError(CellsimError):
    """A DMA race the checker found: ``.spe``, ``.tags``, ``.range`` (the
    overlapping bytes, ``(space, first, end)``) and ``.sites`` (the two call sites)."""

    exit_code = 1

    def __init__(
        self,
        message: str,
        spe: int,
        tags: tuple[int, ...],
        where: tuple[str, int, int],
        sites: tuple[str, str],
    ):
        super().__init__(message)
        self.spe = spe
        self.tags = tags
        self.range = where
        self.sites = sites


# (the atomic commands, getllar/putllc/putlluc, complete before their status read and
# belong to no tag group; sndsig writes a signal register, which queues: neither is checked)
_GETS = {0x40, 0x41, 0x42, 0x44, 0x45, 0x46}
_PUTS = {0x20, 0x21, 0x22, 0x24, 0x25, 0x26}
_FENCED = {0x42, 0x46, 0x22, 0x26, 0xA2}
_BARRIERED = {0x41, 0x45, 0x21, 0x25, 0xA1}
_ORDER_ALL = {0xC0, 0xC8, 0xCC}  # mfc_barrier, mfc_eieio, mfc_sync


@dataclass
class _Dma:
    call: str
    tag: int
    get: bool
    ls: tuple[int, int]
    ea: tuple[int, int]
    barrier: bool
    site: str
    serial: int


@dataclass
class _Spe:
    inflight: list[_Dma] = field(default_factory=list)
    ordered_before: int = 0
    """Commands with a smaller serial are ordered before any later one (an mfc_barrier)."""
    serial: int = 0


def call_site(p: Program) -> str:
    """Where the program made the call: its C line, or the first frame outside cellsim."""
    c = getattr(p, "c_site", None)
    if c:
        return str(c)
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back  # type: ignore[assignment]
    if f is None:
        return "?"
    return f"{f.f_code.co_filename}:{f.f_lineno} ({f.f_code.co_name})"


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo < hi else None


class DmaChecker:
    """The in-flight DMAs of each SPE of one machine, and the checks."""

    def __init__(self, memory_bytes: int, ls_ea0: int, ls_stride: int, ls_bytes: int, spes: int) -> None:
        self.spes: dict[int, _Spe] = {}
        self.memory_bytes = memory_bytes
        self.ls_ea0, self.ls_stride, self.ls_bytes, self.nspes = ls_ea0, ls_stride, ls_bytes, spes

    def _data(self, ea: int) -> bool:
        """Whether ``ea`` holds data (main memory or a local store), not a register
        of a problem-state area (a mailbox or signal register queues its writes)."""
        off = ea - self.ls_ea0
        return ea < self.memory_bytes or (
            0 <= off < self.ls_stride * self.nspes and off % self.ls_stride < self.ls_bytes
        )

    def issue(
        self,
        p: Program,
        call: str,
        opcode: int,
        ls: int,
        ea: int,
        size: int,
        tag: int,
        ea_checked: bool = True,
        library: bool = False,
    ) -> None:
        """Before the MFC takes the command: a race with one in flight stops the
        program (``ea_checked`` False: a list, whose main-memory side is its elements').
        ``library``: a library's own command (``cellsim.spu.LibraryChannels``), checked
        against the program's DMAs in flight but not kept: a library orders its own DMAs by
        its protocol (Kumar et al.'s MPI rewrites its flag words by puts in flight on its
        own tag groups), which is not the program's to wait on."""
        spe = int(p.spe)  # type: ignore[arg-type]
        st = self.spes.setdefault(spe, _Spe())
        st.serial += 1
        if opcode in _ORDER_ALL:
            st.ordered_before = st.serial
            return
        get = opcode in _GETS
        if not get and opcode not in _PUTS:
            return
        eas = (ea, ea + size) if ea_checked and self._data(ea) else (0, 0)
        new = _Dma(call, tag, get, (ls, ls + size), eas, opcode in _BARRIERED, "", st.serial)
        for old in st.inflight:
            if old.serial < st.ordered_before:
                continue
            if old.tag == tag and (opcode in _FENCED or opcode in _BARRIERED or old.barrier):
                continue
            for space, a, b, writes in (
                ("local store", new.ls, old.ls, new.get or old.get),
                ("main memory", new.ea, old.ea, not new.get or not old.get),
            ):
                both = _overlap(a, b) if writes and size else None
                if both is None:
                    continue
                site = call_site(p)
                raise DmaHazardError(
                    f"DMA race on SPE {spe}: {call} (tag {tag}) at {site} touches {space} "
                    f"0x{both[0]:x}-0x{both[1] - 1:x}, which {old.call} (tag {old.tag}) at {old.site} "
                    f"is still moving (not waited on) with no fence, barrier or mfc_barrier between them",
                    spe,
                    (old.tag, tag),
                    (space, both[0], both[1]),
                    (old.site, site),
                )
        if library:
            return
        new.site = call_site(p)
        st.inflight.append(new)

    def completed(self, p: Program, status: int) -> None:
        """A tag-status read reported the groups of ``status`` complete."""
        st = self.spes.get(int(p.spe)) if p.spe is not None else None
        if st is not None and st.inflight:
            st.inflight = [d for d in st.inflight if not status >> d.tag & 1]

    def access(self, p: Program, lo: int, hi: int, what: str) -> None:
        """The program views local store ``[lo, hi)``: not while a DMA moves it."""
        st = self.spes.get(int(p.spe)) if p.spe is not None else None
        if st is None:
            return
        for d in st.inflight:
            both = _overlap((lo, hi), d.ls)
            if both is not None:
                site = call_site(p)
                way = "into" if d.get else "out of"
                raise DmaHazardError(
                    f"local-store race on SPE {p.spe}: {what} at {site} uses 0x{both[0]:x}-0x{both[1] - 1:x} "
                    f"while {d.call} (tag {d.tag}) at {d.site} moves data {way} it; wait for tag "
                    f"{d.tag} first (mfc_write_tag_mask(1 << {d.tag}); mfc_read_tag_status_all())",
                    int(p.spe),  # type: ignore[arg-type]
                    (d.tag,),
                    ("local store", both[0], both[1]),
                    (d.site, site),
                )
