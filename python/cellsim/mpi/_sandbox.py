"""The host process as the ranks see it during ``mpirun``, as mpiexec gives it.

All ranks run in one host process, so what would end or feed one MPI process
must be redirected to its rank:

- ``os._exit(code)`` in a rank ends that rank, not the whole host (and the
  output of every rank with it): mpirun stops the run and reports the rank
  and its code, as mpiexec's "BAD TERMINATION" does; ``os.abort()`` likewise,
  reported as the rank killed by SIGABRT (exit status 134);
- an exception in a thread a rank started makes the exit status non-zero
  (the thread's traceback is printed as Python prints it);
- standard input goes to rank 0 only; the other ranks read end-of-file, as
  with mpiexec, whose other ranks have ``/dev/null``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

from greenlet import getcurrent

__all__ = ["RankAbort", "RankExit", "ThreadFailures", "bad_termination", "rank_process"]


class RankExit(SystemExit):
    """``os._exit(code)`` called by a rank: that rank ends with ``code``."""


class RankAbort(SystemExit):
    """``os.abort()`` called by a rank: that rank is killed by SIGABRT."""


def bad_termination(rank: int, code: int, how: str | None = None) -> str:
    """mpiexec's report of a process that ended without MPI_Finalize."""
    bar = "=" * 83
    how = how or f"CALLED os._exit({code})"
    return (
        f"{bar}\n=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
        f"=   RANK {rank} {how}\n=   EXIT CODE: {code}\n"
        f"=   CLEANING UP REMAINING PROCESSES\n{bar}\n"
    )


class ThreadFailures:
    """Exceptions raised in threads started during the run."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def hook(self, args: threading.ExceptHookArgs) -> None:
        name = args.thread.name if args.thread is not None else "a thread"
        self.failures.append(f"{name} raised {args.exc_type.__name__}: {args.exc_value}")
        threading.__excepthook__(args)


class _RankStdin(io.TextIOBase):
    """``sys.stdin`` during a run: the real one for rank 0 (and the PPE),
    end-of-file for the other ranks."""

    def __init__(self, real: TextIO) -> None:
        self.real = real

    def readable(self) -> bool:
        return True

    def _mine(self) -> bool:
        r = getattr(getcurrent(), "_mpi_rank", None)
        return r is None or r.rank <= 0

    def read(self, size: int | None = -1) -> str:
        return self.real.read(-1 if size is None else size) if self._mine() else ""

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        return self.real.readline(-1 if size is None else size) if self._mine() else ""

    def fileno(self) -> int:
        return self.real.fileno()

    def isatty(self) -> bool:
        return self._mine() and self.real.isatty()


@contextlib.contextmanager
def rank_process() -> Iterator[ThreadFailures]:
    """Redirects ``os._exit``, thread exceptions and standard input to the
    ranks for the duration of a run."""
    threads = ThreadFailures()
    saved: tuple[Any, Any, Any] = (os._exit, threading.excepthook, sys.stdin)
    real_abort = os.abort

    def rank_exit(code: int) -> None:
        if getattr(getcurrent(), "_mpi_rank", None) is None:
            saved[0](code)  # not a rank (a thread, the PPE): the real thing
        raise RankExit(code)

    def rank_abort() -> None:
        if getattr(getcurrent(), "_mpi_rank", None) is None:
            real_abort()
        raise RankAbort(134)

    os._exit = rank_exit  # type: ignore[assignment]
    os.abort = rank_abort  # type: ignore[assignment]
    threading.excepthook = threads.hook
    if sys.stdin is not None:
        sys.stdin = _RankStdin(sys.stdin)  # type: ignore[assignment]
    try:
        yield threads
    finally:
        os._exit, threading.excepthook, sys.stdin = saved
        os.abort = real_abort
