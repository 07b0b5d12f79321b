"""Writes python/cellsim/_engine.pyi, the typed stub of the binding, from its Rust sources.

    python crates/cellsim-py/stubgen.py          # write the stub
    python crates/cellsim-py/stubgen.py --check  # exit 1, with a diff, if the stub is not current

The module's members are what `lib.rs`'s `#[pymodule]` adds: its classes (each `#[pyclass]` with
its `#[pymethods]` blocks, in every file `lib.rs` declares, or an enum's variants), its functions
(`#[pyfunction]`) and its constants (typed in `CONSTANTS`). The stub is then formatted and fixed
by ruff (`ruff format`, `ruff check --fix`) as `make lint` wants it. `make lint` runs `--check`,
then `mypy.stubtest`, which compares the stub with the built module.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CRATE = Path(__file__).resolve().parent
ROOT = CRATE.parent.parent
STUB = ROOT / "python" / "cellsim" / "_engine.pyi"

# The module's constants (`m.add("NAME", ...)` in lib.rs): their values are Rust expressions the
# generator cannot type, so each is typed here; a constant missing here is an error.
CONSTANTS = {"__version__": "str", "BUILD": "str", "COMMIT": "str", "KERNELS": "list[str]"}

# The buffer protocol: pyo3's slots and the Python methods a type checker knows them by.
BUFFER = {
    "__getbuffer__": "def __buffer__(self, flags: int, /) -> memoryview: ...",
    "__releasebuffer__": "def __release_buffer__(self, view: memoryview, /) -> None: ...",
}


def split_top(s: str, sep: str = ",") -> list[str]:
    """``s`` split at ``sep`` outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "<([":
            depth += 1
        if ch in ">)]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [x.strip() for x in out]


@dataclass(frozen=True)
class PyClass:
    rust: str
    name: str
    doc: str
    final: bool
    variants: tuple[str, ...]
    """An enum's variants (class attributes); empty for a struct."""


@dataclass(frozen=True)
class Fn:
    attrs: str
    name: str
    params: str
    ret: str


class Binding:
    """The binding's Rust sources, read once."""

    def __init__(self, crate: Path = CRATE) -> None:
        lib = (crate / "src" / "lib.rs").read_text()
        mods = re.findall(r"^(?:pub )?mod (\w+);", lib, re.M)
        self.files = [(crate / "src" / f"{m}.rs").read_text() for m in mods]
        self.src = "\n".join(self.files)
        body = lib[lib.index("#[pymodule") :]
        self.module_classes = re.findall(r"add_class::<(?:\w+::)*(\w+)>", body)
        self.module_functions = re.findall(r"wrap_pyfunction!\((?:\w+::)*(\w+)", body)
        self.module_constants = re.findall(r'\bm\.add\("(\w+)"', body)
        self.aliases = {
            m[1]: " ".join(m[2].split())
            for m in re.finditer(r"^(?:pub(?:\(crate\))? )?type (\w+) = (\(.*?\));", self.src, re.S | re.M)
        }
        self.classes = {c.rust: c for c in self._classes()}
        missing = set(self.module_classes) - set(self.classes)
        if missing:
            raise SystemExit(f"stubgen: no #[pyclass] found for {sorted(missing)}")

    def _classes(self) -> Iterator[PyClass]:
        pat = re.compile(
            r"((?:^///[^\n]*\n)*)#\[pyclass(?:\(([^)]*)\))?\]\s*\n(?:#\[[^\n]*\n)*"
            r"pub (struct|enum) (\w+)\s*\{(.*?)^\}",
            re.S | re.M,
        )
        for m in pat.finditer(self.src):
            doc, args, kind, rust, body = m[1], m[2] or "", m[3], m[4], m[5]
            named = re.search(r'\bname\s*=\s*"(\w+)"', args)
            variants = ()
            if kind == "enum":
                body = re.sub(r"^\s*(///|//)[^\n]*\n", "", body, flags=re.M)
                variants = tuple(re.findall(r"^\s*(\w+)\s*,?\s*$", body, re.M))
            yield PyClass(
                rust=rust,
                name=named[1] if named else rust,
                doc=doc_text(doc),
                final="subclass" not in args,
                variants=variants,
            )

    def py_type(self, t: str) -> str:
        t = t.strip()
        if t in self.aliases:
            return self.py_type(self.aliases[t])
        t = re.sub(r"^&('\w+\s+)?(mut\s+)?", "", t)
        if t == "[u8]":
            return "bytes"
        for wrapper, form in (("PyResult", "{}"), ("Option", "{} | None"), ("Vec", "list[{}]")):
            m = re.match(rf"{wrapper}<(.*)>$", t)
            if m:
                if wrapper == "Vec" and m[1] == "u8":
                    return "bytes"
                return form.format(self.py_type(m[1]))
        if t.startswith("(") and t.endswith(")"):
            parts = split_top(t[1:-1])
            return "None" if not parts else f"tuple[{', '.join(self.py_type(p) for p in parts)}]"
        if re.match(r"(u|i)(8|16|32|64|size)$", t):
            return "int"
        if t in ("f64", "f32"):
            return "float"
        if t == "bool":
            return "bool"
        if t in ("str", "String"):
            return "str"
        if "PyDict" in t:
            return "dict[str, Any]"
        if "PyList" in t:
            return "list[Any]"
        if "PyBytes" in t:
            return "bytes"
        if t in self.classes:
            return self.classes[t].name
        if t == "Next":
            return "int | RunEnd"
        if t == "Self":
            return "None"
        return "Any"

    def params(self, raw: str, attrs: str) -> list[str]:
        """A Rust function's parameters as Python's, with the defaults of its ``#[pyo3(signature)]``."""
        sig = re.search(r"signature\s*=\s*\((.*?)\)\)\]", attrs, re.S)
        defaults = {}
        for p in split_top(sig[1]) if sig else []:
            if "=" in p:
                k, v = (x.strip() for x in p.split("=", 1))
                v = {"None": "None", "false": "False", "true": "True"}.get(v, v)
                if not re.match(r"^-?[\d.]+$|^None$|^False$|^True$", v):
                    v = "..."
                defaults[k] = v
        out = []
        for p in split_top(raw):
            if not p or p.startswith("&") or p.startswith("mut self") or p == "self" or ":" not in p:
                continue
            name, t = p.split(":", 1)
            name = name.replace("mut ", "").strip()
            if "Python<" in t or name == "slf":
                continue
            pt = self.py_type(t)
            out.append(f"{name}: {pt} = {defaults[name]}" if name in defaults else f"{name}: {pt}")
        return out

    def methods(self, rust: str) -> Iterator[Fn]:
        """The methods of every ``#[pymethods] impl`` block of the class ``rust``: those of the
        file that defines it first, then the other files' in ``lib.rs``'s order."""
        start = f"#[pymethods]\nimpl {rust} "
        defines = re.compile(rf"^pub (struct|enum) {rust}\b", re.M)
        for text in sorted(self.files, key=lambda t: not defines.search(t)):
            rest = text
            while start in rest:
                i = rest.index(start)
                yield from fns(block_after(rest, i))
                rest = rest[i + len(start) :]

    def class_lines(self, c: PyClass) -> list[str]:
        lines = ["@final"] if c.final else []
        lines += [f"class {c.name}:", f'    """{c.doc}"""']
        lines += [f"    {v}: {c.name}" for v in c.variants]
        new, rest = [], []
        for f in self.methods(c.rust):
            unknown = set(re.findall(r"#\[(\w+)\]", f.attrs)) - {"new", "getter"}
            if unknown:
                raise SystemExit(
                    f"stubgen: {c.name}.{f.name}: #[{', '.join(sorted(unknown))}] is not handled"
                )
            if f.name in BUFFER:
                rest.append(f"    {BUFFER[f.name]}")
                continue
            ps = self.params(f.params, f.attrs)
            if "#[new]" in f.attrs:
                new.append(f"    def __new__(cls{''.join(', ' + p for p in ps)}) -> Self: ...")
                continue
            if "#[getter]" in f.attrs:
                rest.append("    @property")
            rest.append(
                f"    def {f.name}(self{''.join(', ' + p for p in ps)}) -> {self.py_type(f.ret)}: ..."
            )
        return [*lines, *new, *rest, ""]

    def stub(self) -> str:
        """The stub, as the generator writes it (before ruff)."""
        unknown = set(self.module_constants) - set(CONSTANTS)
        if unknown:
            raise SystemExit(f"stubgen: type the module constants {sorted(unknown)} in CONSTANTS")
        classes = [self.classes[r] for r in self.module_classes]
        names = sorted([*self.module_constants, *(c.name for c in classes), *self.module_functions])
        lines = [
            '"""Typed stub of the extension module, written by crates/cellsim-py/stubgen.py from the',
            "binding's Rust sources: do not edit it, run the generator (make lint checks that the stub",
            'is current, and mypy.stubtest that it agrees with the built module)."""',
            "",
            "from typing import Any, Self, final",
            "",
            f"__all__ = [{', '.join(repr(n) for n in names)}]",
        ]
        lines += [f"{n}: {CONSTANTS[n]}" for n in self.module_constants]
        lines.append("")
        for c in classes:
            lines += self.class_lines(c)
        functions = {f.name: f for f in fns(self.src) if "#[pyfunction]" in f.attrs}
        missing = set(self.module_functions) - set(functions)
        if missing:
            raise SystemExit(f"stubgen: no #[pyfunction] found for {sorted(missing)}")
        for name in self.module_functions:
            f = functions[name]
            lines.append(
                f"def {name}({', '.join(self.params(f.params, f.attrs))}) -> {self.py_type(f.ret)}: ..."
            )
        return "\n".join(lines) + "\n"


def doc_text(doc: str) -> str:
    """A Rust doc comment's first paragraph as one line."""
    paragraph: list[str] = []
    for line in doc.splitlines():
        text = line.strip().removeprefix("///").strip()
        if not text and paragraph:
            break
        if text:
            paragraph.append(text)
    return " ".join(paragraph).replace('"""', "'''")


def fns(block: str) -> Iterator[Fn]:
    pat = re.compile(
        r"((?:\s*///[^\n]*\n)*)((?:\s*#\[[^\]]*\]\s*\n)*)\s*(?:pub\s+)?(?:unsafe\s+)?fn\s+(\w+)(?:<[^>]*>)?"
        r"\((.*?)\)\s*(?:->\s*([^{]*?))?\s*\{",
        re.S,
    )
    for m in pat.finditer(block):
        yield Fn(attrs=m[2], name=m[3], params=m[4], ret=m[5] or "()")


def block_after(text: str, at: int) -> str:
    """The inside of the first ``{...}`` block after ``at``."""
    j = text.index("{", at)
    depth = 0
    for k in range(j, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return text[j + 1 : k]
    raise SystemExit("stubgen: unbalanced braces")


def ruff(args: list[str], text: str) -> str:
    """``text`` through ruff as the stub's file (the project's settings); an error if ruff leaves
    a complaint."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(STUB.relative_to(ROOT)), "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"stubgen: ruff {' '.join(args)} on the stub:\n{done.stderr}")
    return done.stdout


def generate() -> str:
    """The stub as it must be: generated, fixed and formatted by ruff."""
    formatted = ruff(["format"], Binding().stub())
    return ruff(["format"], ruff(["check", "--fix", "--quiet"], formatted))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the stub is current")
    args = parser.parse_args()
    stub = generate()
    if not args.check:
        STUB.write_text(stub)
        return 0
    have = STUB.read_text() if STUB.exists() else ""
    if have == stub:
        return 0
    rel = str(STUB.relative_to(ROOT))
    sys.stdout.writelines(
        difflib.unified_diff(have.splitlines(True), stub.splitlines(True), rel, "generated")
    )
    print(f"{rel} is not what crates/cellsim-py/stubgen.py writes: run it", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
