"""Writes python/cellsim/_engine.pyi from the binding's Rust signatures: python crates/cellsim-py/stubgen.py > python/cellsim/_engine.pyi (then ruff format and ruff check --fix it; make lint checks it with mypy.stubtest)."""

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent / "src"
FILES = ["machine.rs", "spu.rs", "ppe.rs", "programs.rs", "stats.rs", "trace.rs", "child.rs"]
src = "\n".join((HERE / f).read_text() for f in FILES)


def split_top(s, sep=","):
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


ALIASES = {
    m.group(1): " ".join(m.group(2).split())
    for m in re.finditer(r"^(?:pub(?:\(crate\))? )?type (\w+) = (\(.*?\));", src, re.S | re.M)
}


def py_type(t):
    t = t.strip()
    if t in ALIASES:
        return py_type(ALIASES[t])
    t = re.sub(r"^&('\w+\s+)?(mut\s+)?", "", t)
    if t == "[u8]":
        return "bytes"
    m = re.match(r"PyResult<(.*)>$", t)
    if m:
        return py_type(m.group(1))
    m = re.match(r"Option<(.*)>$", t)
    if m:
        return f"{py_type(m.group(1))} | None"
    m = re.match(r"Vec<(.*)>$", t)
    if m:
        inner = m.group(1)
        return "bytes" if inner == "u8" else f"list[{py_type(inner)}]"
    if t.startswith("(") and t.endswith(")"):
        parts = split_top(t[1:-1])
        return "None" if not parts else f"tuple[{', '.join(py_type(p) for p in parts)}]"
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
    if t == "StorageView":
        return "StorageView"
    if t == "Next":
        return "int | RunEnd"
    if t == "Self":
        return "None"
    return "Any"


def fns(block):
    # yields (attrs, name, params, ret, doc)
    pat = re.compile(
        r"((?:\s*///[^\n]*\n)*)((?:\s*#\[[^\]]*\]\s*\n)*)\s*(?:pub\s+)?(?:unsafe\s+)?fn\s+(\w+)(?:<[^>]*>)?\((.*?)\)\s*(?:->\s*([^{]*?))?\s*\{",
        re.S,
    )
    for m in pat.finditer(block):
        yield m.group(2), m.group(3), m.group(4), (m.group(5) or "()"), m.group(1)


def params(raw, sig):
    defaults = {}
    if sig:
        for p in split_top(sig):
            if "=" in p:
                k, v = p.split("=", 1)
                v = v.strip()
                v = {"None": "None", "false": "False", "true": "True"}.get(v, v)
                if v.startswith("Vec::new"):
                    v = "..."
                if not re.match(r"^-?[\d.]+$|^None$|^False$|^True$|^\.\.\.$", v):
                    v = "..."
                defaults[k.strip()] = v
    out = []
    for p in split_top(raw):
        if not p or p.startswith("&") or p.startswith("mut self") or p == "self":
            continue
        if ":" not in p:
            continue
        name, t = p.split(":", 1)
        name = name.replace("mut ", "").strip()
        if "Python<" in t:
            continue
        pt = py_type(t)
        if name in defaults:
            out.append(f"{name}: {pt} = {defaults[name]}")
        else:
            out.append(f"{name}: {pt}")
    return out


def impl_block(text, start_pat):
    i = text.index(start_pat)
    j = text.index("{", i)
    depth = 0
    for k in range(j, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return text[j + 1 : k]
    raise SystemExit("no block")


lines = [
    '"""Typed stubs of the extension module (checked by mypy.stubtest in make lint).',
    "",
    'Generated from crates/cellsim-py/src/*.rs signatures; keep in step with them."""',
    "",
    "from typing import Any, Self, final",
    "",
    '__all__ = ["BUILD", "COMMIT", "Engine", "KERNELS", "RunEnd", "StorageView", "__version__", "error_catalogue", "ls_ea", "machine_names", "machine_toml", "ps_ea"]',
    "BUILD: str",
    "COMMIT: str",
    "KERNELS: list[str]",
    "__version__: str",
    "",
    "@final",
    "class StorageView:",
    '    """A view of simulated bytes (memory or a local store) with the buffer protocol."""',
    "    def __len__(self) -> int: ...",
    "    def __buffer__(self, flags: int, /) -> memoryview: ...",
    "    def __release_buffer__(self, view: memoryview, /) -> None: ...",
    "",
    "@final",
    "class RunEnd:",
    '    """How a run ended, where a step would name the next thread to resume."""',
    "    Finished: RunEnd",
    "    Failed: RunEnd",
    "",
    "@final",
    "class Engine:",
    '    """A simulated machine: the engine behind cellsim.Machine."""',
]
blocks = []
rest = src
while "#[pymethods]\nimpl PyEngine" in rest:
    blocks.append(impl_block(rest, "#[pymethods]\nimpl PyEngine"))
    rest = rest[rest.index("#[pymethods]\nimpl PyEngine") + 10 :]
for attrs, name, raw, ret, doc in fns("\n".join(blocks)):
    sigm = re.search(r"signature\s*=\s*\((.*?)\)\)\]", attrs, re.S)
    sig = sigm.group(1) if sigm else ""
    ps = params(raw, sig)
    if "#[new]" in attrs:
        lines.append(f"    def __new__(cls, {', '.join(ps)}) -> Self: ...")
        continue
    if "#[getter]" in attrs:
        lines.append("    @property")
    lines.append(f"    def {name}(self{', ' if ps else ''}{', '.join(ps)}) -> {py_type(ret)}: ...")
lines.append("")
for attrs, name, raw, ret, doc in fns(src):
    if "#[pyfunction]" not in attrs:
        continue
    sigm = re.search(r"signature\s*=\s*\((.*?)\)\)\]", attrs, re.S)
    ps = params(raw, sigm.group(1) if sigm else "")
    lines.append(f"def {name}({', '.join(ps)}) -> {py_type(ret)}: ...")
print("\n".join(lines))
