"""One visual convention for every figure: the ``cellsim.mplstyle`` beside
this module for the simulated curves, and :data:`PUBLISHED` for the values a
paper publishes (crimson, open markers, dashed), so a reader tells them apart
the same way in each figure."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["PUBLISHED", "PUBLISHED_COLOR", "STYLE_FILE", "figure_style"]

STYLE_FILE = Path(__file__).with_name("cellsim.mplstyle")

PUBLISHED_COLOR = "crimson"
"""The colour of published values; the simulated curves' colour cycle leaves it out."""

PUBLISHED: dict[str, Any] = {
    "color": PUBLISHED_COLOR,
    "linestyle": "--",
    "marker": "D",
    "markerfacecolor": "none",
    "markeredgecolor": PUBLISHED_COLOR,
    "zorder": 5,
}
"""Keyword arguments of ``Axes.plot`` for a published value or span."""


@contextmanager
def figure_style() -> Iterator[None]:
    """Draws the figures made inside the block in cellsim's style."""
    from matplotlib import style

    with style.context(STYLE_FILE):
        yield
