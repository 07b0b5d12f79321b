"""Building a C app from the Makefiles an SDK sample ships (``cellsim make``).

The Cell SDK's samples build with its ``make.footer``: each directory's
Makefile sets a few variables and includes the footer, which does the rest.
The variables cellsim reads:

- ``DIRS``: subdirectories with their own Makefile, built first;
- ``PROGRAM_ppu``/``PROGRAMS_ppu``, ``PROGRAM_spu``/``PROGRAMS_spu``: the
  programs of the directory, built from ``OBJS`` (``x.o`` is ``x.c``) or, as
  the footer does without it, every ``.c`` file of the directory;
- ``LIBRARY_embed``/``LIBRARY_embed64``: the archive that embeds the SPU
  program (``embedspu``), under its program name as symbol;
- ``IMPORTS``: what the program links; an embedded SPU archive names its SPU
  program (the SDK's own libraries, ``-lspe2``, ``-lsync``..., are cellsim's);
- ``CFLAGS``, ``CPPFLAGS``, ``CC_OPT_LEVEL``, ``INCLUDE``, ``DEFINES``: flags for the compiler.

Variables are read as make reads simple assignments (``=``, ``:=``, ``?=``,
``+=``, continuation lines, ``$(VAR)``); conditionals and rules are not run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..exceptions import UsageError

_ASSIGN = re.compile(r"^(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*([:+?]?=)\s*(.*)$")
_REF = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_.]*)[)}]")
# the SDK's own libraries: cellsim's headers and runtime are them
_SDK_LIBS = {"spe2", "spe", "sync", "misc", "pthread", "m", "dl", "numa", "simdmath", "mfcio"}
_FLAG_VARS = ("CC_OPT_LEVEL", "CPPFLAGS", "CFLAGS", "INCLUDE", "DEFINES")


def _variables(path: Path) -> dict[str, str]:
    """The variables a Makefile assigns (environment variables fill the references it does not)."""
    text = path.read_text(errors="replace").replace("\\\n", " ")
    out: dict[str, str] = {}

    def expand(value: str) -> str:
        return _REF.sub(lambda m: out.get(m.group(1), os.environ.get(m.group(1), "")), value)

    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        m = _ASSIGN.match(line.strip())
        if not m or raw[:1] == "\t":  # a recipe line is not an assignment
            continue
        name, op, value = m.group(1), m.group(2), m.group(3).strip()
        if op == "+=":
            out[name] = f"{out.get(name, '')} {expand(value)}".strip()
        elif op == "?=":
            out.setdefault(name, expand(value))
        else:
            out[name] = expand(value)
    return out


@dataclass
class Program:
    """One program a Makefile builds: its name, sources and compiler flags."""

    name: str
    directory: Path
    sources: list[Path]
    flags: list[str]
    imports: list[str] = field(default_factory=list)


@dataclass
class Project:
    """What a tree of SDK Makefiles builds: the PPU program, the SPU programs,
    and which SPU program each embedding archive holds."""

    ppu: list[Program] = field(default_factory=list)
    spu: dict[str, Program] = field(default_factory=dict)
    archives: dict[str, list[str]] = field(default_factory=dict)
    read: set[Path] = field(default_factory=set)


def _sources(directory: Path, objs: str, program: str) -> list[Path]:
    """A program's sources: ``OBJS`` as ``.c`` files, else every ``.c`` file of its directory."""
    if objs.split():
        return [directory / (Path(o).stem + ".c") for o in objs.split()]
    found = sorted(directory.glob("*.c"))
    if not found:
        raise UsageError(
            f"{directory / 'Makefile'}: {program} has no sources (no OBJS and no .c file beside it)"
        )
    return found


def _flags(v: dict[str, str], directory: Path) -> list[str]:
    """The compiler flags a Makefile sets, with relative include directories made absolute."""
    words = " ".join(v.get(name, "") for name in _FLAG_VARS).split()
    out = []
    for w in words:
        if w.startswith("-I") and len(w) > 2 and not Path(w[2:]).is_absolute():
            w = "-I" + str(directory / w[2:])
        out.append(w)
    return out


def read(directory: str | Path, project: Project | None = None) -> Project:
    """The programs of the Makefile in ``directory`` and of its ``DIRS``."""
    directory = Path(directory).resolve()
    project = project or Project()
    if directory in project.read:  # DIRS that lead back (DIRS = .): each Makefile once
        return project
    project.read.add(directory)
    makefile = next(
        (directory / n for n in ("Makefile", "makefile", "GNUmakefile") if (directory / n).is_file()), None
    )
    if makefile is None:
        raise UsageError(f"no Makefile in {directory}")
    v = _variables(makefile)
    for sub in v.get("DIRS", "").split():
        read(directory / sub, project)
    flags = _flags(v, directory)
    imports = v.get("IMPORTS", "").split()
    for side in ("spu", "ppu"):
        names = [*v.get(f"PROGRAM_{side}", "").split(), *v.get(f"PROGRAMS_{side}", "").split()]
        names += v.get(f"PROGRAM_{side}64", "").split() + v.get(f"PROGRAMS_{side}64", "").split()
        for name in names:
            sources = _sources(directory, v.get("OBJS", ""), name)
            program = Program(Path(name).name, directory, sources, flags, imports)
            if side == "spu":
                project.spu[program.name] = program
            else:
                project.ppu.append(program)
    spu_here = [*v.get("PROGRAM_spu", "").split(), *v.get("PROGRAMS_spu", "").split()]
    for var in ("LIBRARY_embed", "LIBRARY_embed64"):
        for lib in v.get(var, "").split():
            project.archives[Path(lib).name] = [Path(p).name for p in spu_here]
    return project


def embedded(project: Project, ppu: Program) -> list[str]:
    """The SPU programs a PPU program imports (its embedding archives); all of
    them when it imports none by name (a sample that opens its images by file)."""
    wanted: list[str] = []
    for imp in ppu.imports:
        if imp.startswith("-l") or not imp.endswith(".a"):
            continue
        lib = Path(imp).name
        if lib.removeprefix("lib").removesuffix(".a") in _SDK_LIBS and lib not in project.archives:
            continue  # $(SDKLIB)/libmisc.a: cellsim's own
        if lib in project.archives:
            wanted += project.archives[lib]
        elif Path(lib).stem.removeprefix("lib") in project.spu:
            wanted.append(Path(lib).stem.removeprefix("lib"))
        else:
            known = ", ".join(sorted(project.archives)) or "none"
            raise UsageError(
                f"IMPORTS {imp}: no Makefile of this tree embeds an SPU program in {lib} "
                f"(LIBRARY_embed archives: {known}; SPU programs: {', '.join(sorted(project.spu)) or 'none'})"
            )
    return list(dict.fromkeys(wanted)) or list(project.spu)


def link_flags(ppu: Program) -> list[str]:
    """The ``-l`` imports that are not the SDK's own libraries (cellsim provides those)."""
    return [i for i in ppu.imports if i.startswith("-l") and i[2:] not in _SDK_LIBS]
