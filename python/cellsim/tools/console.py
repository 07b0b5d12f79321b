"""The console every command writes its tables to (rich), one way for all of them."""

from __future__ import annotations

import os

from rich.console import Console

__all__ = ["console"]


def console(stderr: bool = False) -> Console:
    """A rich console; wide when the output is not a terminal (pipes, tests), so that a
    table piped into a file is not cut to 80 columns."""
    c = Console(stderr=stderr)
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c = Console(stderr=stderr, width=160)
    return c
