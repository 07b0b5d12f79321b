"""Where the documentation explains how an experiment's results come about,
and why some disagree with the published values: the report shows each
explanation inside the page and links each disagreement to it.

Sections are found by the start of their heading, so a heading may gain
words (a commit, a machine) without breaking the link. An installed cellsim
has no ``docs/`` beside it, so the sections' text ships with the package in
``data/explanations.json``, written from ``docs/`` by ``python -m
cellsim.tools.explanations`` (a test checks that it is current).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

__all__ = [
    "SECTIONS",
    "Explanation",
    "bundle",
    "docs_dir",
    "explanation",
    "heading_anchor",
    "markdown_html",
]

SECTIONS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("dma-latency", "dma-batch"), ("model.md", "Calibration against Kistler")),
    **dict.fromkeys(
        ("hotspot", "collective", "latency-hist", "spe-mem", "spe-spe", "couples", "cycle"),
        ("contention.md", "Where the model contradicted a visible statement"),
    ),
    **dict.fromkeys(("ppe-cache", "ppe-mem", "spu-ls"), ("model.md", "Calibration against Jim")),
    "ppe-spe-mem": ("model.md", "The PPE and the SPEs streaming to memory together"),
    "cross-chip": ("model.md", "Two chips"),
    "buffering": ("buffering.md", "Figures 10-12"),
    "ring": ("messaging.md", "The ring benchmark"),
    "mapping": ("messaging.md", "The explorer"),
    **dict.fromkeys(("mpi-pingpong", "mpi-matvec", "mpi-collectives"), ("mpi.md", "Results")),
}
"""Experiment -> (file in docs/, start of the section's heading)."""


@dataclass(frozen=True)
class Explanation:
    """A section of the documentation: ``href`` (the page's own anchor of the
    section, ``#why-...``, where the report shows its text), ``title``
    (``docs/contention.md: Where the model ...``), ``key`` (``file#start``)
    and ``markdown`` (the section's text; empty if neither docs/ nor the
    bundle has it)."""

    href: str | None
    title: str
    key: str = ""
    markdown: str = ""

    @property
    def html(self) -> str:
        """The section's text as HTML (see :func:`markdown_html`)."""
        return markdown_html(self.markdown)


def docs_dir() -> Path | None:
    """The ``docs/`` of the source checkout cellsim runs from, if any (an
    installed wheel has none)."""
    d = Path(__file__).resolve().parents[3] / "docs"
    return d if d.is_dir() else None


def heading_anchor(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's and mkdocs' rule)."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def _section(text: str, start: str) -> tuple[str, str] | None:
    """The heading starting with ``start`` and its text (up to the next heading of its level or above)."""
    lines = text.splitlines()
    level = lambda ln: len(ln) - len(ln.lstrip("#"))  # noqa: E731
    for i, ln in enumerate(lines):
        if ln.startswith("#") and ln.lstrip("#").strip().startswith(start):
            end = next(
                (
                    j
                    for j in range(i + 1, len(lines))
                    if lines[j].startswith("#") and level(lines[j]) <= level(ln)
                ),
                len(lines),
            )
            return ln.lstrip("#").strip(), "\n".join(lines[i + 1 : end]).strip() + "\n"
    return None


def bundle(docs: Path | None = None) -> dict[str, dict[str, str]]:
    """Every section of :data:`SECTIONS` read from ``docs`` (default :func:`docs_dir`):
    ``file#start`` -> ``{"file", "heading", "markdown"}``; what ``data/explanations.json`` holds."""
    docs = docs or docs_dir()
    if docs is None:
        raise FileNotFoundError("no docs/ beside this cellsim: the bundle is written from a source checkout")
    out: dict[str, dict[str, str]] = {}
    for name, start in sorted(set(SECTIONS.values())):
        found = _section((docs / name).read_text(encoding="utf-8"), start)
        if found is None:
            raise KeyError(f"docs/{name} has no heading starting {start!r}")
        out[f"{name}#{start}"] = {"file": name, "heading": found[0], "markdown": found[1]}
    return out


@cache
def _bundled() -> dict[str, dict[str, str]]:
    try:
        text = resources.files("cellsim").joinpath("data/explanations.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    data: dict[str, dict[str, str]] = json.loads(text)
    return data


def explanation(experiment: str, page_dir: str | Path | None = None) -> Explanation | None:
    """The section explaining ``experiment``'s results: its text from the
    checkout's docs/ when there is one, else from the copy shipped with
    cellsim. ``page_dir`` is accepted for older callers; the link is the
    report page's own anchor of the section."""
    del page_dir
    if experiment not in SECTIONS:
        return None
    name, start = SECTIONS[experiment]
    key = f"{name}#{start}"
    docs = docs_dir()
    found = _section((docs / name).read_text(encoding="utf-8"), start) if docs is not None else None
    if found is None:
        entry = _bundled().get(key)
        if entry is None:
            return Explanation(None, f"docs/{name}: {start}", key)
        found = entry["heading"], entry["markdown"]
    heading, text = found
    return Explanation(f"#why-{anchor_of(key)}", f"docs/{name}: {heading}", key, text)


def anchor_of(key: str) -> str:
    """``contention.md#Where the model`` -> ``contention-where-the-model``."""
    name, start = key.split("#", 1)
    return heading_anchor(f"{name.removesuffix('.md')} {start}")


# -- a little Markdown: what the docs' explanation sections use ----------------------------------


def _inline(text: str) -> str:
    out = []
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if i % 2:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
            continue
        s = html.escape(part, quote=False)
        s = re.sub(r"\[([^\]]+)\]\((https?://[^)]+)\)", r'<a href="\2">\1</a>', s)
        s = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", s)  # a link to another file of docs/: its words
        s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
        s = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", s)
        out.append(s)
    return "".join(out)


def _table(rows: list[str]) -> str:
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
    body = [r for r in cells[1:] if not all(re.fullmatch(r":?-+:?", c) for c in r)]
    head = "".join(f"<th>{_inline(c)}</th>" for c in cells[0])
    trs = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><tr>{head}</tr>{trs}</table>"


def markdown_html(text: str) -> str:
    """The Markdown of the docs' explanation sections as HTML: paragraphs,
    headings, bulleted and numbered lists, tables, fenced code, and inline
    code, bold, emphasis and links (a link to another file of docs/ keeps its words)."""
    blocks: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if not ln.strip():
            i += 1
        elif ln.startswith("```"):
            j = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            blocks.append(f"<pre>{html.escape(chr(10).join(lines[i + 1 : j]))}</pre>")
            i = j + 1
        elif ln.startswith("#"):
            level = min(6, len(ln) - len(ln.lstrip("#")) + 2)
            blocks.append(f"<h{level}>{_inline(ln.lstrip('#').strip())}</h{level}>")
            i += 1
        elif ln.lstrip().startswith("|"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            blocks.append(_table(lines[i:j]))
            i = j
        elif re.match(r"\s*(?:[-*]|\d+\.)\s", ln):
            ordered = bool(re.match(r"\s*\d+\.", ln))
            items: list[str] = []
            while i < len(lines):
                cur = lines[i]
                m = re.match(r"\s*(?:[-*]|\d+\.)\s+(.*)", cur)
                if m and not cur.startswith("    "):
                    items.append(m.group(1))
                elif cur.strip() and cur.startswith(" ") and items:
                    items[-1] += " " + cur.strip()
                elif (
                    not cur.strip() and i + 1 < len(lines) and re.match(r"\s*(?:[-*]|\d+\.)\s", lines[i + 1])
                ):
                    pass  # a blank line between items
                else:
                    break
                i += 1
            tag = "ol" if ordered else "ul"
            blocks.append(f"<{tag}>" + "".join(f"<li>{_inline(t)}</li>" for t in items) + f"</{tag}>")
        else:
            j = i
            para = []
            while (
                j < len(lines)
                and lines[j].strip()
                and not re.match(r"(#|```|\s*\||\s*(?:[-*]|\d+\.)\s)", lines[j])
            ):
                para.append(lines[j].strip())
                j += 1
            if not para:  # a line no rule above takes: as text
                para, j = [ln.strip()], i + 1
            blocks.append(f"<p>{_inline(' '.join(para))}</p>")
            i = j
    return "\n".join(blocks)


def _main() -> None:
    """``python -m cellsim.tools.explanations > python/cellsim/data/explanations.json``."""
    print(json.dumps(bundle(), indent=1, ensure_ascii=False))


if __name__ == "__main__":
    _main()
