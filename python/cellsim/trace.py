"""Chrome/Perfetto traces of a run.

Open the file at https://ui.perfetto.dev (or chrome://tracing). One group of
tracks per Cell chip ("chip 0", "chip 1" on a blade) holding its PPE threads,
its SPEs — named by logical and physical number, "SPE 0 (phys 7)", and
"SPE 3 (phys 11, chip 1)" on a blade — each with a track for its SPU (waits
and computations) and one per MFC queue slot (each DMA command from queue
entry to tag update), and one track per concurrent transfer of each data ring
(every bus transfer). Slices carry their details as args (bytes, tag, EA, LS
address, ring, direction); arrows go from each DMA command to its bus
transfers and to the mailbox or signal register writes it makes; counter
tracks follow each ring's occupancy, each MFC's queue depth and the transfers
in flight to or from memory. Timestamps are whole simulated nanoseconds (the
JSON format counts in microseconds: three decimals).

The records are streamed to the file in chunks, taken out of the engine as
they are written, so memory stays bounded whatever the trace's size; the
engine keeps at most ``limit`` records and counts the rest as dropped.

From Python: ``Machine(..., trace=True, trace_limit=N)`` then
``m.write_trace(path)``. From the command line: ``cellsim run EXPERIMENT
--trace PATH`` traces the first machine the experiment builds (its run's
options carry a :class:`Capture`), ``cellsim trace --limit N -o PATH SCRIPT``
the first one a script builds.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .machine import Machine

__all__ = [
    "DEFAULT_LIMIT",
    "Capture",
    "TraceStats",
    "TraceWriter",
    "capture",
    "chrome_trace",
    "write_chrome_trace",
]

DEFAULT_LIMIT = 1_000_000
"""Records a trace keeps by default (about 250 MB of JSON); the rest are counted as dropped."""

CHUNK = 65_536
"""Records taken from the engine and written at a time."""

_RINGS_PER_CHIP = 4
_CYCLE_ARGS = {"arrive": "arrive_ns", "started": "dmac_start_ns"}
_HEX_ARGS = ("ea", "ls", "value")


@dataclass(frozen=True)
class TraceStats:
    """What a trace file holds: ``records`` written, ``dropped`` past the limit."""

    path: Path
    records: int
    dropped: int


class _Layout:
    """Where each record goes: a process per chip, a thread (track) per SPU,
    MFC slot, PPE thread and ring lane, named for a reader; and the sub-track
    that keeps slices on one track from overlapping."""

    def __init__(self, m: Machine) -> None:
        self.chips = m.chips
        self.placement = m.placement
        self.tids: dict[tuple[str, int, int, int], tuple[int, int]] = {}
        self.ends: dict[tuple[str, int, int], list[int]] = {}
        self.meta: list[dict[str, Any]] = []

    def spe_name(self, logical: int) -> str:
        phys = self.placement[logical] if logical < len(self.placement) else logical
        where = f", chip {phys // 8}" if self.chips > 1 else ""
        return f"SPE {logical} (phys {phys}{where})"

    def chip_of(self, kind: str, ident: int) -> int:
        if kind in ("spu", "mfc"):
            return self.placement[ident] // 8 if ident < len(self.placement) else 0
        if kind == "ring":
            return ident // _RINGS_PER_CHIP
        return 0  # the PPE threads are drawn with chip 0

    def _names(self, kind: str, ident: int, lane: int) -> tuple[str, int]:
        """The track's name and its place in the chip's group."""
        if kind == "spu":
            return self.spe_name(ident), 1000 + 100 * ident
        if kind == "mfc":
            what = f"proxy slot {lane - 16}" if lane >= 16 else f"MFC slot {lane}"
            return f"{self.spe_name(ident)} {what}", 1000 + 100 * ident + 1 + lane
        if kind == "ppe":
            return f"PPE thread {ident}", ident
        ring = ident % _RINGS_PER_CHIP
        way = "clockwise" if ring < _RINGS_PER_CHIP // 2 else "counter-clockwise"
        return f"ring {ring} ({way}) transfer {lane}", 100_000 + 100 * ring + lane

    def mpi_track(self, rank: int, spe: int) -> tuple[int, int]:
        """The track of an MPI rank's calls, just above its SPE's tracks."""
        key = ("mpi", rank, spe, 0)
        if key not in self.tids:
            pid, tid = self.tid("spu", spe, 0)  # the chip's process exists
            tid = len(self.tids) + 1
            self.tids[key] = (pid, tid)
            name = f"MPI rank {rank}, {self.spe_name(spe)}"
            self.meta.append(
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
            )
            order = {"sort_index": 1000 + 100 * spe - 1}
            self.meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": order})
        return self.tids[key]

    def track(self, kind: str, ident: int, lane: int, start: int, end: int) -> tuple[int, int]:
        """``(pid, tid)`` of a record from ``start`` to ``end``: the first
        sub-track of its track whose slices all end by ``start``."""
        ends = self.ends.setdefault((kind, ident, lane), [])
        sub = next((i for i, e in enumerate(ends) if e <= start), len(ends))
        if sub == len(ends):
            ends.append(end)
        else:
            ends[sub] = max(ends[sub], end)
        return self.tid(kind, ident, lane, sub)

    def tid(self, kind: str, ident: int, lane: int, sub: int = 0) -> tuple[int, int]:
        key = (kind, ident, lane, sub)
        if key not in self.tids:
            pid = 1 + self.chip_of(kind, ident)
            if not any(p == pid for p, _ in self.tids.values()):
                self.meta.append(
                    {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"chip {pid - 1}"}}
                )
                self.meta.append(
                    {"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}}
                )
            tid = len(self.tids) + 1
            self.tids[key] = (pid, tid)
            name, order = self._names(kind, ident, lane)
            if sub:
                name += f" ({sub + 1})"
            self.meta.append(
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
            )
            self.meta.append(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": pid,
                    "tid": tid,
                    "args": {"sort_index": order},
                }
            )
        return self.tids[key]


class _Counters:
    """Counter tracks built from the slices' starts and ends: +1/-1 events
    per counter kept in compact arrays, sorted and summed at the end."""

    def __init__(self) -> None:
        self.events: dict[tuple[int, str], tuple[array[int], array[int]]] = {}

    def add(self, pid: int, name: str, start: int, end: int) -> None:
        ts, delta = self.events.setdefault((pid, name), (array("q"), array("b")))
        ts.extend((start, end))
        delta.extend((1, -1))

    def write(self, out: _Events) -> None:
        import numpy as np

        for (pid, name), (ts_raw, delta_raw) in sorted(self.events.items()):
            ts = np.frombuffer(ts_raw, dtype=np.int64)
            order = np.argsort(ts, kind="stable")
            ts, level = ts[order], np.cumsum(np.frombuffer(delta_raw, dtype=np.int8)[order], dtype=np.int64)
            last = np.append(ts[1:] != ts[:-1], True)  # the level once every change at a time is in
            for t, v in zip(ts[last].tolist(), level[last].tolist(), strict=True):
                out.emit({"ph": "C", "name": name, "pid": pid, "ts": _us(t), "args": {"value": v}})


def _us(ns: int) -> float:
    """Whole nanoseconds in the JSON format's microseconds (exact to three decimals)."""
    return round(ns / 1000, 3)


class _Events:
    """A JSON array of trace events written one at a time."""

    def __init__(self, f: IO[str]) -> None:
        self.f = f
        self.count = 0
        f.write('{"displayTimeUnit": "ns", "traceEvents": [\n')

    def emit(self, ev: dict[str, Any]) -> None:
        self.f.write((",\n" if self.count else "") + json.dumps(ev, separators=(",", ":")))
        self.count += 1

    def close(self, meta: dict[str, Any]) -> None:
        self.f.write('\n], "otherData": ' + json.dumps(meta) + "}\n")


class TraceWriter:
    """Streams a machine's trace records to a Chrome trace JSON file.

    :meth:`pump` takes the records the engine has made so far and writes
    them (call it as often as you like during a run); :meth:`close` writes
    the rest, the track names and the counters, and returns the file's
    :class:`TraceStats`.
    """

    def __init__(self, m: Machine, path: str | Path | IO[str]) -> None:
        self.m = m
        self.path = Path(path) if isinstance(path, (str, Path)) else Path(getattr(path, "name", "<stream>"))
        self._own = isinstance(path, (str, Path))
        self._file: IO[str] = _open(path) if isinstance(path, (str, Path)) else path
        self.events = _Events(self._file)
        self._layout: _Layout | None = None
        self.counters = _Counters()
        self.ns_per_cycle = 1e9 / m.core_hz
        self.records = 0
        self.dropped = 0
        self._flow = 0

    @property
    def layout(self) -> _Layout:
        # made at the first record: a program may still change the placement before the run
        if self._layout is None:
            self._layout = _Layout(self.m)
        return self._layout

    def ns(self, cycles: int) -> int:
        return int(cycles * self.ns_per_cycle)

    def pump(self) -> None:
        """Writes the records the engine has made so far."""
        while True:
            rows, self.dropped = self.m.take_trace(CHUNK)
            for row in rows:
                self._record(*row)
            self.records += len(rows)
            if len(rows) < CHUNK:
                return

    def close(self) -> TraceStats:
        """Writes what is left and ends the file."""
        self.pump()
        self.counters.write(self.events)
        for ev in self.layout.meta:
            self.events.emit(ev)
        meta = {"machine": self.m.name, "seed": self.m.seed, "records": self.records, "dropped": self.dropped}
        self.events.close(meta)
        if self._own:
            self._file.close()
        return TraceStats(self.path, self.records, self.dropped)

    def spans(self, spans: Iterable[tuple[int, str, int, int, dict[str, int]]], spes: Sequence[int]) -> None:
        """Adds a layer of calls above the hardware: each ``(rank, call, start
        cycle, end cycle, args)`` a slice on its rank's track ("MPI rank 1
        (SPE 1)"), beside that SPE's tracks; ``spes[rank]`` is the rank's SPE."""
        for rank, call, start, end, args in spans:
            t0, t1 = self.ns(start), self.ns(max(end, start))
            pid, tid = self.layout.mpi_track(rank, spes[rank])
            ev: dict[str, Any] = {"name": f"MPI {call}", "cat": "mpi", "pid": pid, "tid": tid, "ts": _us(t0)}
            ev.update(ph="X", dur=_us(t1 - t0), args=dict(args))
            self.events.emit(ev)
            self.records += 1

    def _record(
        self, kind: str, ident: int, lane: int, name: str, start: int, end: int, raw: list[tuple[str, int]]
    ) -> None:
        t0, t1 = self.ns(start), self.ns(end)
        pid, tid = self.layout.track(kind, ident, lane, t0, t1)
        args = self._args(raw)
        ev: dict[str, Any] = {"name": name, "pid": pid, "tid": tid, "ts": _us(t0), "args": args}
        if end > start:
            ev.update(ph="X", dur=_us(t1 - t0))
        else:
            ev.update(ph="i", s="t")
        self.events.emit(ev)
        self._count(kind, ident, pid, name, t0, t1)
        if "slot" in args and kind in ("ring", "spu"):
            # an arrow from the MFC command that made this transfer or register write
            # (its args "spe" and "slot" name the command's track)
            src = self.layout.tid("mfc", int(args["spe"]), int(args["slot"]))
            self._arrow(src, (pid, tid), t0)

    def _args(self, raw: list[tuple[str, int]]) -> dict[str, Any]:
        args: dict[str, Any] = {}
        for key, value in raw:
            if key in _CYCLE_ARGS:
                args[_CYCLE_ARGS[key]] = self.ns(value)
            elif key in _HEX_ARGS:
                args[key] = hex(value)
            elif key == "clockwise":
                args["direction"] = "clockwise" if value else "counter-clockwise"
            else:
                args[key] = value
        return args

    def _count(self, kind: str, ident: int, pid: int, name: str, t0: int, t1: int) -> None:
        if kind == "ring":
            self.counters.add(pid, f"ring {ident % _RINGS_PER_CHIP} transfers", t0, t1)
            src, _, dst = name.partition(" ")[0].partition("->")
            if "MIC" in (src, dst):
                self.counters.add(pid, "memory (MIC) transfers in flight", t0, t1)
        elif kind == "mfc":
            self.counters.add(pid, f"{self.layout.spe_name(ident)} MFC queue depth", t0, t1)

    def _arrow(self, src: tuple[int, int], dst: tuple[int, int], ts_ns: int) -> None:
        self._flow += 1
        ts = _us(ts_ns)
        common = {"name": "DMA", "cat": "dma", "id": self._flow, "ts": ts}
        self.events.emit({"ph": "s", "pid": src[0], "tid": src[1], **common})
        self.events.emit({"ph": "f", "bp": "e", "pid": dst[0], "tid": dst[1], **common})


def _open(path: str | Path) -> IO[str]:
    """The trace file: gzip-compressed when its name ends in ``.gz`` (Perfetto
    opens it as it is; a trace's JSON shrinks about 10x)."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "wt", encoding="utf-8", compresslevel=6)
    return open(path, "w", encoding="utf-8")


def write_chrome_trace(m: Machine, path: str | Path | IO[str]) -> TraceStats:
    """Writes the machine's trace records not written yet to ``path`` as
    Chrome trace JSON, streaming them (they are taken out of the machine)."""
    return TraceWriter(m, path).close()


def chrome_trace(m: Machine) -> dict[str, Any]:
    """The machine's trace as a Chrome trace-event document in memory (for
    small traces; :func:`write_chrome_trace` streams large ones)."""
    buf = io.StringIO()
    write_chrome_trace(m, buf)
    doc: dict[str, Any] = json.loads(buf.getvalue())
    return doc


class Capture:
    """``--trace PATH``: trace the first :class:`Machine` built with it, keeping
    at most ``limit`` records, and stream the records to ``path`` while it runs.

    A run's options carry one (:class:`cellsim.spec.RunOptions`); every copy of
    them shares it, so only the first machine of the whole run is traced.
    :meth:`close` ends the file and returns its :class:`TraceStats` (``None`` if
    no machine was traced). A copy sent to another process (a sweep's worker,
    pickled or forked) never traces: the file is the capturing process's.
    """

    def __init__(self, path: str | Path, limit: int = DEFAULT_LIMIT) -> None:
        self.path = Path(path)
        self.limit = limit
        self.writer: TraceWriter | None = None
        self.stats: TraceStats | None = None
        self._taken = False
        self._pid = os.getpid()

    def take(self, m: Machine) -> tuple[int, TraceWriter] | None:
        """Called by each new Machine built with the capture: the record limit
        and the writer to stream to if it is the one to trace."""
        if self._taken or self._pid != os.getpid():
            return None
        self._taken = True
        self.writer = TraceWriter(m, self.path)
        return self.limit, self.writer

    def close(self) -> TraceStats | None:
        """Ends the trace file, if a machine was traced."""
        if self.writer is not None and self.stats is None:
            self.stats = self.writer.close()
        return self.stats

    def __getstate__(self) -> dict[str, Any]:
        # another process's copy: taken already, so that it never opens the file
        return {
            "path": self.path,
            "limit": self.limit,
            "writer": None,
            "stats": None,
            "_taken": True,
            "_pid": -1,
        }

    def __repr__(self) -> str:
        return f"Capture({str(self.path)!r}, limit={self.limit})"


_script_capture: Capture | None = None


@contextmanager
def capture(path: str | Path, limit: int = DEFAULT_LIMIT) -> Iterator[Capture]:
    """Traces the first :class:`Machine` built inside the block, however it is
    built (``cellsim trace SCRIPT``: a user's script builds its own machines, so
    this is the one setting read from the process rather than given); the
    capture's ``stats`` are set once the block ends. Code that builds machines
    from a run's options gives them a :class:`Capture` instead."""
    global _script_capture
    state = Capture(path, limit)
    _script_capture = state
    try:
        yield state
    finally:
        _script_capture = None
        state.close()


def _register(m: Machine, given: Capture | None) -> tuple[int, TraceWriter] | None:
    """Called by each new Machine: the record limit and the writer to stream to,
    if the machine is the one its run's capture (or ``cellsim trace``'s) traces."""
    for c in (given, _script_capture):
        if c is not None:
            taken = c.take(m)
            if taken is not None:
                return taken
    return None
