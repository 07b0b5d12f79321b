"""Argument types the benches share: a count out of range is argparse's one-line error."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= low`` (``--mappings -3`` must not mean "nearly all")."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"{v} is out of range: it must be at least {low}")
        return v

    parse.__name__ = f"integer >= {low}"
    return parse
