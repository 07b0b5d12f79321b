"""C programs in their own processes: the simulator's side of the protocol.

Each C SPU program, and the PPU program with all its threads, runs in a process
of its own (``cellsim-host IMAGE``, built by ``cellsim cc`` beside the images),
so a fault in user code (a NULL write, ``abort()``, a stack overflow) ends that
program, never the simulator, and every SPE has its own statics and C library
state. The process maps the machine's shared memory at fixed addresses (logical
SPE ``n``'s local store at ``LS_BASE + n * 2**32``, main memory at
``MEMORY_BASE``) and talks to the driver through one control block
(``cellsim_proto.h``, protocol version ``PROTOCOL``): the driver writes a
command and hands over the turn, the process runs the C thread to its next SDK
call, writes the request and hands the turn back. The sequence of requests and
replies is the one the simulated machine sees, so timing does not depend on
where the C code runs.

A process that dies of a signal first writes what it knows (the signal, the
faulting address, the program counter and a backtrace): :class:`CrashReport`
turns that into the C file and line (``addr2line``), or the program's last SDK
call when no line is known.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import _engine
from ..exceptions import UsageError

if TYPE_CHECKING:
    from ..machine import Machine

PROTOCOL = 1
"""The version of the protocol (``CELLSIM_PROTOCOL`` in ``cellsim_proto.h``)."""
HOST = "cellsim-host"
"""The file name of the host program in an app directory."""
LS_BASE = 0x2000_0000_0000
MEMORY_BASE = 0x3000_0000_0000
LS_STRIDE = 1 << 32
SPU_LS_AT = 0x1000_0000_0000
"""Where an SPU program's process maps its own local store (4 GB-aligned: a pointer's low
32 bits are its local-store address); its image is linked to load at ``SPU_LS_AT +
SPU_IMAGE_LSA``, so that its code and statics sit in the local store as on the SPU."""
SPU_IMAGE_LSA = 0x4000
SPU_LS_BYTES = 256 * 1024
SPU_STACK_GUARD = SPU_LS_BYTES - 64 * 1024
"""The guard page at the foot of an SPU program's stack (the top 64 KB of its local store)."""
LS_WINDOW = 1 << 32
CTL_BYTES = 16384
MAGIC = 0x31314D49534C4C45

TURN_CHILD = 0
CMD_SETUP, CMD_NEW_THREAD, CMD_RESUME, CMD_QUIT = 1, 2, 3, 4
MSG_HELLO, MSG_READY, MSG_REQUEST, MSG_CRASH, MSG_ERROR = 1, 2, 3, 4, 5

_u64 = ctypes.c_uint64


class Ctl(ctypes.Structure):
    """The control block (``cellsim_ctl`` in ``cellsim_proto.h``)."""

    _fields_ = [
        ("turn", ctypes.c_uint32),
        ("parent_cpu", ctypes.c_uint32),
        ("magic", _u64),
        ("version", _u64),
        ("pid", _u64),
        ("child_cpu", ctypes.c_uint32),
        ("pad", ctypes.c_uint32),
        ("file_id", _u64),
        ("cmd", _u64),
        ("thread", _u64),
        ("reply", _u64),
        ("cargs", _u64 * 6),
        ("msg", _u64),
        ("op", _u64),
        ("args", _u64 * 6),
        ("line", ctypes.c_int64),
        ("result", ctypes.c_int64),
        ("even_cycles", _u64),
        ("odd_cycles", _u64),
        ("measure", _u64),
        ("cpu_ns", _u64),
        ("seg_start", _u64),
        ("seg_size", _u64),
        ("image_base", _u64),
        ("image_end", _u64),
        ("main_fn", _u64),
        ("crash_signal", _u64),
        ("crash_code", _u64),
        ("crash_addr", _u64),
        ("crash_pc", _u64),
        ("nframes", _u64),
        ("frames", _u64 * 32),
        ("file", ctypes.c_char * 256),
        ("text", ctypes.c_char * 256),
        ("payload", ctypes.c_uint8 * 4096),
    ]


def _word(name: str) -> int:
    return int(getattr(Ctl, name).offset) // 8


# the words the driver reads after each request, in one slice: msg .. odd_cycles
W_CMD, W_THREAD, W_REPLY, W_CARGS = _word("cmd"), _word("thread"), _word("reply"), _word("cargs")
W_MEASURE, W_CPU_NS, W_FILE_ID = _word("measure"), _word("cpu_ns"), _word("file_id")
W_FIRST = _word("msg")
W_LAST = _word("odd_cycles") + 1
# offsets in that slice
R_MSG, R_OP, R_ARGS, R_LINE, R_RESULT, R_EVEN, R_ODD = 0, 1, 2, 8, 9, 10, 11
assert _word("line") - W_FIRST == R_LINE and _word("odd_cycles") - W_FIRST == R_ODD
assert ctypes.sizeof(Ctl) <= CTL_BYTES
_FILE = Ctl.file.offset
_PAYLOAD = Ctl.payload.offset


class ProcessEnded(Exception):
    """Internal: the process ended without a request (a crash, ``_exit``, a kill)."""

    def __init__(self, report: CrashReport) -> None:
        super().__init__(report.describe())
        self.report = report


class HostLimit(Exception):
    """Internal: the host-time limit passed while the C code ran."""


@dataclass
class CrashReport:
    """How a C program's process ended when it did not return from ``main``."""

    signal: int | None
    """The fatal signal, or None if the process exited (``_exit``)."""
    exit_status: int | None
    address: int | None
    location: str | None
    """``file:line (function)`` of the faulting code, if the debug info says."""
    last_call: str | None
    """``file:line`` of the program's last SDK call."""

    @property
    def signal_name(self) -> str:
        if self.signal is None:
            return ""
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    def describe(self) -> str:
        if self.signal is None:
            what = f"ended its process with exit status {self.exit_status} (_exit() or a call like it)"
        else:
            what = f"was killed by {self.signal_name} ({_SIGNAL_WORDS.get(self.signal, 'a fatal signal')}"
            if self.address is not None and self.signal in (signal.SIGSEGV, signal.SIGBUS):
                what += f" at address 0x{self.address:x}{_in_local_store(self.address)}"
            what += ")"
        if self.location:
            what += f" at {self.location}"
        if self.last_call:
            what += f"; its last SDK call was at {self.last_call}"
        elif not self.location:
            what += "; it had made no SDK call"
        return what


def _in_local_store(address: int) -> str:
    """What a faulting address is to an SPU program: a local-store address, the
    guard page at the foot of its stack, or past the end of its local store."""
    lsa = address - SPU_LS_AT
    if not 0 <= lsa < LS_WINDOW:
        return ""
    if lsa >= SPU_LS_BYTES:
        return f", local-store address 0x{lsa:x}: past the end of the 256 KB local store"
    if SPU_STACK_GUARD <= lsa < SPU_STACK_GUARD + 4096:
        return (
            f", local-store address 0x{lsa:x}: the guard page below the stack "
            "(a stack overflow, or a run past the data)"
        )
    return f", local-store address 0x{lsa:x}"


_SIGNAL_WORDS: dict[int, str] = {
    signal.SIGSEGV: "invalid memory access",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "arithmetic error, e.g. an integer division by zero",
    signal.SIGILL: "illegal instruction",
    signal.SIGABRT: "abort()",
    signal.SIGTRAP: "trap",
    signal.SIGKILL: "killed",
}


def host_program(image: Path) -> Path:
    """The ``cellsim-host`` beside an image (``cellsim cc`` writes it into the app)."""
    host = image.parent / HOST
    if not host.is_file():
        raise UsageError(
            f"{image.parent} has no {HOST}: the app was built by an older cellsim; rebuild it (`cellsim cc`)"
        )
    return host


class CProcess:
    """One C program's process: its control block and the turn passed to it."""

    def __init__(
        self, machine: Machine, image: Path, name: str, maps: list[tuple[int, int, int]], what: str
    ) -> None:
        self.machine = machine
        self.image = image
        self.name = name
        self.what = what  # "SPE 3", "the PPU program": for reports
        self.block = _engine.ControlBlock(CTL_BYTES)
        view = np.frombuffer(memoryview(self.block.view()), dtype=np.uint8)
        self.bytes = view
        self.words = view.view(np.uint64)
        self.ctl = Ctl.from_buffer(view)  # type: ignore[arg-type]
        self.files: dict[int, str] = {}
        self.last_call: str | None = None
        self.has_turn = False
        self.words[0] = TURN_CHILD  # the turn is the process's until its hello
        argv = [str(host_program(image)), str(PROTOCOL), str(image), str(self.block.fd), str(os.getpid())]
        # an SPU program's own local store is mapped around its image, which is linked into it
        argv += [f"{fd}:0x{at:x}:{size}" + (":image" if at == SPU_LS_AT else "") for fd, at, size in maps]
        fds = [self.block.fd, *(fd for fd, _, _ in maps)]
        try:
            self.proc = subprocess.Popen(argv, pass_fds=fds, close_fds=True)
        except OSError as e:
            raise UsageError(f"cannot start the process of the C program {name}: {e}") from None
        self.has_turn = True
        self._wait(give=False)
        if self.ctl.msg != MSG_HELLO or self.ctl.magic != MAGIC or self.ctl.version != PROTOCOL:
            self.close()
            raise UsageError(
                f"the C program {name}'s process does not speak protocol {PROTOCOL}: rebuild it (cellsim cc)"
            )
        self.seg_start = int(self.ctl.seg_start)
        self.seg_size = int(self.ctl.seg_size)
        self.main_fn = int(self.ctl.main_fn)
        if not self.main_fn:
            self.close()
            raise UsageError(f"the C program {name} has no main")

    # -- the turn --------------------------------------------------------------------------

    def _wait(self, *, give: bool = True) -> None:
        code, why = self.machine._engine.resume_child(self.block, self.proc.pid, give)
        if code == 0:
            self.has_turn = False
            msg = int(self.words[W_FIRST + R_MSG])
            if msg == MSG_ERROR:
                text = self.ctl.text.decode(errors="replace")
                self.close()
                raise UsageError(f"the C program {self.name}'s process could not go on: {text}")
            if msg == MSG_CRASH:
                raise ProcessEnded(self._crash())
            return
        if code == 1:
            raise ProcessEnded(self._ended())
        raise HostLimit(why)

    def setup(self, fd: int, offset: int, home: int, heap: tuple[int, int] = (0, 0)) -> None:
        """The image's data becomes the pages of ``fd`` from ``offset``
        (mapped at ``home`` in the process too), after its first contents are
        copied there; an SPU program's ``malloc`` takes ``heap`` (its bounds in the process)."""
        w = self.words
        w[W_CMD] = CMD_SETUP
        w[W_CARGS : W_CARGS + 5] = (fd, offset, home, *heap)
        self._wait()

    def new_thread(
        self, kind: int, fn: int, a0: int = 0, a1: int = 0, a2: int = 0, stack: tuple[int, int] = (0, 0)
    ) -> list[int]:
        """Starts a C thread on ``stack`` (its address in the process and its
        bytes; (0, 0): the process maps one); returns its first request (see :meth:`resume`)."""
        w = self.words
        w[W_CMD] = CMD_NEW_THREAD
        w[W_CARGS : W_CARGS + 6] = (kind, fn, a0, a1, a2, stack[0])
        w[W_REPLY] = stack[1]
        return self._request()

    def resume(self, thread: int, reply: int) -> list[int]:
        """Resumes C thread ``thread`` with ``reply``; returns its next request's
        words (msg, op, args[6], line, result, even, odd cycles) and the thread in ``.thread``."""
        w = self.words
        w[W_CMD] = CMD_RESUME
        w[W_THREAD] = thread
        w[W_REPLY] = reply
        return self._request()

    def _request(self) -> list[int]:
        self.has_turn = True
        self._wait()
        r: list[int] = self.words[W_FIRST:W_LAST].tolist()
        self.thread = int(self.words[W_THREAD])
        if r[R_LINE]:
            file = self.file()
            if file:  # (a PPU call's heap request took the call site already)
                self.last_call = f"{file}:{r[R_LINE]}"
        return r

    def file(self) -> str:
        """The C file of the last request (the process sends a name once per file)."""
        fid = int(self.words[W_FILE_ID])
        name = self.files.get(fid)
        if name is None:
            raw = bytes(self.bytes[_FILE : _FILE + 256])
            name = self.files[fid] = raw.split(b"\0", 1)[0].decode(errors="replace")
        return name

    def payload(self, size: int) -> bytes:
        return bytes(self.bytes[_PAYLOAD : _PAYLOAD + size])

    def set_payload(self, data: bytes) -> None:
        self.bytes[_PAYLOAD : _PAYLOAD + len(data)] = np.frombuffer(data, dtype=np.uint8)

    # -- the end ---------------------------------------------------------------------------

    def close(self) -> None:
        """Ends the process: politely (its output flushed) if it waits for its turn,
        killed if it is running C code."""
        proc = self.proc
        if proc.poll() is None:
            if not self.has_turn:
                self.words[W_CMD] = CMD_QUIT
                self.has_turn = True
                with contextlib.suppress(BaseException):
                    self.machine._engine.resume_child(self.block, proc.pid, True)
            try:
                proc.wait(timeout=2 if not self.has_turn else 0.001)
            except subprocess.TimeoutExpired:
                proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)

    def _crash(self) -> CrashReport:
        c = self.ctl
        sig = int(c.crash_signal)
        frames = [int(f) for f in c.frames[: min(int(c.nframes), 32)]]
        pc, addr = int(c.crash_pc), int(c.crash_addr)
        lo, hi = int(c.image_base), int(c.image_end)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return CrashReport(sig, None, addr, _locate(self.image, pc, frames, lo, hi), self.last_call)

    def _ended(self) -> CrashReport:
        status = self.proc.wait()
        if status < 0:
            return CrashReport(-status, None, None, None, self.last_call)
        return CrashReport(None, status, None, None, self.last_call)


def _link_address(image: Path) -> int:
    """The address an ELF image's first loaded segment was linked at (0 for a plain
    shared object): where ``addr2line`` counts its addresses from."""
    try:
        with image.open("rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit ELF only
                return 0
            order = "<" if head[5] == 1 else ">"
            (phoff,) = struct.unpack_from(order + "Q", head, 32)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return 0
    for i in range(phnum):
        (kind,) = struct.unpack_from(order + "I", table, i * phentsize)
        if kind == 1:  # PT_LOAD
            (vaddr,) = struct.unpack_from(order + "Q", table, i * phentsize + 16)
            return int(vaddr) & ~0xFFF
    return 0


def _locate(image: Path, pc: int, frames: list[int], lo: int, hi: int) -> str | None:
    """``file:line (function)`` of the first frame in the image's own code: the
    faulting instruction, or the call that led out of the image (``abort()``)."""
    if pc in frames:
        frames = frames[frames.index(pc) :]
    elif lo <= pc < hi:
        frames = [pc, *frames]
    bias = lo - _link_address(image)  # 0 for an SPU image loaded where it was linked
    candidates = [(f if f == pc else f - 1) - bias for f in frames if lo <= f < hi]
    if not candidates or shutil.which("addr2line") is None:
        return None
    try:
        out = subprocess.run(
            ["addr2line", "-f", "-C", "-e", str(image), *(hex(a) for a in candidates)],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    for fn, where in zip(out[0::2], out[1::2], strict=False):
        file, _, line = where.partition(":")
        line = line.split(" ")[0]
        if file == "??" or not line.isdigit() or line == "0":
            continue
        if Path(file).name in _RUNTIME_FILES:
            continue
        return f"{file}:{line} (in {fn})" if fn and fn != "??" else f"{file}:{line}"
    return None


_RUNTIME_FILES = {"runtime.c", "ppu_runtime.c", "spu_runtime.c"}


def share_local_stores(machine: Machine) -> list[tuple[int, int, int]]:
    """Every local store as shared memory: ``(fd, address in a C process, size)``."""
    size = machine.facts.ls_bytes
    return [
        (machine._engine.share_local_store(s), LS_BASE + s * LS_STRIDE, size)
        for s in range(machine.spe_count)
    ]


__all__ = [
    "LS_BASE",
    "MEMORY_BASE",
    "PROTOCOL",
    "SPU_IMAGE_LSA",
    "SPU_LS_AT",
    "CProcess",
    "CrashReport",
    "ProcessEnded",
    "share_local_stores",
]
