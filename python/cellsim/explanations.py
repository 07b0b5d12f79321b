"""Where the documentation explains how an experiment's results come about,
and why some disagree with the published values: the report links each
disagreement there.

Sections are found by the start of their heading, so a heading may gain
words (a commit, a machine) without breaking the link.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SECTIONS", "Explanation", "docs_dir", "explanation", "heading_anchor"]

SECTIONS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("dma-latency", "dma-batch"), ("model.md", "Calibration against Kistler")),
    **dict.fromkeys(
        ("hotspot", "collective", "latency-hist", "spe-mem", "spe-spe", "couples", "cycle"),
        ("contention.md", "Where the model contradicts a visible statement"),
    ),
    **dict.fromkeys(("ppe-cache", "ppe-mem", "spu-ls"), ("model.md", "Calibration against Jim")),
    "ppe-spe-mem": ("model.md", "The PPE and the SPEs streaming to memory together"),
    "buffering": ("buffering.md", "Figures 10-12"),
    "ring": ("messaging.md", "The ring benchmark"),
    "mapping": ("messaging.md", "The explorer"),
    "cross-chip": ("model.md", "Two chips"),
    **dict.fromkeys(("mpi-pingpong", "mpi-matvec", "mpi-collectives"), ("mpi.md", "Results")),
}
"""Experiment -> (file in docs/, start of the section's heading)."""


@dataclass(frozen=True)
class Explanation:
    """A section of the documentation: ``href`` (relative to the page that
    links it, ``None`` when the docs are not installed beside cellsim) and
    ``title`` (``docs/contention.md: Where the model ...``)."""

    href: str | None
    title: str


def docs_dir() -> Path | None:
    """The ``docs/`` of the source checkout cellsim runs from, if any (an
    installed wheel has none)."""
    d = Path(__file__).resolve().parents[2] / "docs"
    return d if d.is_dir() else None


def heading_anchor(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's and mkdocs' rule)."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def explanation(experiment: str, page_dir: str | Path | None = None) -> Explanation | None:
    """The section explaining ``experiment``'s results, linked from a page in ``page_dir``."""
    if experiment not in SECTIONS:
        return None
    name, start = SECTIONS[experiment]
    docs = docs_dir()
    if docs is None:
        return Explanation(None, f"docs/{name}: {start}")
    path = docs / name
    heading = next(
        (
            ln.lstrip("#").strip()
            for ln in path.read_text(encoding="utf-8").splitlines()
            if ln.startswith("#") and ln.lstrip("#").strip().startswith(start)
        ),
        None,
    )
    if heading is None:
        return Explanation(None, f"docs/{name}")
    href = os.path.relpath(path, page_dir) if page_dir is not None else str(path)
    return Explanation(f"{Path(href).as_posix()}#{heading_anchor(heading)}", f"docs/{name}: {heading}")
