"""Chrome/Perfetto traces of a run.

Open the file at https://ui.perfetto.dev (or chrome://tracing). One process
per SPE (a track for its SPU — waits and computations — and one per MFC queue
slot with the DMA commands), one per PPE thread, and one per data ring with a
track for each of its concurrent transfers. Times are simulated nanoseconds
shown as microseconds.

From Python: ``Machine(..., trace=True)`` then ``m.write_trace(path)``. From
the command line: ``cellsim run EXPERIMENT --trace PATH`` traces the first
machine the experiment builds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .machine import Machine

__all__ = ["capture", "chrome_trace", "write_chrome_trace"]

DEFAULT_LIMIT = 2_000_000

_RING_NAMES = {
    0: "ring 0 (clockwise)",
    1: "ring 1 (clockwise)",
    2: "ring 2 (counter-clockwise)",
    3: "ring 3 (counter-clockwise)",
}


def chrome_trace(m: Machine) -> dict[str, Any]:
    """The machine's trace records as a Chrome trace-event document."""
    rows, dropped = m._engine.trace_records()
    us_per_cycle = 1e6 / m.core_hz
    events: list[dict[str, Any]] = []
    named: set[tuple[int, int]] = set()

    def track(kind: str, ident: int, lane: int) -> tuple[int, int, str, str]:
        if kind in ("spu", "mfc"):
            pid, pname = 100 + ident, f"SPE {ident}"
            tid, tname = (0, "SPU") if kind == "spu" else (1 + lane, f"MFC slot {lane}")
        elif kind == "ppe":
            pid, pname, tid, tname = 10, "PPE", ident, f"thread {ident}"
        else:
            pid, pname = 200 + ident, f"EIB {_RING_NAMES.get(ident, f'ring {ident}')}"
            tid, tname = lane, f"transfer {lane}"
        return pid, tid, pname, tname

    for kind, ident, lane, name, start, end in rows:
        pid, tid, pname, tname = track(kind, ident, lane)
        if (pid, -1) not in named:
            named.add((pid, -1))
            events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": pname}})
            events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
        if (pid, tid) not in named:
            named.add((pid, tid))
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": tname}})
        ev: dict[str, Any] = {"name": name, "pid": pid, "tid": tid, "ts": start * us_per_cycle}
        if end > start:
            ev.update(ph="X", dur=(end - start) * us_per_cycle)
        else:
            ev.update(ph="i", s="t")
        events.append(ev)
    meta = {"machine": m.name, "seed": m.seed, "records": len(rows), "dropped": dropped}
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}


def write_chrome_trace(m: Machine, path: str | Path) -> Path:
    """Writes the machine's trace to ``path`` as Chrome trace JSON."""
    p = Path(path)
    p.write_text(json.dumps(chrome_trace(m)))
    return p


_capture: dict[str, Any] | None = None


@contextmanager
def capture(path: str | Path, limit: int = DEFAULT_LIMIT) -> Iterator[dict[str, Any]]:
    """Traces the first :class:`Machine` built inside the block and writes it
    to ``path`` when the block ends."""
    global _capture
    state: dict[str, Any] = {"path": Path(path), "limit": limit, "machine": None}
    _capture = state
    try:
        yield state
    finally:
        _capture = None
        if state["machine"] is not None:
            write_chrome_trace(state["machine"], state["path"])


def _register(m: Machine) -> bool:
    """Called by each new Machine: whether it should trace (capture is on and
    no machine was taken yet)."""
    if _capture is None or _capture["machine"] is not None:
        return False
    _capture["machine"] = m
    return True
