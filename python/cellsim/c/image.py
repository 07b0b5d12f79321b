"""A C image built by ``cellsim cc`` (a shared object): what the driver knows of it.

An image is never loaded into cellsim's own process: each program that runs it
gets a process of its own (:mod:`cellsim.c.process`), which loads a fresh copy,
so a rebuilt image runs its new code, every SPE has its own statics and C
library state, and a fault ends that program only. An image's writable data
(``.data`` and ``.bss``) is where an SPU program's statics live: an SPU image
is linked to load into its local store's window in its process, so its data
pages are local-store pages at their own local-store addresses (or, if the
loader put it elsewhere, copied past the reserved part). A PPU
image's data is simulated main memory the same way, so SPEs can DMA to and from
the PPU's statics.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..exceptions import UsageError

KIND_SPU_MAIN = 0
KIND_PPU_MAIN = 1
KIND_PTHREAD = 2

PAGE = 4096


@dataclass(frozen=True)
class Image:
    """One shared object built by ``cellsim cc``: its file and program name."""

    path: Path
    name: str


def ls_page(reserved: int) -> int:
    """The first local-store page an SPU program's data may use (past the reserved part)."""
    return -(-reserved // PAGE) * PAGE


def load_image(path: Path, name: str) -> Image:
    """The image at ``path`` (checked to exist; loaded by each program's process)."""
    path = path.resolve()
    if not path.is_file():
        raise UsageError(f"no C image at {path}")
    return Image(path, name)
