"""The engine's reference path: every bus transfer simulated event by event.

The engine fast-forwards steady states (eight SPEs streaming, one SPE reading
a long buffer): once the chip repeats itself it jumps over whole periods,
with results identical cycle for cycle to simulating them (see
``docs/performance.md``). ``Machine(exact_reference=True)`` turns that off for
one machine; ``--exact-reference`` on ``cellsim run`` turns it off for every
machine of the command (:func:`exact_reference_default`), to check the
identity on an experiment or to time the difference.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["default_exact_reference", "exact_reference_default"]

_default: list[bool] = [False]


def default_exact_reference() -> bool:
    """Whether new machines run without the fast-forward unless told otherwise."""
    return _default[0]


@contextlib.contextmanager
def exact_reference_default(on: bool) -> Iterator[None]:
    """Makes ``on`` the default of every machine made inside (and in the
    worker processes a sweep forks meanwhile)."""
    saved = _default[0]
    _default[0] = bool(on)
    try:
        yield
    finally:
        _default[0] = saved
