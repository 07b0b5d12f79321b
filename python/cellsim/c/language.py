"""The SPU/PPU C language extensions the host compiler lacks: the ``vector``
and ``__vector`` keywords (``vector unsigned int``, ``__vector float``,
``vector bool char``). ``qword`` and the ``vec_*`` names are typedefs of
``spu_intrinsics.h``.

The host compiler has no such keyword, so a source that uses one is compiled
from a copy with the types spelled as the ``vec_*`` typedefs, and so is every
header beside it (a header that declares ``vector float`` fields is common).
The copies sit together in one directory, a ``#line`` keeps errors and debug
information on the original files and lines, and the original directory is on
the quote-include path after the copies, so every other header beside the
source is found as if compiled in place.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

_VECTOR = re.compile(
    r"\b(?:__)?vector\s+(?:(unsigned|signed|bool)\s+)?(char|short|int|long\s+long|long|float|double)\b"
)
_VEC_NAMES = {
    ("unsigned", "char"): "vec_uchar16",
    ("signed", "char"): "vec_char16",
    ("", "char"): "vec_char16",
    ("bool", "char"): "vec_bchar16",
    ("unsigned", "short"): "vec_ushort8",
    ("signed", "short"): "vec_short8",
    ("", "short"): "vec_short8",
    ("bool", "short"): "vec_bshort8",
    ("unsigned", "int"): "vec_uint4",
    ("signed", "int"): "vec_int4",
    ("", "int"): "vec_int4",
    ("bool", "int"): "vec_bint4",
    ("unsigned", "long long"): "vec_ullong2",
    ("signed", "long long"): "vec_llong2",
    ("", "long long"): "vec_llong2",
    ("bool", "long long"): "vec_bllong2",
    ("", "float"): "vec_float4",
    ("", "double"): "vec_double2",
}
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".inc")


def _spelled(text: str) -> str | None:
    """``text`` with the vector types as ``vec_*`` typedefs, or None if it has none."""
    if not _VECTOR.search(text):
        return None

    def name(m: re.Match[str]) -> str:
        base = " ".join(m.group(2).split())
        return _VEC_NAMES.get((m.group(1) or "", base), m.group(0))

    return _VECTOR.sub(name, text)


def _copy(src: Path, into: Path) -> Path | None:
    """A spelled copy of ``src`` in ``into`` (same file name), or None if it needs none."""
    try:
        text = src.read_text(errors="replace")
    except OSError:
        return None
    spelled = _spelled(text)
    if spelled is None:
        return None
    out = into / src.name
    out.write_text(f'#line 1 "{src}"\n' + spelled)
    return out


def _spelled_dir(here: Path, tmp: Path) -> Path:
    """The directory of spelled copies of ``here``'s headers (made once per build)."""
    into = tmp / hashlib.sha1(str(here).encode()).hexdigest()[:12]
    if not into.exists():
        into.mkdir(parents=True)
        for h in here.iterdir():
            if h.suffix in _HEADER_SUFFIXES and h.is_file():
                _copy(h, into)
    return into


def include_flags(flags: list[str], tmp: Path) -> list[str]:
    """``flags`` with each include directory (``-Idir``, ``-I dir``) whose headers
    use the keyword preceded by the directory of their spelled copies."""
    out: list[str] = []
    i = 0
    while i < len(flags):
        f = flags[i]
        d = (
            f[2:]
            if f.startswith("-I") and len(f) > 2
            else flags[i + 1]
            if f == "-I" and i + 1 < len(flags)
            else None
        )
        if d is not None and Path(d).is_dir():
            into = _spelled_dir(Path(d).resolve(), tmp)
            if any(into.iterdir()):
                out += ["-I", str(into)]
        out.append(f)
        if f == "-I" and i + 1 < len(flags):
            out.append(flags[i + 1])
            i += 1
        i += 1
    return out


def prepare(src: Path, tmp: Path) -> tuple[Path, list[str]]:
    """The file to compile for source ``src`` and the flags it needs: the
    source itself if neither it nor a header beside it uses the keyword, else
    its spelled copy, with the spelled headers beside it and the original
    directory on the quote-include path."""
    src = src.resolve()
    here = src.parent
    into = _spelled_dir(here, tmp)
    spelled_headers = any(h.suffix in _HEADER_SUFFIXES for h in into.iterdir())
    own = _copy(src, into)
    if own is None and not spelled_headers:
        return src, []
    if own is None:  # the source as it is, beside the spelled headers
        own = into / src.name
        own.write_text(f'#line 1 "{src}"\n' + src.read_text(errors="replace"))
    return own, ["-iquote", str(here)]
