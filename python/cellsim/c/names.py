"""SPU program images by the names real programs use.

A PPU program finds its SPU program two ways, as the SDK has it: by file,
``spe_image_open("name.elf")`` (also ``"spu-task"``, ``"x.spu.elf"``, with any
directory), or by the symbol ``embedspu`` (or the SDK's make.footer with
``IMPORTS = x_spu.a``) gave the embedded image, ``extern spe_program_handle_t
x_spu;``. cellsim builds each SPU program from sources under a name; this
module says which written names reach which program, and checks, at build
time, that every name a PPU source writes reaches exactly one program.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..exceptions import UsageError

# the suffixes a file name of an SPU image carries (x.spu.elf, x.elf, x_spu.a, x.spu)
_SUFFIXES = (".elf", ".spu", ".a", ".o", ".so")
_OPEN = re.compile(r'\bspe_image_open\s*\(\s*"([^"\n]*)"')
_EXTERN = re.compile(r"\bextern\s+(?:const\s+)?spe_program_handle_t\s+([A-Za-z_]\w*)\s*[;,\[]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _stems(name: str) -> list[str]:
    """``name`` without a directory, then without each image-file suffix in
    turn (``x.spu.elf``, ``x.spu``, ``x``)."""
    base = name.rsplit("/", 1)[-1]
    out = [base]
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if base.endswith(suffix) and len(base) > len(suffix):
                base = base[: -len(suffix)]
                out.append(base)
                changed = True
    return out


def _identifier(name: str) -> str:
    """The C identifier a file name becomes (dashes and dots are underscores)."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return "_" + ident if ident[:1].isdigit() else ident


def aliases(program: str) -> set[str]:
    """Every name that reaches SPU program ``program``: the name itself, its
    stem (``x.spu.elf`` -> ``x``), each as a C identifier, and with the
    ``_spu``/``spu_`` the SDK's conventions add or drop."""
    names = {program, *_stems(program)}
    names |= {_identifier(n) for n in list(names)}
    for n in list(names):
        for affix in ("_spu", "-spu", ".spu"):
            if n.endswith(affix) and len(n) > len(affix):
                names.add(n[: -len(affix)])
        if n.startswith("spu_") or n.startswith("spu-"):
            names.add(n[4:])
    names |= {_identifier(n) for n in list(names)}
    return {n for n in names if n}


def resolve(written: str, programs: Iterable[str]) -> list[str]:
    """The programs a written name (a file given to ``spe_image_open``, or a
    handle's symbol) reaches: the closest match wins, the name itself, then
    its stems as identifiers (``hello_spu`` is ``hello.spu.elf`` rather than
    ``hello.elf``), then every alias."""
    programs = list(programs)
    base = written.rsplit("/", 1)[-1]
    for near in (
        lambda p: p == base,
        lambda p: _identifier(base) in _forms(p),
        lambda p: bool(_forms(p) & _forms(written)),
        lambda p: bool(aliases(p) & aliases(written)),
    ):
        hits = [p for p in programs if near(p)]
        if hits:
            return hits
    return []


def _forms(name: str) -> set[str]:
    """A name and its stems, as C identifiers."""
    return {_identifier(n) for n in (name, *_stems(name))}


def symbols(programs: Iterable[str], written: Iterable[str] = ()) -> dict[str, str]:
    """The handle symbols to define, each with its program: each ``written``
    symbol (an ``extern spe_program_handle_t`` of the sources) that reaches one
    program, and the program's own name and stems as C identifiers (a handle
    declared in a header cellsim did not read), unless ambiguous, a C keyword
    or a symbol the C library has (``read``: a handle there would take the
    program's calls to it)."""
    programs = list(programs)
    owners: dict[str, set[str]] = {}
    for p in programs:
        for a in _forms(p):
            if _IDENT.match(a) and a not in _C_KEYWORDS and not _library_symbol(a):
                owners.setdefault(a, set()).add(p)
    for w in written:
        hits = resolve(w, programs)
        if _IDENT.match(w) and len(hits) == 1:
            owners[w] = set(hits)
    return {a: next(iter(ps)) for a, ps in owners.items() if len(ps) == 1}


_C_KEYWORDS = frozenset(
    re.findall(
        r"\w+",
        """auto break case char const continue default do double else enum extern float for goto if
        inline int long register restrict return short signed sizeof static struct switch typedef
        union unsigned void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic
        _Generic _Noreturn _Static_assert _Thread_local asm typeof""",
    )
)


def _library_symbol(name: str) -> bool:
    """Whether the C library (or another library this process has loaded) defines ``name``."""
    try:
        return hasattr(ctypes.CDLL(None), name)
    except OSError:
        return False


def written_symbols(sources: Iterable[str | Path]) -> list[str]:
    """The handle symbols the sources declare ``extern``."""
    return [name for how, name, _ in written_names(sources) if how.startswith("extern")]


def written_names(sources: Iterable[str | Path]) -> list[tuple[str, str, str]]:
    """The SPU image names a PPU program's sources write, as (how, name,
    where): ``spe_image_open("...")`` literals and ``extern
    spe_program_handle_t NAME;`` declarations (in the sources and the headers
    beside them that they include)."""
    found: list[tuple[str, str, str]] = []
    for src in _with_local_headers(sources):
        try:
            text = _code(src.read_text(errors="replace"))
        except OSError:
            continue
        for how, pattern in (("spe_image_open", _OPEN), ("extern spe_program_handle_t", _EXTERN)):
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                found.append((how, m.group(1), f"{src}:{line}"))
    return found


_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)


def _code(text: str) -> str:
    """C text without its comments (a name in a comment is not a use), lines kept."""

    def blank(m: re.Match[str]) -> str:
        t = m.group(0)
        return t if t[0] in "\"'" else "\n" * t.count("\n") + " "

    return _TOKENS.sub(blank, text)


_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def _with_local_headers(sources: Iterable[str | Path]) -> list[Path]:
    """The sources and the quoted headers they include from their own directory."""
    seen: dict[Path, None] = {}
    todo = [Path(s).resolve() for s in sources]
    while todo:
        src = todo.pop()
        if src in seen or not src.is_file():
            continue
        seen[src] = None
        try:
            text = src.read_text(errors="replace")
        except OSError:
            continue
        todo += [(src.parent / h).resolve() for h in _INCLUDE.findall(text)]
    return list(seen)


def check(sources: Iterable[str | Path], programs: Mapping[str, object]) -> None:
    """Every SPU image name the PPU sources write reaches exactly one program;
    else a build-time error naming the name, where it is written and the candidates."""
    names = sorted(programs)
    for how, name, where in written_names(sources):
        hits = resolve(name, names)
        if len(hits) == 1:
            continue
        shown = ", ".join(names) or "none (give them with --spu NAME=file.c)"
        if not hits:
            raise UsageError(
                f"{where}: {how} {name!r} matches no SPU program of this build (its SPU programs: {shown}); "
                f"name one after it, e.g. --spu {name.rsplit('/', 1)[-1]}=FILE.c"
            )
        raise UsageError(
            f"{where}: {how} {name!r} matches several SPU programs ({', '.join(hits)}); "
            "give them names that tell them apart"
        )


def check_program_name(name: str) -> None:
    """An SPU program's name as a build takes it: a file name (no directory)."""
    if not name or "/" in name or name in (".", "..") or any(ord(c) < 32 for c in name):
        raise UsageError(
            f"--spu {name!r}: an SPU program's name is a file name as spe_image_open takes it "
            "(x.elf, spu-task, x_spu), without a directory"
        )
