"""A C image built by ``cellsim cc`` (a shared object) loaded into the host
process, and its threads: coroutines on their own stacks that the driver
resumes until their next request.

An image's writable data (``.data`` and ``.bss``) is where an SPU program's
statics live. The image is loaded once and serves every SPE that runs it:
each SPE's local store holds its own copy of the data at a fixed local-store
address, copied into the image before each resume and back after it, so a
pointer to a static is, in the local store, that address plus its offset.
A PPU image's data lives in simulated main memory the same way (one copy,
shared by the PPE threads), so SPEs can DMA to and from the PPU's statics.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

from ..exceptions import UsageError

KIND_SPU_MAIN = 0
KIND_PPU_MAIN = 1
KIND_PTHREAD = 2

STACK_BYTES = 1 << 20
"""Host stack of each C thread (mapped lazily: only the pages used cost memory)."""

_LS_PAGE = 4096


class ThreadHeader(ctypes.Structure):
    """The request block at the start of a runtime thread (``cellsim_thread`` in runtime.c)."""

    _fields_ = [
        ("args", ctypes.c_uint64 * 6),
        ("reply", ctypes.c_uint64),
        ("file", ctypes.c_char_p),
        ("line", ctypes.c_int64),
        ("op", ctypes.c_int64),
        ("result", ctypes.c_int64),
        ("even_cycles", ctypes.c_uint64),
        ("odd_cycles", ctypes.c_uint64),
    ]


@dataclass
class Segment:
    """The image's writable data: host range and its first contents."""

    start: int
    size: int
    pristine: bytes


class Image:
    """One loaded shared object built by ``cellsim cc``."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name
        try:
            self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            raise UsageError(f"cannot load the C image {path}: {e}") from None
        lib = self.lib
        lib.cellsim_thread_new.restype = ctypes.c_void_p
        lib.cellsim_thread_new.argtypes = [
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_uint64,
            ctypes.c_uint64,
            ctypes.c_uint64,
            ctypes.c_size_t,
        ]
        lib.cellsim_thread_resume.restype = ctypes.c_int64
        lib.cellsim_thread_resume.argtypes = [ctypes.c_void_p]
        lib.cellsim_thread_data.restype = None
        lib.cellsim_thread_data.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
        ]
        lib.cellsim_thread_free.restype = None
        lib.cellsim_thread_free.argtypes = [ctypes.c_void_p]
        start, end = ctypes.c_size_t(), ctypes.c_size_t()
        lib.cellsim_segment(ctypes.byref(start), ctypes.byref(end))
        size = end.value - start.value
        self.segment = Segment(start.value, size, ctypes.string_at(start.value, size))

    def symbol(self, name: str) -> int:
        """The host address of function or variable ``name`` in the image."""
        try:
            return ctypes.cast(getattr(self.lib, name), ctypes.c_void_p).value or 0
        except AttributeError:
            raise UsageError(f"the C image {self.path.name} has no symbol {name!r}") from None

    def ls_address(self, reserved: int) -> int:
        """Where the data goes in a local store: past the reserved part, with
        the host address's offset in its page, so alignments carry over."""
        return -(-reserved // _LS_PAGE) * _LS_PAGE + self.segment.start % _LS_PAGE

    def new_thread(self, kind: int, fn: int, a0: int = 0, a1: int = 0, a2: int = 0) -> int:
        t = self.lib.cellsim_thread_new(kind, fn, a0, a1, a2, STACK_BYTES)
        if not t:
            raise MemoryError("cellsim: no host memory for a C thread's stack")
        return int(t)

    def set_data(self, thread: int, home: int) -> None:
        """The thread's data lives at host address ``home`` between resumes."""
        self.lib.cellsim_thread_data(thread, home, self.segment.start, self.segment.size)

    def resume(self, thread: int) -> int:
        return int(self.lib.cellsim_thread_resume(thread))

    def free_thread(self, thread: int) -> None:
        self.lib.cellsim_thread_free(thread)


_IMAGES: dict[Path, Image] = {}


def load_image(path: Path, name: str) -> Image:
    """The image at ``path``, loaded once per process (dlopen would share it anyway)."""
    path = path.resolve()
    if path not in _IMAGES:
        _IMAGES[path] = Image(path, name)
    return _IMAGES[path]
