"""Limits for runs that may never end: simulated time and host time.

A program that polls (``while spu_stat_in_mbox() == 0: pass``) is never
blocked, so deadlock detection cannot see it. Two limits stop it, each with a
``RunawayError`` whose ``activity`` says what every program was doing:

- the **simulated-time limit** (``Machine(time_limit_ns=...)``,
  ``Machine.run(time_limit_ns=...)``, ``--time-limit`` in simulated
  seconds; default 10 simulated seconds);
- the **host-time limit** (``Machine.run(wall_limit_s=...)``,
  ``--wall-limit`` in seconds of host time; default none).

The engine checks Ctrl-C and the host-time limit every few thousand events,
so both stop native runs too. The command-line options cover every
simulation of the command: the simulated-time limit is one of the run's
options (:class:`cellsim.spec.RunOptions`, built by :func:`run_options`), so
every machine built from the run's spec is bounded by it, in this process or
a sweep's worker; the host-time limit is a process-wide alarm by design
(:func:`command_limits`: the command as a whole is what the user waits for),
so a sweep stopped by it keeps its finished points.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from ._checks import SEED_MAX, U32, positive
from .exceptions import RunawayError, UsageError
from .spec import RunOptions

__all__ = [
    "COUNT",
    "SEED",
    "command_limits",
    "limit_options",
    "limit_params",
    "run_deadline",
    "run_options",
    "wall_limit",
]

F = TypeVar("F", bound=Callable[..., Any])

SEED = click.IntRange(0, SEED_MAX)
"""The type of every ``--seed`` option: a 64-bit unsigned integer."""
COUNT = click.IntRange(1, U32 - 1)
"""The type of the integer options of experiments (counts, sizes, cycles):
the engine's registers hold 32 bits."""


_OPTIONS: list[tuple[list[str], dict[str, Any]]] = [
    (
        ["--time-limit", "time_limit"],
        {"help": "stop a simulation after this much simulated time (default 10 simulated seconds)"},
    ),
    (
        ["--wall-limit", "wall_limit"],
        {"help": "stop after this much host time, with a report of what each program was doing"},
    ),
]


def limit_params() -> list[click.Parameter]:
    """The ``--time-limit`` and ``--wall-limit`` options of a command."""
    return [click.Option(decls, type=float, default=None, metavar="SECONDS", **kw) for decls, kw in _OPTIONS]


def limit_options(f: F) -> F:
    """Decorates a click command with :func:`limit_params`."""
    for decls, kw in reversed(_OPTIONS):
        f = click.option(*decls, type=float, default=None, metavar="SECONDS", **kw)(f)
    return f


WALL_LIMIT_MAX = 1e9
"""Host-time limits are under this many seconds (about 31 years; the engine's and the alarm's range)."""


def _wall(value: Any, what: str) -> float:
    return wall_limit(value, what)


def wall_limit(value: Any, what: str) -> float:
    """A host-time limit: positive, finite and under :data:`WALL_LIMIT_MAX` seconds."""
    v = positive(value, what)
    if v >= WALL_LIMIT_MAX:
        raise UsageError(f"{what} {value!r} must be under {WALL_LIMIT_MAX:g} seconds (about 31 years)")
    return v


def run_options(
    time_limit: float | None = None,
    *,
    exact_reference: bool = False,
    trace: Any = None,
    check_dma: bool = False,
) -> RunOptions:
    """A command's :class:`~cellsim.spec.RunOptions`: ``--time-limit`` (simulated
    seconds, checked), ``--exact-reference``, ``--trace``'s capture and ``--check-dma``."""
    limit_ns = None if time_limit is None else positive(time_limit, "--time-limit") * 1e9
    return RunOptions(
        time_limit_ns=limit_ns, exact_reference=bool(exact_reference), trace=trace, check_dma=bool(check_dma)
    )


@contextlib.contextmanager
def command_limits(wall_limit: float | None) -> Iterator[None]:
    """A command's host-time limit (``--wall-limit``): a process-wide alarm over
    everything the command runs, by design (the command as a whole is what the
    user waits for; a sweep stopped by it keeps its finished points). The
    simulated-time limit travels with the run instead (:func:`run_options`)."""
    with _alarm(None if wall_limit is None else _wall(wall_limit, "--wall-limit")):
        yield


@contextlib.contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """Raises ``RunawayError`` in the main thread after ``seconds`` of host
    time (the engine runs the handler at its next signal check)."""
    if seconds is None:
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise RunawayError(
            f"host-time limit reached: the command took more than {seconds:g} s (--wall-limit); "
            "raise it if the run is expected to be this long"
        )

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def run_deadline(seconds: float | None) -> Iterator[None]:
    """``Machine.run(wall_limit_s=...)`` for code that never reaches the engine's
    watchdog (a program's endless pure-Python loop, an MPI rank spinning): an
    alarm raises ``RunawayError`` wherever the main thread is. A command's earlier
    alarm (``--wall-limit``) stays; off the main thread only the watchdog checks."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    outer, _ = signal.getitimer(signal.ITIMER_REAL)
    if outer and outer <= seconds * 1.05 + 0.5:
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise RunawayError(
            f"host-time limit reached: the run took more than {seconds:g} s of host time "
            "(wall_limit_s, --wall-limit); raise it if the run is expected to be this long"
        )

    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expired)
    # a backstop, a little after the engine's own deadline: where the engine runs, its
    # watchdog stops the run first, with its livelock report
    signal.setitimer(signal.ITIMER_REAL, seconds * 1.05 + 0.5)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # the command's alarm goes on
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 1e-6))
