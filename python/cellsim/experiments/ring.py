"""``ring``: Keller and Varbanescu 2010's ring benchmark under one mapping.

``k`` tasks on ``k`` SPEs (6 on ``ps3``, 8 on ``qs20``/``qs22``) in a
bidirectional ring (``unidirectional`` for the paper's Figure 5): each task
starts two packets and forwards every packet it receives to its other
neighbour, ``transmissions`` sends per SPE, over Keller and Varbanescu 2010's message-passing
library (:mod:`cellsim.messaging`). Task ``i`` runs on logical SPE ``a_i`` of
the mapping ``[a0 ... ak-1]`` (``a0 = 0``). Each record is one run: the
runtime in simulated ns (the last task's end), the physical SPE of each task,
the bytes and utilisation of every ring segment (both rings of a direction
together) and the command bus's load. Packet bytes are checked after the run.

>>> from cellsim.experiments import ring
>>> r = ring.run(machine="qs20", transmissions=20, mapping="[02467531]")[0]
>>> r["bytes_ok"], r["mapping"], r["runtime_ns"] > 0
(True, '[02467531]', True)
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Any, Unpack

from ..exceptions import UsageError
from ..messaging.explorer import PAPER_TASKS
from ..messaging.patterns import format_mapping, parse_mapping, ring_pattern
from ..messaging.simulate import default_contexts, point_seed, run_placement, simulate
from ..messaging.target import resolve
from . import Experiment, Option, Table
from ._common import save_figure
from ._messaging import (
    VARIATION_OPTIONS,
    MessagingSettings,
    library_options,
    one_contexts,
    one_mode,
    variation_from,
)

__all__ = ["DEFAULT_TRANSMISSIONS", "EXPERIMENT", "compare", "plot", "run", "tables"]

DEFAULT_TRANSMISSIONS = 10_000


def run(
    *,
    mapping: str | Sequence[int] | None = None,
    runs: int | None = None,
    **settings: Unpack[MessagingSettings],
) -> list[dict[str, Any]]:
    """Runs the ring ``runs`` times (default 1); one record per run.

    ``mapping`` defaults to the identity; the library's options (``settings``)
    are those of :func:`cellsim.messaging.simulate` (``buffers`` is ``nbuf``). Run ``r``
    has the placement of run ``r`` of the ``mapping`` experiment with the
    same seed (:func:`cellsim.messaging.simulate.run_placement`), so its
    runtime is that experiment's for this mapping and run.
    """
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    mode = one_mode(settings.get("mode"))
    target = resolve(machine)
    ctx = one_contexts(settings.get("contexts")) or default_contexts(target, mode)
    var = variation_from(settings)
    vis = target.visible(var.visible)
    # One task per SPE Linux sees, at most a chip's: 6 on a PS3, 8 on a blade
    # (Keller and Varbanescu 2010: "k = 8 threads on a Cell blade", whose two chips have 16).
    # A mapping of more tasks (up to every SPE of the machine) runs that many.
    k = min(len(vis), PAPER_TASKS)
    mp = parse_mapping(mapping) if mapping is not None else tuple(range(k))
    if len(mp) > len(vis):
        raise UsageError(
            f"mapping {format_mapping(list(mp))} has {len(mp)} tasks but {machine} has {len(vis)} SPEs"
        )
    transmissions, packet = settings.get("transmissions"), settings.get("packet")
    buffers, poll_cycles = settings.get("buffers"), settings.get("poll_cycles")
    unidirectional = settings.get("unidirectional", False)
    n = DEFAULT_TRANSMISSIONS if transmissions is None else int(transmissions)
    if n < 2:
        raise UsageError(f"transmissions {n}: each task starts two packets, so it needs at least 2")
    runs = 1 if runs is None else int(runs)
    if runs < 1:
        raise UsageError(f"runs must be at least 1, not {runs}")
    pkt = 1024 if packet is None else int(packet)
    pattern = ring_pattern(len(mp), unidirectional, pkt)
    out = []
    for r in range(runs):
        rec = simulate(
            target,
            pattern,
            mp,
            count=n,
            mode=mode,
            seed=point_seed(seed, machine, mode, pattern.name, format_mapping(list(mp)), r),
            variation=var,
            packet=pkt,
            nbuf=2 if buffers is None else int(buffers),
            poll_cycles=200 if poll_cycles is None else int(poll_cycles),
            native=native,
            contexts=ctx,
            placement=run_placement(target, mode, ctx, seed=seed, pattern=pattern.name, run=r, visible=vis),
            start_skew=False,  # as the explorer's runs (a mapping of a run already started)
        )
        rec.update({"run": r, "transmissions": n, "unidirectional": unidirectional})
        out.append(rec)
        if progress is not None:
            progress(r + 1, runs)
    return out


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """The runs, then the traffic of the first run per ring segment."""
    if not records:
        return []
    r0 = records[0]
    runs = Table(
        f"ring: {r0['machine']} {r0['mode']}, mapping {r0['mapping']}, {r0['packet']} B packets, "
        f"{r0['transmissions']} transmissions per SPE" + (", unidirectional" if r0["unidirectional"] else ""),
        ("run", "runtime (ns)", "per transmission (ns)", "physical SPE of each task", "command bus", "bytes"),
        [
            (
                str(r["run"]),
                f"{r['runtime_ns']:,.0f}",
                f"{r['runtime_ns'] / r['transmissions']:.1f}",
                " ".join(str(p) for p in r["placement"]),
                f"{r['command_bus_requests']:,} requests, {100 * r['command_bus_utilisation']:.1f}%",
                "ok" if r.get("bytes_ok") else "?",
            )
            for r in records
        ],
    )
    segs = Table(
        "ring segments (run 0; both rings of a direction together, utilisation of their capacity)",
        ("segment", "direction", "MB", "utilisation"),
        [
            (
                s["segment"],
                s["direction"],
                f"{s['bytes'] / 1e6:.3f}",
                f"{100 * s['utilisation']:.2f}%",
            )
            for s in r0["segments"]
        ],
    )
    return [runs, segs]


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keller and Varbanescu 2010 publishes no runtime of a single mapping: nothing to compare."""
    return []


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """The utilisation of every ring segment in both directions (run 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r0 = records[0]
    segs = r0["segments"]
    fig, axes = plt.subplots(2, 1, figsize=(10, 6), layout="constrained", sharey=True)
    for ax, title in ((axes[0], "clockwise"), (axes[1], "counter-clockwise")):
        part = [s for s in segs if s["direction"] == title]
        ax.bar(range(len(part)), [100 * s["utilisation"] for s in part], color="tab:blue")
        ax.set_xticks(range(len(part)), [s["segment"] for s in part], rotation=30, fontsize=7)
        ax.set_ylabel("utilisation (%)")
        ax.set_title(f"{title} rings", fontsize=9)
    save_figure(
        fig,
        path,
        (
            f"ring {r0['mapping']} on {r0['machine']} ({r0['mode']}): {r0['runtime_ns'] / 1e3:,.1f} us, "
            f"command bus {100 * r0['command_bus_utilisation']:.1f}% busy"
        ),
        dpi=110,
    )
    plt.close(fig)


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        Option("mapping", "str", "task i on logical SPE a_i, e.g. [02467531]", default_note="the identity"),
        *library_options(DEFAULT_TRANSMISSIONS),
        Option("runs", "int", "runs", default=1),
        *VARIATION_OPTIONS,
    ),
)
