"""How a long command says how far it is: a bar on a terminal, a line a minute on a log.

The commands' runs are sweeps of points that may each take minutes (a mapping panel runs for
ten), so progress callbacks come seldom and unevenly. The bar therefore shows from the run's
start, not from its first finished point, and its time elapsed and time left are the run's: the
time since the task began, and that time scaled by the work still to do (the rate of the whole run
so far, as the plain line says it), not rich's rate over its last updates, which a run of long
points never has."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn
from rich.text import Text

from ..sweep import Work

__all__ = ["DELAY_S", "LOG_EVERY_S", "RunProgress", "count", "duration"]

DELAY_S = 0.5
"""A run shorter than this shows no bar at all."""
LOG_EVERY_S = 60.0
"""On a pipe or a log, at most one line per this many seconds."""


class RunProgress:
    """A progress callback ``progress(done, total, name=None)`` on stderr, once the run has
    lasted more than a moment: on a terminal a rich bar (the points done of each task, the time
    elapsed and the time remaining, from the rate of the run so far); on a pipe or a log a plain
    line at most every ``log_every_s`` seconds, so that a long run written to a file still says
    how far it is. A task that counts :class:`~cellsim.sweep.Work` (estimated work, not points)
    shows the share done as a percentage, and its time left comes from the rate of work."""

    def __init__(
        self,
        description: str,
        console: Console | None = None,
        single: bool = False,
        log_every_s: float = LOG_EVERY_S,
    ) -> None:
        self.console = console or Console(stderr=True)
        self.single = single
        self.description = description
        self.t0 = time.monotonic()
        self.bar: Progress | None = None
        self.tasks: dict[str, Any] = {}
        self.log_every_s = log_every_s
        self.logged = self.t0
        self.started: dict[str, float] = {}
        # the bar is drawn from another thread when the first call comes too early to draw it
        # and the next may come minutes later (a sweep calls back as its points finish)
        self._lock = threading.Lock()
        self._last: tuple[int, int, str] | None = None
        self._timer: threading.Timer | None = None
        self._closed = False

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self.bar is not None:
                self.bar.stop()

    def __call__(self, done: int, total: int, name: str | None = None) -> None:
        key = name or self.description
        now = time.monotonic()
        with self._lock:
            self.started.setdefault(key, now)
            if not self.console.is_terminal:
                if now - self.logged >= self.log_every_s:
                    self.logged = now
                    self.console.print(self._line(key, done, total, now), highlight=False, soft_wrap=True)
                return
            self._last = (done, total, key)
            if self.bar is None and now - self.t0 < DELAY_S:
                self._show_later(DELAY_S - (now - self.t0))
                return
            self._draw(done, total, key)

    def _show_later(self, after_s: float) -> None:
        if self._timer is None:
            self._timer = threading.Timer(after_s, self._show_pending)
            self._timer.daemon = True
            self._timer.start()

    def _show_pending(self) -> None:
        with self._lock:
            if not self._closed and self.bar is None and self._last is not None:
                self._draw(*self._last)

    def _draw(self, done: int, total: int, key: str) -> None:
        if self._closed:
            return
        if self.bar is None:
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[count]}", justify="right"),
                RunElapsedColumn(),
                TextColumn("ETA"),
                RunRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
        if key not in self.tasks:
            if self.single:  # one task at a time: the finished one gives way
                for task in self.tasks.values():
                    self.bar.remove_task(task)
                self.tasks.clear()
            self.tasks[key] = self.bar.add_task(key, total=total, count="", since=self.started[key])
        self.bar.update(self.tasks[key], completed=done, total=total, count=count(done, total))

    def _line(self, key: str, done: int, total: int, now: float) -> str:
        """The plain progress line: the task's runs (the sweep points simulated: an experiment
        may average several placements into one point of its results) or its share of work,
        the run's time, and the task's time left at its rate so far."""
        share = f"{count(done, total)} of the work" if isinstance(total, Work) else f"{done}/{total} runs"
        line = f"{self.description}: {key} {share}, {duration(now - self.t0)} elapsed"
        left = time_left(done, total, now - self.started[key])
        if left is not None:
            line += f", about {duration(left)} left"
        return line


class RunElapsedColumn(ProgressColumn):
    """The time since the task began (its first callback), not since the bar was drawn."""

    def render(self, task: Task) -> Text:
        return Text(_clock(time.monotonic() - task.fields["since"]), style="progress.elapsed")


class RunRemainingColumn(ProgressColumn):
    """The time left at the rate of the task so far: the time since it began, scaled by the
    work still to do over the work done."""

    def render(self, task: Task) -> Text:
        left = time_left(int(task.completed), int(task.total or 0), time.monotonic() - task.fields["since"])
        return Text("-:--:--" if left is None else _clock(left), style="progress.remaining")


def time_left(done: int, total: int, spent_s: float) -> float | None:
    """The seconds left when ``done`` of ``total`` took ``spent_s``, or None before any is done."""
    if 0 < done < total and spent_s > 0:
        return spent_s * (total - done) / done
    return None


def count(done: int, total: int) -> str:
    """``3/12`` points, or for :class:`~cellsim.sweep.Work` the share done, ``41%``, with a
    decimal below 10% (``0.4%``: a mapping figure's first minute is under one percent, and "0%"
    would read as stuck). Rounded down: 100% only at the end."""
    if isinstance(total, Work):
        if total <= 0:
            return "100%"
        permille = 1000 * done // total
        return f"{permille // 10}%" if permille >= 100 else f"{permille // 10}.{permille % 10}%"
    return f"{done}/{total}"


def _clock(seconds: float) -> str:
    s = max(int(seconds), 0)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
