"""Numbers from Python, checked in one place before they reach the engine.

The engine takes fixed-width unsigned integers; a negative tag or a size of
``2**70`` would otherwise surface as a raw ``OverflowError`` from the
binding, a float or a string would be silently truncated by ``int()``, and a
NaN time limit would mean anything. Every public call converts its numbers
here: an argument of an MFC command that no register could hold is an
:class:`MfcError` of the kind the engine would give for a bad value of that
argument; anything else is a :class:`UsageError` naming the value and the rule.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from .exceptions import MfcError, UsageError

__all__ = ["MFC_KINDS", "SEED_MAX", "integer", "mfc_args", "number", "positive", "word"]

U32 = 1 << 32
U64 = 1 << 64
SEED_MAX = U64 - 1
"""Seeds are 64-bit unsigned integers."""

MFC_KINDS: dict[str, tuple[str, int, str]] = {
    "ls": ("ls_range", U32, "a local-store address 0 to 2**32-1 (the local store is 256 KB)"),
    "lst": ("ls_range", U32, "a local-store address 0 to 2**32-1 (the local store is 256 KB)"),
    "ea": ("unmapped", U64, "a 64-bit effective address 0 to 2**64-1"),
    "size": ("size", U32, "a transfer size 0 to 16384 bytes"),
    "tag": ("tag", U32, "a tag group 0 to 31"),
}
"""For each MFC argument: the error kind, the end of its range, the rule."""


def integer(value: Any, what: str, lo: int = 0, end: int = U64) -> int:
    """``value`` as an int in ``lo <= value < end``; ``what`` names it in the error."""
    v = _index(value, what)
    if not lo <= v < end:
        raise UsageError(f"{what} {v} is out of range: it must be {lo} to {_power(end)}")
    return v


def _index(value: Any, what: str) -> int:
    """``value`` as an int: Python ints, numpy integers and anything else with
    ``__index__`` pass; bools, floats, strings and ``None`` do not (``int(1.5)``
    would truncate, ``int("0")`` would parse)."""
    if isinstance(value, bool):
        raise UsageError(f"{what} must be an integer, not {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise UsageError(f"{what} must be an integer, not {value!r} ({type(value).__name__})") from None


def word(value: Any, what: str) -> int:
    """A 32-bit channel or register value: ``-2**31`` to ``2**32 - 1``; a
    negative value is taken as C converts an ``int`` to ``unsigned int``."""
    return integer(value, what, -(1 << 31), U32) & (U32 - 1)


def mfc_args(call: str, spe: int | None, now: Callable[[], int], **args: Any) -> list[int]:
    """The arguments (``ls``, ``ea``, ``size``, ``tag``, ``lst``) of an MFC
    command as ints; a value out of its register's range is the MFC's error
    (``now()`` gives the cycle for it)."""
    out = []
    for name, value in args.items():
        kind, end, rule = MFC_KINDS[name]
        v = _index(value, f"{call}: {name}")
        if not 0 <= v < end:
            command = f"{call}(" + ", ".join(f"{k}={a!r}" for k, a in args.items()) + ")"
            cycle = now()
            raise MfcError(
                f"MFC error on SPE {spe} at cycle {cycle}: {command}: {name} {v} is out of range: "
                f"it must be {rule}",
                kind=kind,
                spe=spe,
                cycle=cycle,
                command=command,
            )
        out.append(v)
    return out


def number(value: Any, what: str) -> float:
    """``value`` as a float: ints, floats and numpy numbers pass; bools, strings,
    bytes and ``None`` do not (``float("1e3")`` would parse). NaN and infinities
    pass: the caller says which values its rule allows."""
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise UsageError(f"{what} must be a number, not {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{what} must be a number, not {value!r}") from None


def positive(value: Any, what: str) -> float:
    """A positive, finite duration (a time limit): NaN, infinities, zero and
    negative values are refused, as are non-numbers."""
    v = number(value, what)
    if not math.isfinite(v) or v <= 0:
        raise UsageError(f"{what} {value!r} must be a positive, finite number")
    return v


def _power(end: int) -> str:
    """``2**32 - 1`` for the end of a range that is a power of two."""
    if end > 0 and end & (end - 1) == 0 and end > 1 << 16:
        return f"2**{end.bit_length() - 1} - 1"
    return str(end - 1)
