"""Task communication patterns: the ring of Keller and Varbanescu 2010 and user graphs.

A :class:`Pattern` is a set of tasks and directed edges ``(source,
destination, bytes per iteration)``. The ring patterns run Keller and Varbanescu 2010's ring
benchmark (each task starts packets and forwards what it receives, see
:func:`cellsim.messaging.forward_task`); every other pattern runs iterations
of "send each out-neighbour its bytes, receive from each in-neighbour"
(:func:`cellsim.messaging.exchange_task`).

A pattern file is JSON or CSV::

    {"tasks": 4, "edges": [[0, 1, 4096], [1, 2, 4096], [2, 3, 1024]]}
    {"edges": [{"source": 0, "destination": 1, "bytes": 4096}, ...]}

    source,destination,bytes
    0,1,4096
    1,2,4096

``tasks`` defaults to one more than the largest task number.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..exceptions import UsageError
from .library import MAX_TASKS, InPeer, OutPeer, TaskSpec, packets_per_iteration

__all__ = [
    "BUILTIN",
    "Pattern",
    "builtin",
    "load_pattern",
    "parse_mapping",
    "pattern_from_edges",
    "ring_pattern",
]

BUILTIN = ("ring", "ring-uni", "pairs", "all-to-all")
"""The named patterns of ``cellsim map --pattern``."""


@dataclass(frozen=True)
class Pattern:
    """Tasks and directed edges ``(source, destination, bytes per iteration)``.

    ``kind`` ``ring`` runs Keller and Varbanescu 2010's ring (``unidirectional`` for its
    Figure 5); ``exchange`` runs iterations of the edges.
    """

    name: str
    tasks: int
    edges: tuple[tuple[int, int, int], ...]
    kind: Literal["ring", "exchange"] = "exchange"
    unidirectional: bool = False

    def task_specs(self, count: int, packet: int) -> list[TaskSpec]:
        """What each task sends and receives: ``count`` is the transmissions
        per task (ring) or the iterations (exchange)."""
        if self.kind == "ring":
            return ring_specs(self.tasks, count, self.unidirectional)
        return exchange_specs(self, count, packet)


def ring_pattern(tasks: int, unidirectional: bool = False, packet: int = 1024) -> Pattern:
    """Keller and Varbanescu 2010's ring of ``tasks`` tasks, bidirectional unless ``unidirectional``;
    the edges carry one packet per iteration (for the link-load model)."""
    if unidirectional:
        if tasks < 2:
            raise UsageError(f"a unidirectional ring needs at least 2 tasks, not {tasks}")
        edges = tuple((i, (i + 1) % tasks, packet) for i in range(tasks))
    else:
        if tasks < 3:
            raise UsageError(f"a bidirectional ring needs at least 3 tasks, not {tasks}")
        edges = tuple(
            e for i in range(tasks) for e in ((i, (i + 1) % tasks, packet), (i, (i - 1) % tasks, packet))
        )
    name = "ring-uni" if unidirectional else "ring"
    return Pattern(name, tasks, edges, "ring", unidirectional)


def ring_specs(tasks: int, transmissions: int, unidirectional: bool) -> list[TaskSpec]:
    """Keller and Varbanescu 2010's ring: each task starts two packets and forwards every packet
    it receives to its other neighbour, ``transmissions`` sends per task in all.

    Bidirectional: one initial packet each way; ``transmissions - t // 2``
    packets clockwise (to task ``i + 1``) and ``t // 2`` counter-clockwise;
    the last packet received each way is absorbed. Unidirectional: both
    initial packets go to task ``i + 1``.
    """
    if transmissions < 2:
        raise UsageError(
            f"transmissions {transmissions}: each task starts two packets, so it needs at least 2"
        )
    specs = []
    for i in range(tasks):
        right, left = (i + 1) % tasks, (i - 1) % tasks
        outs: tuple[OutPeer, ...]
        ins: tuple[InPeer, ...]
        if unidirectional:
            outs = (OutPeer(right, transmissions, 2),)
            ins = (InPeer(left, transmissions, 0, transmissions - 2),)
        else:
            cw, ccw = transmissions - transmissions // 2, transmissions // 2
            outs = (OutPeer(right, cw, 1), OutPeer(left, ccw, 1))
            ins = (InPeer(left, cw, 0, cw - 1), InPeer(right, ccw, 1, ccw - 1))
        specs.append(TaskSpec(outs, ins))
    return specs


def exchange_specs(p: Pattern, iterations: int, packet: int) -> list[TaskSpec]:
    """The tasks of an exchange pattern for ``iterations`` iterations."""
    if iterations < 1:
        raise UsageError(f"iterations {iterations} must be at least 1")
    outs: list[list[OutPeer]] = [[] for _ in range(p.tasks)]
    ins: list[list[InPeer]] = [[] for _ in range(p.tasks)]
    for s, d, b in p.edges:
        n = iterations * packets_per_iteration(b, packet)
        outs[s].append(OutPeer(d, n, 0, b))
        ins[d].append(InPeer(s, n, None, 0, b))
    return [TaskSpec(tuple(o), tuple(i)) for o, i in zip(outs, ins, strict=True)]


def builtin(name: str, tasks: int, packet: int = 1024) -> Pattern:
    """A named pattern on ``tasks`` tasks: ``ring``, ``ring-uni``, ``pairs``
    (0<->1, 2<->3, ...) or ``all-to-all``; one packet per edge and iteration."""
    if name == "ring":
        return ring_pattern(tasks, False, packet)
    if name == "ring-uni":
        return ring_pattern(tasks, True, packet)
    if name == "pairs":
        if tasks < 2 or tasks % 2:
            raise UsageError(f"the pairs pattern needs an even number of tasks, not {tasks}")
        edges = tuple(e for i in range(0, tasks, 2) for e in ((i, i + 1, packet), (i + 1, i, packet)))
        return Pattern("pairs", tasks, edges)
    if name == "all-to-all":
        if tasks < 2:
            raise UsageError(f"all-to-all needs at least 2 tasks, not {tasks}")
        edges = tuple((s, d, packet) for s in range(tasks) for d in range(tasks) if s != d)
        return Pattern("all-to-all", tasks, edges)
    raise UsageError(f"unknown pattern {name!r}: give a file or one of {', '.join(BUILTIN)}")


def pattern_from_edges(name: str, edges: list[Any], tasks: int | None = None) -> Pattern:
    """A pattern from ``(source, destination, bytes)`` triples, checked:
    task numbers from 0, no self or repeated edges, positive bytes."""
    out: list[tuple[int, int, int]] = []
    seen: set[tuple[int, int]] = set()
    for n, e in enumerate(edges, 1):
        try:
            s, d, b = (int(e[0]), int(e[1]), int(e[2]))
            if any(float(x) != int(float(x)) for x in e[:3]):
                raise ValueError
        except (TypeError, ValueError, IndexError, KeyError):
            raise UsageError(
                f"{name}: edge {n} {e!r} is not (source, destination, bytes) with integers"
            ) from None
        if s < 0 or d < 0:
            raise UsageError(f"{name}: edge {n} ({s}, {d}, {b}): task numbers start at 0")
        if s == d:
            raise UsageError(f"{name}: edge {n} ({s}, {d}, {b}): a task does not send to itself")
        if b <= 0:
            raise UsageError(f"{name}: edge {n} ({s}, {d}, {b}): bytes per iteration must be positive")
        if (s, d) in seen:
            raise UsageError(f"{name}: edge {n} ({s}, {d}) appears twice; give one edge with the sum")
        seen.add((s, d))
        out.append((s, d, b))
    if not out:
        raise UsageError(f"{name}: the pattern has no edges")
    n_tasks = max(max(s, d) for s, d, _ in out) + 1
    if tasks is not None:
        if int(tasks) < n_tasks:
            raise UsageError(f"{name}: 'tasks' is {tasks} but the edges use task {n_tasks - 1}")
        n_tasks = int(tasks)
    if n_tasks > MAX_TASKS:
        raise UsageError(
            f"{name}: {n_tasks} tasks; the library takes at most {MAX_TASKS} (a two-chip blade's SPEs)"
        )
    return Pattern(name, n_tasks, tuple(out))


def load_pattern(path: str | Path) -> Pattern:
    """Reads a pattern file (JSON or CSV, see the module docstring)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise UsageError(f"cannot read pattern file {str(p)!r}: {e.strerror or e}") from None
    name = p.name
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"{name}: not valid JSON: {e.msg} at line {e.lineno}") from None
        tasks = None
        edges = doc
        if isinstance(doc, dict):
            if "edges" not in doc:
                raise UsageError(f"{name}: a JSON pattern needs an 'edges' list")
            edges, tasks = doc["edges"], doc.get("tasks")
            if tasks is not None and (not isinstance(tasks, int) or tasks < 1):
                raise UsageError(f"{name}: 'tasks' must be a positive integer, not {tasks!r}")
        if not isinstance(edges, list):
            raise UsageError(f"{name}: 'edges' must be a list, not {type(edges).__name__}")
        rows = []
        for edge in edges:
            if isinstance(edge, dict):
                try:
                    rows.append([edge["source"], edge["destination"], edge["bytes"]])
                except KeyError as k:
                    raise UsageError(f"{name}: edge {edge!r} has no {k.args[0]!r}") from None
            else:
                rows.append(edge)
        return pattern_from_edges(name, rows, tasks)
    rows = []
    for n, row in enumerate(csv.reader(io.StringIO(text)), 1):
        cells = [c.strip() for c in row]
        if not cells or all(not c for c in cells) or cells[0].startswith("#"):
            continue
        if n == 1 and not cells[0].lstrip("-").isdigit():
            want = ["source", "destination", "bytes"]
            if [c.lower() for c in cells[:3]] != want:
                raise UsageError(f"{name}: CSV header {cells!r} should be {','.join(want)}")
            continue
        if len(cells) != 3:
            raise UsageError(f"{name}: line {n} has {len(cells)} fields, not 3 (source,destination,bytes)")
        rows.append(cells)
    return pattern_from_edges(name, rows)


def parse_mapping(text: str | Sequence[int], tasks: int | None = None) -> tuple[int, ...]:
    """A mapping ``[a0 ... ak-1]`` (task i runs on logical SPE a_i): ``"[024531]"``,
    ``"024531"``, ``"0,2,4,5,3,1"`` or a sequence. It must be a permutation of
    0..k-1 with ``a0 = 0`` (and have ``tasks`` entries, if given)."""
    if not isinstance(text, str):
        vals = [int(x) for x in text]
        shown = str(list(text))
    else:
        shown = text
        t = text.strip()
        opened, closed = t[:1] in ("[", "("), t[-1:] in ("]", ")")
        if opened != closed:
            raise UsageError(f"mapping {shown!r} has an unbalanced bracket: write [024531] or 024531")
        s = t.strip("[]()").replace(" ", "")
        try:
            vals = [int(x) for x in s.split(",") if x] if "," in s else [int(c) for c in s]
        except ValueError:
            raise UsageError(f"mapping {shown!r} is not a list of SPE numbers like [024531]") from None
    if not vals:
        raise UsageError(f"mapping {shown!r} is empty")
    k = len(vals)
    if tasks is not None and k != tasks:
        raise UsageError(f"mapping {shown!r} has {k} entries for {tasks} tasks")
    if sorted(vals) != list(range(k)):
        raise UsageError(f"mapping {shown!r} is not a permutation of 0..{k - 1}")
    if vals[0] != 0:
        raise UsageError(f"mapping {shown!r} must fix task 0 on SPE 0 (a0 = 0), not a0 = {vals[0]}")
    return tuple(vals)


def format_mapping(mapping: tuple[int, ...] | list[int]) -> str:
    """``[024531]`` (digits; comma-separated beyond 10 SPEs)."""
    if all(a < 10 for a in mapping):
        return "[" + "".join(str(a) for a in mapping) + "]"
    return "[" + ",".join(str(a) for a in mapping) + "]"
