"""C apps: building them with the host C compiler (``cellsim cc``) and running
them on a simulated machine (``cellsim exec``).

An app is a directory: ``cellsim-app.json`` (what it holds), ``ppu.so`` (the
PPU program, if any), one ``spu-NAME.so`` per SPU program and ``cellsim-host``,
the program each of them runs in (its own process: see
:mod:`cellsim.c.process`). Each image is a shared object of host code built
against cellsim's headers (:func:`include_dir`) and its C runtime; the SPU
programs are named as ``spe_image_open("NAME")`` and ``extern
spe_program_handle_t NAME;`` find them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._checks import positive
from ..exceptions import CompileError, DeadlockError, RunawayError, UsageError
from ..machine import Machine, RunResult
from ..spec import MachineLike, MachineSpec
from . import language, names
from .image import Image, load_image
from .process import HOST, PROTOCOL, SPU_IMAGE_LSA, SPU_LS_AT
from .surface import explain_link_error

MANIFEST = "cellsim-app.json"
FORMAT = 2
"""The app format: 2 since each program runs in its own process (``cellsim-host``)."""
_HERE = Path(__file__).resolve().parent

# The host calls a program's image must not make on the host: exit ends the
# simulated program; a program's heap is the simulated machine's (an SPU program's
# in its local store), and so are a PPU program's threads.
_SPU_WRAPS = ["exit", "malloc", "free", "calloc", "realloc", "posix_memalign", "memalign", "aligned_alloc"]
_PPU_WRAPS = [
    "exit",
    "malloc",
    "free",
    "calloc",
    "realloc",
    "posix_memalign",
    "memalign",
    "aligned_alloc",
    "pthread_create",
    "pthread_join",
    "pthread_mutex_lock",
    "pthread_exit",
    "pthread_cond_init",
    "pthread_cond_destroy",
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "pthread_cond_signal",
    "pthread_cond_broadcast",
]


_PPU_FLAGS = "/ppu"  # the PPU program's own flags' key (no SPU program has a "/" in its name)


def include_dir() -> Path:
    """The directory of cellsim's SDK headers (``spu_mfcio.h``, ``libspe2.h``...)."""
    return _HERE.parent / "include"


def compiler() -> str:
    """The host C compiler: ``$CC``, else ``cc``, else ``gcc``."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise UsageError("no C compiler found: install gcc or clang, or set CC")
    return cc


@dataclass
class CApp:
    """A built app, loaded: its PPU image and SPU images by name."""

    path: Path
    ppu: Image | None
    spu: dict[str, Image] = field(default_factory=dict)
    count_intrinsics: bool = False

    @classmethod
    def load(cls, path: str | Path) -> CApp:
        path = Path(path)
        manifest = path / MANIFEST
        if not manifest.is_file():
            raise UsageError(f"{path} is not an app built by `cellsim cc` (no {MANIFEST} in it)")
        try:
            data = json.loads(manifest.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise UsageError(
                f"{manifest} is not a readable app manifest ({e}): rebuild the app with `cellsim cc`"
            ) from None
        ok = (
            isinstance(data, dict)
            and isinstance(data.get("spu"), dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in data["spu"].items())
            and (data.get("ppu") is None or isinstance(data.get("ppu"), str))
        )
        if not ok:
            raise UsageError(f"{manifest} is not an app manifest written by `cellsim cc`: rebuild the app")
        if data.get("format") != FORMAT or data.get("protocol") != PROTOCOL:
            raise UsageError(
                f"{path} was built by another version of cellsim (app format {data.get('format')!r}, this "
                f"cellsim reads {FORMAT}): rebuild it with `cellsim cc`"
            )
        ppu = load_image(path / data["ppu"], "ppu") if data.get("ppu") else None
        spu = {name: load_image(path / f, name) for name, f in data["spu"].items()}
        return cls(path, ppu, spu, bool(data.get("count_intrinsics", False)))


def load_spu(path: str | Path, name: str | None) -> Image:
    """SPU image ``name`` of app ``path``, or the image file ``path`` itself."""
    p = Path(path)
    if p.is_dir():
        app = CApp.load(p)
        if name is None and len(app.spu) == 1:
            name = next(iter(app.spu))
        if name not in app.spu:
            raise UsageError(f"{p} has no SPU program {name!r} (it has: {', '.join(sorted(app.spu))})")
        return app.spu[name]
    if not p.is_file():
        raise UsageError(f"no C program at {p}")
    return load_image(p, name or p.stem)


# -- building ---------------------------------------------------------------------------


def _flags(side: str, count_intrinsics: bool, wraps: Sequence[str]) -> list[str]:
    flags = [
        "-shared",
        "-fPIC",
        "-g",
        "-O2",
        "-std=gnu11",
        # the compiler's warnings are shown (cellsim cc prints them): an undeclared function
        # (memalign without <malloc.h>) returns an int that truncates a pointer, so it is an error
        "-Wall",
        "-Werror=implicit-function-declaration",
        "-Wno-main",
        f"-D__{side}__",
        "-I",
        str(include_dir()),
        "-I",
        str(_HERE),
        # the writable data after RELRO is exactly .data and .bss (see image.py)
        "-Wl,-z,now",
        "-Wl,-z,relro",
        # the image's own symbols bind inside it, never to the host process's
        "-Wl,-Bsymbolic",
        # every symbol resolved at build time: a function cellsim does not have (a libspe2
        # call it does not implement) is a link error naming it, never a failure at load time
        "-Wl,-z,defs",
        "-Wl," + ",".join(f"--wrap={w}" for w in wraps),
    ]
    if count_intrinsics:
        flags.append("-DCELLSIM_COUNT_INTRINSICS")
    return flags


def _compile(cmd: list[str], warnings: list[str] | None, what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        why = explain_link_error(proc.stderr, spu=what.startswith("the SPU"))
        raise CompileError(
            f"the C compiler ({cmd[0]}) failed to build {what}"
            + (f": {why}" if why else "")
            + " (its diagnostics follow)",
            proc.stderr,
        )
    if proc.stderr.strip():
        if warnings is None:
            sys.stderr.write(proc.stderr)
        else:
            warnings.append(proc.stderr.rstrip("\n"))


def _handles(programs: Sequence[str], written: Sequence[str]) -> str:
    """The C file that defines each SPU program's handle under every symbol that
    names it (``x_spu``, ``x``...): weak, so a program's own symbol of the same
    name wins."""
    lines = ['#include "libspe2.h"\n']
    for symbol, program in sorted(names.symbols(programs, written).items()):
        lines.append(
            f"__attribute__((weak)) spe_program_handle_t {symbol} = "
            f"{{sizeof(spe_program_handle_t), 0, 0, {json.dumps(program)}}};\n"
        )
    return "".join(lines)


def _sources(sources: Sequence[str | Path], tmp: Path) -> tuple[list[str], list[str]]:
    """The files to compile for ``sources`` (see :mod:`cellsim.c.language`) and their flags."""
    files: list[str] = []
    flags: list[str] = []
    for s in sources:
        f, extra = language.prepare(Path(s), tmp)
        files.append(str(f))
        if extra and extra[1] not in flags:
            flags += extra
    return files, flags


def build(
    ppu_sources: Sequence[str | Path],
    spu_programs: Mapping[str, Sequence[str | Path]],
    out: str | Path,
    *,
    count_intrinsics: bool = False,
    cflags: Sequence[str] = (),
    warnings: list[str] | None = None,
    spu_cflags: Mapping[str, Sequence[str]] | None = None,
    ppu_cflags: Sequence[str] = (),
    ppu_libs: Sequence[str] = (),
) -> Path:
    """Builds an app into directory ``out``: the PPU program from
    ``ppu_sources`` (may be empty for SPU-only apps) and SPU program NAME from
    ``spu_programs[NAME]``. Returns ``out``. The compiler's warnings (``-Wall``;
    an implicit function declaration is an error) go to ``warnings`` if given,
    else to stderr as the compiler would print them. ``cflags`` go to every
    compilation, ``spu_cflags[NAME]`` to SPU program NAME's and ``ppu_cflags``
    to the PPU program's after them; ``ppu_libs`` (``-lfoo``) to the PPU program's link."""
    out = Path(out)
    if out.exists() and not (out / MANIFEST).exists() and any(out.iterdir()):
        raise UsageError(f"-o {out}: exists and is not an app built by `cellsim cc`; pick a new name")
    if not ppu_sources and not spu_programs:
        raise UsageError("nothing to build: give PPU sources and/or --spu NAME=file.c")
    for name in spu_programs:
        names.check_program_name(name)
    for src in [*ppu_sources, *(s for v in spu_programs.values() for s in v)]:
        if not Path(src).is_file():
            raise UsageError(f"no source file {src}")
    names.check(ppu_sources, spu_programs)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        per = {**(spu_cflags or {}), _PPU_FLAGS: ppu_cflags}
        _build_into(out, ppu_sources, spu_programs, count_intrinsics, cflags, warnings, per, ppu_libs)
    except BaseException:
        if created:  # a failed build leaves no half-built app behind to refuse the next -o
            shutil.rmtree(out, ignore_errors=True)
        raise
    return out


def _build_into(
    out: Path,
    ppu_sources: Sequence[str | Path],
    spu_programs: Mapping[str, Sequence[str | Path]],
    count_intrinsics: bool,
    cflags: Sequence[str],
    warnings: list[str] | None,
    program_cflags: Mapping[str, Sequence[str]],
    ppu_libs: Sequence[str],
) -> None:
    cc = compiler()
    runtime = [str(_HERE / "runtime.c")]
    manifest: dict[str, object] = {
        "format": FORMAT,
        "protocol": PROTOCOL,
        "host": HOST,
        "ppu": None,
        "spu": {},
        "count_intrinsics": count_intrinsics,
    }
    spus: dict[str, str] = {}
    # the program every image runs in, a process of its own
    _compile(
        [cc, "-O2", "-g", "-I", str(_HERE), str(_HERE / "host.c"), "-o", str(out / HOST), "-ldl"],
        warnings,
        "cellsim-host",
    )
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for name, sources in spu_programs.items():
            srcs, src_flags = _sources(sources, tmp)
            target = out / f"spu-{name}.so"
            # linked to load into its local store's window (see process.SPU_LS_AT), pages of 4 KB
            flags = [
                *_flags("SPU", count_intrinsics, _SPU_WRAPS),
                f"-Wl,-Ttext-segment=0x{SPU_LS_AT + SPU_IMAGE_LSA:x}",
                "-Wl,-z,max-page-size=4096",
            ]
            _compile(
                [
                    cc,
                    *flags,
                    *language.include_flags([*cflags, *program_cflags.get(name, ())], tmp),
                    *src_flags,
                    *srcs,
                    *runtime,
                    str(_HERE / "spu_runtime.c"),
                    "-o",
                    str(target),
                    "-lm",
                    "-ldl",
                ],
                warnings,
                f"the SPU program {name!r}",
            )
            spus[name] = target.name
        if ppu_sources:
            handles = tmp / "handles.c"
            handles.write_text(_handles(list(spu_programs), names.written_symbols(ppu_sources)))
            srcs, src_flags = _sources(ppu_sources, tmp)
            target = out / "ppu.so"
            flags = _flags("PPU", count_intrinsics, _PPU_WRAPS)
            ppu_runtime = [*runtime, str(_HERE / "ppu_runtime.c"), str(handles)]
            _compile(
                [
                    cc,
                    *flags,
                    *language.include_flags([*cflags, *program_cflags.get(_PPU_FLAGS, ())], tmp),
                    *src_flags,
                    *srcs,
                    *ppu_runtime,
                    "-o",
                    str(target),
                    *ppu_libs,
                    "-lpthread",
                    "-lm",
                    "-ldl",
                ],
                warnings,
                "the PPU program",
            )
            manifest["ppu"] = target.name
    manifest["spu"] = spus
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


# -- running ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecResult:
    """How ``cellsim exec`` ended: the PPU ``main``'s exit status and the run.
    ``crashes`` names each SPU program that died (its SPE, the signal, the C line)."""

    exit_code: int
    run: RunResult
    compute_mode: str
    crashes: tuple[str, ...] = ()


def run_app(
    app_path: str | Path,
    *,
    machine: MachineLike = "qs20",
    seed: int = 0,
    argv: Sequence[str] = (),
    trace: str | Path | None = None,
    host_time_scale: float | None = None,
    placement: Sequence[int] | None = None,
    check_dma: bool | None = None,
) -> ExecResult:
    """Runs the app's PPU ``main(argc, argv)`` on a new machine to the end.
    ``check_dma``: stop at a DMA race (see :mod:`cellsim.dmacheck`).
    ``placement``: the physical SPE of the first logical SPEs (context ``i``
    runs on ``placement[i]``); the others take the remaining physical SPEs in
    order (:class:`cellsim.Machine` takes the whole permutation).

    ``host_time_scale``: charge each C thread's host CPU time between two
    calls, times this factor, as simulated time (SMPI's host-time scaling;
    off by default because the run then depends on the host)."""
    from .threads import ComputeMode, env_of, run_ppu_main, where_blocked

    app = CApp.load(app_path)
    if app.ppu is None:
        raise UsageError(
            f"{app_path} has no PPU program: load its SPU programs with Machine.load(spe, CProgram(...))"
        )
    if placement is not None:
        spes = MachineSpec.of(machine).facts.spes
        outside = [p for p in placement if not 0 <= p < spes]
        if outside:
            raise UsageError(
                f"placement: no physical SPE {outside[0]} on {machine} (its SPEs are 0-{spes - 1})"
            )
        placement = [*placement, *(p for p in range(spes) if p not in placement)]
    m = Machine(machine, seed=seed, trace=trace is not None, placement=placement, check_dma=check_dma)
    env = env_of(m)
    env.app = app
    scale = None if host_time_scale is None else positive(host_time_scale, "host_time_scale")
    env.mode = ComputeMode(app.count_intrinsics, scale)
    ppu = app.ppu
    name = Path(app_path).name
    try:
        result = m.run(lambda: run_ppu_main(env, ppu, [name, *argv]))
    except (DeadlockError, RunawayError) as e:
        where = where_blocked(env)
        if where and e.args:
            e.args = (f"{e.args[0]} (the C threads' last calls: {where})", *e.args[1:])
        raise
    finally:
        if env.ppu is not None:
            env.ppu.close()  # its output flushed before anything cellsim prints
    if trace is not None:
        m.write_trace(trace)
    crashes = tuple(c.describe() for c in env.crashes)
    return ExecResult(int(result.value or 0) & 0xFF, result, env.mode.describe(), crashes)
