"""The sweep runner: many independent simulations, on one machine or many.

Every point of a sweep is a JSON-serialisable dict; a point function (a
module-level function, so that it can be sent to another process) turns it
into one result dict and depends on nothing else, which is why results are
identical whether points run serially, in local worker processes or on a Dask
cluster, in any order.

- **Local** (default): ``workers`` processes (all cores), points sent in
  small chunks; ``workers=1`` runs in this process.
- **Costs**: given each point's estimated ``cost``, the points start longest
  first (one per task), so that no long point is left to run alone at the
  end, and progress counts :class:`Work` (the finished points' costs) instead
  of points, so that the rate so far predicts the rest.
- **Dask**: ``cluster`` is the address of a ``distributed`` scheduler
  (``tcp://host:8786``) or a ``distributed.Client``/cluster object. Start one
  on this machine with::

      dask scheduler &                       # prints tcp://<ip>:8786
      dask worker tcp://127.0.0.1:8786 --nworkers 2 --nthreads 1 &

  or from Python ``distributed.LocalCluster(n_workers=2, threads_per_worker=1)``;
  on a Slurm cluster ``dask_jobqueue.SLURMCluster(cores=..., memory=...)``
  with ``cluster.scale(jobs=N)`` and pass ``cluster.scheduler_address``.
  Each worker needs cellsim installed (``pip install 'cellsim[dask]'``).
  Use one thread per worker: a worker process runs one simulation at a time.

**Results file.** With ``out``, finished points are appended to a Parquet
dataset (a directory of part files that ``pandas.read_parquet(out)`` reads
as one table) as they finish: at most every ``flush_s`` seconds, at the end,
on an error and on Ctrl-C. Each row has the point's ``key``, its ``index``,
the sweep's ``settings`` fingerprint, the result's scalar fields as columns
and the whole result as JSON (``record``). With ``resume=True`` the points
already in the file are not run again; without it an existing file is
replaced. A sweep interrupted by Ctrl-C keeps every finished point and raises
:class:`SweepInterrupted`.

The dataset directory is cellsim's only where it says so: a marker file
(``_cellsim-sweep.json``, which Parquet readers skip) names it a sweep's dataset, and a sweep only ever
writes and removes its own files there (the marker, its lock and part files
named as it names them, ``part-<20 digits>-<8 hex digits>.parquet``). A
non-empty directory without the marker (other than an older cellsim's part
files) is refused. Two sweeps cannot write one dataset at once (a lock). A
worker process that dies (a crash, ``os._exit``, the OOM killer) stops the
sweep with an error naming the point it was running, after every finished
point is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .exceptions import CellsimError, UsageError

__all__ = ["MARKER", "SweepInterrupted", "Work", "WorkerDied", "fingerprint", "read_results", "run_sweep"]

Point = dict[str, Any]
Result = dict[str, Any]
PointFn = Callable[[Point], Result]
ProgressFn = Callable[[int, int], None]
"""``progress(done, total)``: points done of the total, or :class:`Work` units."""


class Work(int):
    """A progress count in units of estimated work instead of points (an ``int``):
    what a ``progress(done, total)`` callback receives when a run's points cost
    unequally (the mapping study's panels), so that the rate so far predicts the
    rest. The units have no meaning of their own: show ``done / total`` as a
    fraction, never as points."""

    __slots__ = ()


class SweepInterrupted(CellsimError):
    """A sweep stopped by Ctrl-C: ``done`` of ``total`` points were kept in ``out``."""

    def __init__(self, message: str, done: int, total: int, out: str | None) -> None:
        super().__init__(message)
        self.done = done
        self.total = total
        self.out = out


def fingerprint(settings: dict[str, Any]) -> str:
    """A short stable hash of a sweep's settings (what must match to resume)."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


MARKER = "_cellsim-sweep.json"
"""The file that makes a directory a sweep's dataset."""
_LOCK = ".cellsim-sweep.lock"
_PART = re.compile(r"part-\d{20}-[0-9a-f]{8}\.parquet\Z")
_ANY_PART = re.compile(r"part-.*\.parquet\Z")
_TMP = re.compile(r"\.part-\d{20}-[0-9a-f]{8}\.parquet\.tmp\Z")


class WorkerDied(CellsimError):
    """A sweep's worker process died while it ran ``point`` (``key``)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


# In a local worker: where it writes (pid, point index) while it runs a point.
_slots: Any = None
_slot = 0


def _run_chunk(fn: PointFn, chunk: list[tuple[int, Point]]) -> list[tuple[int, Result]]:
    out = []
    for i, p in chunk:
        if _slots is not None:
            _slots[2 * _slot], _slots[2 * _slot + 1] = os.getpid(), i
        out.append((i, fn(p)))
    if _slots is not None:
        _slots[2 * _slot + 1] = -1
    return out


def _init_worker(parent: int, slots: Any = None, counter: Any = None) -> None:
    # Ctrl-C goes to the whole process group: the parent handles it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(parent)
    global _slots, _slot
    if slots is not None and counter is not None:
        with counter.get_lock():
            _slot = counter.value % (len(slots) // 2)
            counter.value += 1
        _slots = slots
        slots[2 * _slot], slots[2 * _slot + 1] = os.getpid(), -1


def _exit_with_parent(parent: int) -> None:
    """Ends this worker when the sweep's process dies (SIGKILL, SIGTERM to it
    alone), instead of sleeping forever holding the output pipe: Linux kills
    it (PR_SET_PDEATHSIG); elsewhere a thread watches the parent's pid."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="cellsim-parent-watch", daemon=True).start()


class _Store:
    """The Parquet dataset of a sweep: part files appended as points finish."""

    def __init__(self, out: str | Path | None, settings_id: str, flush_s: float) -> None:
        self.dir = None if out is None else Path(out)
        self.settings_id = settings_id
        self.flush_s = flush_s
        self.buffer: list[dict[str, Any]] = []
        self.last = time.monotonic()
        self.lock_fd: int | None = None

    def open(self) -> None:
        """Claims the directory: refuses one that is not a sweep's dataset, and one
        another sweep is writing (a lock held until :meth:`close`)."""
        if self.dir is None:
            return
        d = self.dir
        if d.exists() and not d.is_dir():
            raise UsageError(
                f"{d} is a file, not a sweep's results directory: a new sweep would replace it; "
                "give another --out (or --resume a sweep's results)"
            )
        if d.is_dir() and not (d / MARKER).is_file():
            # an older cellsim's dataset has part files only (read, then checked, by resume)
            foreign = [p.name for p in d.iterdir() if not (_ANY_PART.match(p.name) or _TMP.match(p.name))]
            if foreign:
                raise UsageError(
                    f"{d} is not empty and is not a sweep's dataset (no {MARKER}; it holds "
                    f"{foreign[0]}): give another --out, an empty or new directory"
                )
        d.mkdir(parents=True, exist_ok=True)
        import fcntl

        fd = os.open(d / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UsageError(
                f"another sweep is writing to {d} (it holds {d / _LOCK}): wait for it, or give another --out"
            ) from None
        self.lock_fd = fd
        marker = {"format": 1, "written_by": "cellsim", "settings": self.settings_id}
        tmp = d / f".{MARKER}.tmp"
        tmp.write_text(json.dumps(marker) + "\n")
        os.replace(tmp, d / MARKER)

    def close(self) -> None:
        if self.lock_fd is not None:
            os.close(self.lock_fd)  # releases the lock
            self.lock_fd = None

    def load(self, keys: dict[str, int]) -> dict[int, Result]:
        """Finished results already in the dataset, by point index (checked against the settings)."""
        if self.dir is None or not self.dir.exists():
            return {}
        rows = read_results(self.dir, raw=True)
        done: dict[int, Result] = {}
        for row in rows:
            if row["settings"] != self.settings_id:
                raise UsageError(
                    f"{self.dir} holds results of a sweep with other settings "
                    f"(fingerprint {row['settings']}, this sweep {self.settings_id}); "
                    "give another --out or drop --resume to replace it"
                )
            i = keys.get(row["key"])
            if i is not None:
                done[i] = json.loads(row["record"])
        return done

    def reset(self) -> None:
        """Removes the results already there (a fresh sweep replaces them): only the
        part files a sweep wrote, never anything else in the directory."""
        if self.dir is None or not self.dir.is_dir():
            return
        for p in self.dir.iterdir():
            if _PART.match(p.name) or _TMP.match(p.name):
                p.unlink()

    def add(self, key: str, index: int, result: Result) -> None:
        if self.dir is None:
            return
        row: dict[str, Any] = {"key": key, "index": index, "settings": self.settings_id}
        for k, v in result.items():
            if isinstance(v, (bool, int, float, str)) and k not in row:
                row[k] = v
        row["record"] = json.dumps(result)
        self.buffer.append(row)
        if time.monotonic() - self.last >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        if self.dir is None or not self.buffer:
            self.last = time.monotonic()
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = self.dir / f".{name}.tmp"
        pq.write_table(pa.Table.from_pylist(self.buffer), tmp)
        os.replace(tmp, self.dir / name)
        self.buffer = []
        self.last = time.monotonic()


def read_results(out: str | Path, raw: bool = False) -> list[dict[str, Any]]:
    """The results in a sweep's Parquet dataset, in point order (``raw``:
    the rows as stored, with ``key``, ``index``, ``settings`` and ``record``)."""
    import pyarrow.parquet as pq

    d = Path(out)
    # every part-*.parquet is read (a damaged or foreign one is a clear error, as pandas
    # would choke on it too); only the ones named as a sweep names them are ever removed
    parts = sorted(d.glob("part-*.parquet")) if d.is_dir() else [d]
    rows: list[dict[str, Any]] = []
    for p in parts:
        rows += _read_part(pq, p)
    rows.sort(key=lambda r: r["index"])
    if raw:
        return rows
    return [json.loads(r["record"]) for r in rows]


def _read_part(pq: Any, part: Path) -> list[dict[str, Any]]:
    """The rows of one part file; a file that is not Parquet, or truncated, is
    a clear error (it was not written by a sweep, or a sweep was killed while
    another program wrote it: sweeps write each part whole, then rename it)."""
    import pyarrow as pa

    try:
        rows: list[dict[str, Any]] = pq.read_table(part).to_pylist()
    except (pa.ArrowException, OSError) as e:
        raise UsageError(
            f"{part} is not a readable Parquet part of sweep results ({' '.join(str(e).split())}); "
            "remove it, or give another --out"
        ) from None
    missing = {"key", "index", "settings", "record"} - set(rows[0] if rows else ())
    if rows and missing:
        raise UsageError(f"{part} is Parquet but not sweep results: it lacks {', '.join(sorted(missing))}")
    return rows


def _client(cluster: Any) -> tuple[Any, bool]:
    """A ``distributed.Client`` for ``cluster`` and whether we own it."""
    try:
        import distributed
    except ImportError:
        raise UsageError("--cluster needs Dask's distributed package: pip install 'cellsim[dask]'") from None
    if isinstance(cluster, distributed.Client):
        return cluster, False
    try:
        client = distributed.Client(cluster, timeout="5s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise UsageError(
            f"cannot reach the Dask scheduler at {cluster!r}: {' '.join(str(e).split())}"
        ) from None
    return client, True


def _chunks(todo: list[tuple[int, Point]], workers: int, chunk: int | None) -> list[list[tuple[int, Point]]]:
    size = chunk or max(1, min(16, len(todo) // (workers * 8) or 1))
    return [todo[i : i + size] for i in range(0, len(todo), size)]


def run_sweep(
    fn: PointFn,
    points: Sequence[Point],
    *,
    key: Callable[[Point], str] | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    workers: int | None = None,
    cluster: Any = None,
    progress: ProgressFn | None = None,
    settings: dict[str, Any] | None = None,
    chunk: int | None = None,
    flush_s: float = 1.0,
    cost: Callable[[Point], float] | None = None,
) -> list[Result]:
    """Runs ``fn`` on every point and returns the results in point order.

    Args:
        fn: a module-level function ``point -> result`` (both JSON-serialisable).
        points: the points.
        key: a point's unique name (default: its JSON text).
        out: Parquet dataset to append finished points to (see the module docstring).
        resume: keep the points already in ``out`` and run only the others.
        workers: local worker processes (default: all cores; 1: in this process).
        cluster: a Dask scheduler address or ``distributed.Client`` (instead of local workers).
        progress: ``progress(done, total)`` after each finished chunk.
        settings: what the results depend on besides the points; a resumed
            file must have been made with the same.
        chunk: points per task sent to a worker (default: small, adaptive; 1 with ``cost``).
        flush_s: seconds between appends to ``out``.
        cost: a point's estimated cost (any positive unit, e.g. seconds): the
            points then run longest first and ``progress`` counts :class:`Work`.

    Raises :class:`SweepInterrupted` on Ctrl-C (finished points are kept in
    ``out``) and re-raises a point's exception after saving the others.
    """
    keyf = key or (lambda p: json.dumps(p, sort_keys=True, default=str))
    keys = [keyf(p) for p in points]
    if len(set(keys)) != len(keys):
        raise UsageError("two points of the sweep have the same key")
    index = {k: i for i, k in enumerate(keys)}
    store = _Store(out, fingerprint(settings or {}), flush_s)
    store.open()
    weights = None if cost is None else [_weight(cost(p)) for p in points]
    if weights is not None and chunk is None:
        chunk = 1
    try:
        return _sweep(fn, points, keys, index, store, resume, workers, cluster, progress, chunk, out, weights)
    finally:
        store.close()


def _weight(c: float) -> int:
    """A point's cost as whole :class:`Work` units (thousandths; at least one)."""
    if not c > 0:
        raise UsageError(f"a sweep point's cost must be positive, not {c!r}")
    return max(1, round(1000 * c))


def _sweep(
    fn: PointFn,
    points: Sequence[Point],
    keys: list[str],
    index: dict[str, int],
    store: _Store,
    resume: bool,
    workers: int | None,
    cluster: Any,
    progress: ProgressFn | None,
    chunk: int | None,
    out: str | Path | None,
    weights: list[int] | None = None,
) -> list[Result]:
    results: dict[int, Result] = {}
    if resume:
        results = store.load(index)
    else:
        store.reset()
    total = len(points)
    todo = [(i, p) for i, p in enumerate(points) if i not in results]
    if weights is not None:
        # longest first (stable: equal costs keep their order)
        todo.sort(key=lambda t: -weights[t[0]])

    work = [0 if weights is None else sum(weights[i] for i in results)]
    total_work = Work(0 if weights is None else sum(weights))

    def report() -> None:
        if progress is None:
            return
        if weights is None:
            progress(len(results), total)
        else:
            progress(Work(work[0]), total_work)

    report()

    def finished(batch: Iterable[tuple[int, Result]]) -> None:
        for i, r in batch:
            if weights is not None and i not in results:
                work[0] += weights[i]
            results[i] = r
            store.add(keys[i], i, r)
        report()

    try:
        if not todo:
            pass
        elif cluster is not None:
            _run_dask(fn, todo, cluster, chunk, finished, keys)
        else:
            n = workers or os.cpu_count() or 1
            if n <= 1 or len(todo) == 1:
                for i, p in todo:
                    finished([(i, fn(p))])
            else:
                _run_local(fn, todo, n, chunk, finished, keys)
    except KeyboardInterrupt:
        store.flush()
        where = f"they are in {out} (run again with --resume to finish)" if out else "no --out file was given"
        raise SweepInterrupted(
            f"interrupted: {len(results)} of {total} points finished; {where}", len(results), total, _s(out)
        ) from None
    finally:
        store.flush()
    return [results[i] for i in range(total)]


def _s(out: str | Path | None) -> str | None:
    return None if out is None else str(out)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True


def _run_local(
    fn: PointFn,
    todo: list[tuple[int, Point]],
    workers: int,
    chunk: int | None,
    finished: Callable[[Iterable[tuple[int, Result]]], None],
    keys: list[str],
) -> None:
    # concurrent.futures, not multiprocessing's Pool: a worker that dies (a crash,
    # os._exit, the OOM killer) breaks the executor, which every pending future then
    # says, where a Pool waits for the lost task forever (and its terminate() can hang
    # on the task queue's lock). Each worker writes its pid and the point it runs into
    # a shared slot: the error names the point, and a failure or Ctrl-C kills the
    # workers at once instead of waiting for the chunks in flight.
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context()
    n = min(workers, len(todo))
    slots = ctx.Array("q", [-1] * (8 * n), lock=False)
    counter = ctx.Value("q", 0)
    ex = ProcessPoolExecutor(
        n, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(), slots, counter)
    )
    pending = {ex.submit(_run_chunk, fn, c) for c in _chunks(todo, workers, chunk)}
    ok = False
    try:
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for f in done:
                finished(f.result())
        ok = True
    except BrokenProcessPool:
        raise _dead_worker(slots, keys) from None
    finally:
        if not ok:
            _kill_workers(slots)
        ex.shutdown(wait=True, cancel_futures=True)


def _kill_workers(slots: Any) -> None:
    for s in range(len(slots) // 2):
        pid = slots[2 * s]
        if pid > 0 and _alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _dead_worker(slots: Any, keys: list[str]) -> WorkerDied:
    """The error for a worker that died: the point it was running, if a slot says."""
    for s in range(len(slots) // 2):
        pid, i = slots[2 * s], slots[2 * s + 1]
        if pid > 0 and i >= 0 and not _alive(pid):
            return WorkerDied(
                f"a worker process (pid {pid}) died while it ran point {keys[i]} (killed by a signal, "
                "os._exit or the out-of-memory killer); every finished point is kept",
                keys[i],
            )
    return WorkerDied(
        "a worker process died (killed by a signal, os._exit or the out-of-memory killer); "
        "every finished point is kept"
    )


def _run_dask(
    fn: PointFn,
    todo: list[tuple[int, Point]],
    cluster: Any,
    chunk: int | None,
    finished: Callable[[Iterable[tuple[int, Result]]], None],
    keys: list[str],
) -> None:
    client, owned = _client(cluster)
    try:
        import distributed
        from distributed import as_completed

        n = max(sum(client.nthreads().values()), 1)
        chunks = {client.submit(_run_chunk, fn, c, pure=False): c for c in _chunks(todo, n, chunk)}
        futures = list(chunks)
        try:
            # the client's own loop: a client made from an address is not the
            # default client, which as_completed looks for otherwise
            for f in as_completed(futures, loop=client.loop):
                try:
                    batch = f.result()
                except distributed.KilledWorker:
                    names = ", ".join(keys[i] for i, _ in chunks[f])
                    raise WorkerDied(
                        f"Dask workers died while they ran points {names} (KilledWorker); "
                        "every finished point is kept",
                        keys[chunks[f][0][0]],
                    ) from None
                finished(batch)
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        if owned:
            client.close()
