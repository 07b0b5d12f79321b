"""``mapping``: the task-mapping explorer (Keller and Varbanescu 2010, Figures 2-5).

Every one of the ``(k-1)!`` mappings of Keller and Varbanescu 2010's ring with task 0 fixed on
SPE 0 (120 on ``ps3``, 5040 on ``qs20``/``qs22``), ``runs`` runs each (three,
as the paper), ranked by mean runtime. One record per mapping: ``mapping``
(``"[024531]"``), ``runs_ns`` (one runtime per run), ``mean_ns``, ``rank``,
``placements`` (the physical SPE of each task in each run) and the settings.
As the paper ran it, the mappings of one run share the run's placement of the
SPE contexts (``placement_per="mapping"`` draws one per mapping and run); on
a two-chip blade the contexts land on either chip (``contexts``).
The sweep runs on local worker processes or a Dask cluster (``cluster``) and
appends every finished run to a Parquet dataset (``out``, by default a file
per settings under ``~/.cache/cellsim/sweeps``), so ``resume`` finishes an
interrupted sweep without running anything twice.

The default of :data:`~cellsim.messaging.explorer.DEFAULT_TRANSMISSIONS`
transmissions per SPE (the paper: 10^7) is where the ranking stops changing
(``benches/mapping_steady.py``).

Run with no setting of its own (as ``cellsim reproduce`` does), it runs the
paper's figures (:data:`PAPER_PANELS`): Fig 2 (ps3, default), Fig 3 (ps3,
pinned, and its repeats with 2 and 0.5 KB packets and without the
hypervisor's traffic), Fig 4 (qs22, pinned, 2, 1 and 0.5 KB) and Fig 5 (qs22,
unidirectional, 1 and 0.5 KB); ``figures`` picks some of them. Each record
then names its ``figure`` and ``panel``, ranks are within a panel, and
:func:`compare` checks the paper's statements across panels (see
:mod:`cellsim.experiments._mapping_statements`).

>>> from cellsim.experiments import mapping
>>> recs = mapping.run(machine="ps3", transmissions=4, runs=1, workers=1, out=None, tasks=4)
>>> len(recs), recs[0]["rank"]
(6, 1)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any, Unpack

from .. import published as pub
from ..exceptions import UsageError
from ..messaging.explorer import (
    DEFAULT_RUNS,
    DEFAULT_TRANSMISSIONS,
    PAPER_TASKS,
    explore,
    plot_ranks,
    summary,
)
from ..messaging.target import resolve
from ..sweep import Work, fingerprint
from . import Experiment, Option, Table, run_settings
from ._common import ProgressFn, compare_row, save_figure
from ._mapping_statements import cross_quantities
from ._messaging import (
    SWEEP_OPTIONS,
    VARIATION_OPTIONS,
    MessagingSettings,
    VariationFlags,
    default_sweep_path,
    library_options,
    one_contexts,
    one_mode,
    variation_flags,
    variation_from,
)

__all__ = ["EXPERIMENT", "compare", "plot", "run", "tables"]

_AUTO = "auto"


@dataclass(frozen=True)
class Panel:
    """One setting of Keller and Varbanescu's figures: the runs behind one curve set."""

    figure: str
    machine: str
    mode: str
    packet: int
    unidirectional: bool = False
    hypervisor: bool = True
    """False: the PS3 without its hypervisor SPE's traffic (the paper's hypervisor statement)."""
    transmissions: int | None = None
    """Per SPE; None is the explorer's default."""
    sample: int | None = None
    """Mappings run (a seeded sample with the identity and the intuitive ones); None: all."""

    def mappings(self, asked: int | None) -> int | None:
        """The mappings it runs: a sampled panel takes the sample size ``asked``
        (``--mappings``), a panel of all mappings stays whole."""
        return asked if self.sample is not None and asked else self.sample

    @property
    def label(self) -> str:
        """``fig3-2048``, ``fig5-512-uni``, ``fig3-1024-nohv``."""
        return (
            f"fig{self.figure.split()[-1]}-{self.packet}"
            + ("-uni" if self.unidirectional else "")
            + ("" if self.hypervisor else "-nohv")
        )


PS3_TRANSMISSIONS = 10_000
"""Transmissions per SPE of the PS3 panels: the smallest count at which the
ranking is settled enough to quote (docs/messaging.md); a sweep of 120 mappings
takes about a minute on two cores."""

QS22_SAMPLE = 504
"""Mappings of the QS22 panels: a seeded tenth of the 5040 (all of them take
about eight minutes per panel on two cores at the default count; give
``--mappings 5040``). Ranks among all are estimated from the sample."""

PAPER_PANELS = (
    Panel("Fig 2", "ps3", "default", 1024, transmissions=PS3_TRANSMISSIONS),
    Panel("Fig 3", "ps3", "pinned", 1024, transmissions=PS3_TRANSMISSIONS),
    Panel("Fig 3", "ps3", "pinned", 2048, transmissions=PS3_TRANSMISSIONS),
    Panel("Fig 3", "ps3", "pinned", 512, transmissions=PS3_TRANSMISSIONS),
    Panel("Fig 3", "ps3", "pinned", 1024, hypervisor=False, transmissions=PS3_TRANSMISSIONS),
    Panel("Fig 4", "qs22", "pinned", 2048, sample=QS22_SAMPLE),
    Panel("Fig 4", "qs22", "pinned", 1024, sample=QS22_SAMPLE),
    Panel("Fig 4", "qs22", "pinned", 512, sample=QS22_SAMPLE),
    Panel("Fig 5", "qs22", "pinned", 1024, unidirectional=True, sample=QS22_SAMPLE),
    Panel("Fig 5", "qs22", "pinned", 512, unidirectional=True, sample=QS22_SAMPLE),
)
"""Keller and Varbanescu's figures as they ran them: Fig 2 (PS3, default
placement), Fig 3 (PS3, pinned; "we repeated the PS3 experiment with packet
sizes of 2 kbyte and 0.5 kbyte"; and, for the hypervisor statement, without the
hypervisor SPE's traffic), Fig 4 (the QS22 blade, 2, 1 and 0.5 KB), Fig 5 (its
unidirectional ring, 1 and 0.5 KB)."""


def run(
    *,
    placement_per: str | None = None,
    mappings: int | None = None,
    runs: int | None = None,
    tasks: int | None = None,
    workers: int | None = None,
    cluster: Any = None,
    out: str | PathLike[str] | None = _AUTO,
    resume: bool = False,
    figures: Iterable[int] = (),
    **settings: Unpack[MessagingSettings],
) -> list[dict[str, Any]]:
    """Runs the explorer (see :func:`cellsim.messaging.explorer.explore`);
    ``out`` ``"auto"`` (the default) is a results file per settings in the
    sweep cache, ``None`` no file. With no setting of its own (``mode``,
    ``contexts``, ``packet``, ``unidirectional``, ``tasks``, another machine)
    or with ``figures``, it runs the paper's figures (:data:`PAPER_PANELS`)."""
    machine, seed, native, progress = EXPERIMENT.settings(settings)
    mode, contexts, packet = settings.get("mode"), settings.get("contexts"), settings.get("packet")
    transmissions, unidirectional = settings.get("transmissions"), settings.get("unidirectional", False)
    buffers, poll_cycles = settings.get("buffers"), settings.get("poll_cycles")
    own = [n for n, v in (("mode", mode), ("contexts", contexts), ("packet", packet), ("tasks", tasks)) if v]
    own += ["unidirectional"] if unidirectional else []
    own += [f"machine {machine.source}"] if machine.source != EXPERIMENT.machine else []
    figs = tuple(int(f) for f in figures) if figures else ()
    if figs and own:
        raise UsageError(f"--figures runs the paper's settings; give it without {', '.join(own)}")
    if not own:
        panels = _panels(figs)
        common = dict(
            overrides=machine.overrides,
            **run_settings(machine.run),
            seed=seed,
            native=native,
            placement_per=placement_per,
            runs=runs,
            buffers=buffers,
            poll_cycles=poll_cycles,
            workers=workers,
            cluster=cluster,
            out=out,
            resume=resume,
        )
        return _run_panels(panels, progress, variation_flags(settings), transmissions, mappings, common)
    mode = one_mode(mode)
    ctx = one_contexts(contexts)
    per = placement_per or "run"
    var = variation_from(settings)
    sweep: dict[str, Any] = {
        "machine": str(machine),
        "machine_digest": machine.fingerprint,
        "mode": mode,
        "packet": packet or 1024,
        "runs": runs or DEFAULT_RUNS,
        "transmissions": transmissions or DEFAULT_TRANSMISSIONS,
        "unidirectional": unidirectional,
        "tasks": tasks,
        "seed": seed,
        "variation": var.as_dict(),
        "buffers": buffers or 2,
        "poll_cycles": poll_cycles or 200,
        "native": native,
        "contexts": ctx,
        "placement_per": per,
        "mappings": mappings,
    }
    if out == _AUTO:
        out = default_sweep_path(EXPERIMENT.name, fingerprint(sweep))
    return explore(
        machine,
        mode=mode,
        packet=sweep["packet"],
        runs=sweep["runs"],
        transmissions=sweep["transmissions"],
        unidirectional=unidirectional,
        tasks=tasks,
        seed=seed,
        variation=var,
        nbuf=sweep["buffers"],
        poll_cycles=sweep["poll_cycles"],
        native=native,
        contexts=ctx,
        placement_per=per,
        mappings=mappings,
        workers=workers,
        cluster=cluster,
        out=out,
        resume=resume,
        progress=progress,
    )


def _panels(figures: Sequence[int]) -> list[Panel]:
    known = sorted({int(p.figure.split()[-1]) for p in PAPER_PANELS})
    bad = [f for f in figures if f not in known]
    if bad:
        raise UsageError(f"figures {bad}: Keller and Varbanescu's mapping figures are {known}")
    return [p for p in PAPER_PANELS if not figures or int(p.figure.split()[-1]) in figures]


def _run_panels(
    panels: Sequence[Panel],
    progress: ProgressFn | None,
    flags: VariationFlags,
    transmissions: int | None,
    mappings: int | None,
    common: dict[str, Any],
) -> list[dict[str, Any]]:
    """Runs each panel (one explorer sweep each) and tags its records with it.
    ``progress`` follows the estimated work (:class:`~cellsim.sweep.Work`), not
    the points: a PS3 point costs several QS22 points, and the PS3's panels run
    first, so a count of points would promise the fast QS22 points at the PS3's
    rate (a time left two to three times too long)."""
    sizes = [_points(p, mappings, common) for p in panels]
    costs = [_point_cost(p, transmissions) for p in panels]
    total_work = Work(sum(n * c for n, c in zip(sizes, costs, strict=True)))
    done_before = 0
    records: list[dict[str, Any]] = []
    for panel, size, cost in zip(panels, sizes, costs, strict=True):

        def step(done: int, total: int, _base: int = done_before, _cost: int = cost) -> None:
            if progress is not None:
                progress(Work(_base + done * _cost), total_work)

        panel_flags = flags.copy()
        panel_flags["no_hypervisor"] = flags.get("no_hypervisor", False) or not panel.hypervisor
        recs = run(
            machine=panel.machine,
            mode=panel.mode,
            packet=panel.packet,
            unidirectional=panel.unidirectional,
            transmissions=_transmissions(panel, transmissions),
            mappings=panel.mappings(mappings),
            **panel_flags,
            progress=step,
            **common,
        )
        for r in recs:
            r.update(figure=panel.figure, panel=panel.label, hypervisor=panel.hypervisor)
        records += recs
        done_before += size * cost
    return records


def _points(panel: Panel, mappings: int | None, common: dict[str, Any]) -> int:
    """The sweep points of a panel: mappings times runs."""
    n = math.factorial(_tasks(panel) - 1)
    sample = panel.mappings(mappings)
    return min(n, sample or n) * (common["runs"] or DEFAULT_RUNS)


def _transmissions(panel: Panel, transmissions: int | None) -> int | None:
    """The panel's transmissions per SPE: the command's, else the panel's (``None``: the
    explorer's default)."""
    return transmissions or panel.transmissions


def _tasks(panel: Panel) -> int:
    """The ring's tasks on the panel's machine: one per SPE of a chip, at most 8."""
    return min(len(resolve(panel.machine).spes), PAPER_TASKS)


PACKET_OVERHEAD_B = 1200
"""What a packet costs the host besides its bytes, in bytes (a progress
estimate only: see :func:`_point_cost`)."""


def _point_cost(panel: Panel, transmissions: int | None) -> int:
    """A point's estimated host work, from its settings, in the units of
    :class:`~cellsim.sweep.Work`: transmissions per SPE times tasks (the packets
    sent) times tasks again (each of the ``2 * tasks`` packets in flight is
    simulated alongside the others) times the packet's bytes plus
    :data:`PACKET_OVERHEAD_B`.

    Measured once (24 points of each panel run one after another, as
    ``--workers 1`` runs them; host seconds per point): the PS3 (10,000
    transmissions, 6 tasks) 0.27 / 0.32 / 0.53 s at 512 / 1024 / 2048 B, the
    QS22 (1,000, 8 tasks) 0.053 / 0.069 / 0.099 s, its unidirectional ring
    0.062 / 0.076 s. The QS22's line in the packet size meets zero at -1270 B
    (hence the overhead; the PS3's bends up at 2 KB). A PS3 point costs 4.7 to
    5.4 QS22 points of its size: transmissions times tasks says 7.5 (the time
    left about a quarter short early on), times tasks squared 5.6. Whether
    that second factor is the tasks or the machine (the QS22 simulates two
    chips) these panels cannot tell apart. Host time per unit is then 0.39 to
    0.57 ns over the ten panels (the PS3's least, the unidirectional ring's
    most). Replayed on these times (a 20 min run on one core), the time left at
    1, 3 and 6 min reads 16.5, 14.4 and 12.1 min against 18.6, 16.6 and 13.6
    (10-15% short); counting points it read 50, 48 and 53.
    """
    k = _tasks(panel)
    return (
        (_transmissions(panel, transmissions) or DEFAULT_TRANSMISSIONS)
        * k
        * k
        * (panel.packet + PACKET_OVERHEAD_B)
    )


def panels_of(records: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The records of each panel (one group, ``""``, for a run of one setting)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        out.setdefault(str(r.get("panel", "")), []).append(r)
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v)
    return str(v)


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """The summary (Keller and Varbanescu 2010's numbers), the ten best and the five worst
    mappings; for the paper's figures, one summary column per panel."""
    if not records:
        return []
    groups = panels_of(records)
    if len(groups) > 1:
        return [_panels_table(groups)]
    s = summary(records)
    r0 = records[0]
    head = (
        f"mapping: {r0['machine']} {r0['mode']}, {r0['packet']} B packets, "
        f"{r0['transmissions']} transmissions per SPE, {s['runs']} runs"
        + (", unidirectional" if r0.get("unidirectional") else "")
    )
    labels = {
        "mappings": "mappings",
        "best": "best mapping (by average)",
        "best_rank_in_runs": "its rank in each run",
        "worst": "worst mapping",
        "worst_over_best_mean": "worst / best, average runtime",
        "worst_over_best_single": "worst / best, single runs",
        "mean_of_all_over_best": "average of all / best (a random mapping)",
        "median_over_mean": "median / mean of the averages",
    }
    rows = [(labels[k], _fmt(s[k])) for k in labels]
    for label in ("identity", "intuitive1", "intuitive2"):
        if f"{label}_rank" in s:
            rows.append((f"{label} {s[label]}: rank", str(s[f"{label}_rank"])))
            rows.append((f"{label} {s[label]}: average / best", _fmt(s[f"{label}_over_best"])))
    summ = Table(head, ("", "simulated"), rows)
    cols = ("rank", "mapping", "average (ns)", "runs (ns)")

    def row(r: dict[str, Any]) -> tuple[str, ...]:
        return (
            str(r["rank"]),
            r["mapping"],
            f"{r['mean_ns']:,.0f}",
            " ".join(f"{x:,.0f}" for x in r["runs_ns"]),
        )

    best = Table("the ten best mappings", cols, [row(r) for r in records[:10]])
    worst = Table("the five worst mappings", cols, [row(r) for r in records[-5:]])
    return [summ, best, worst]


def _panels_table(groups: dict[str, list[dict[str, Any]]]) -> Table:
    sums = {label: summary(recs) for label, recs in groups.items()}
    rows: list[tuple[str, ...]] = [
        ("figure", *(recs[0]["figure"] for recs in groups.values())),
        ("mappings run", *(str(len(recs)) for recs in groups.values())),
        ("transmissions per SPE", *(f"{recs[0]['transmissions']:,}" for recs in groups.values())),
    ]
    for key, label in (
        ("worst_over_best_mean", "worst / best, average"),
        ("worst_over_best_single", "worst / best, single runs"),
        ("mean_of_all_over_best", "a random mapping / best"),
        ("median_over_mean", "median / mean"),
        ("stray_pct", "runs stray from the average (%)"),
        ("best", "best mapping"),
        ("identity_rank_of_all", "identity: rank"),
        ("intuitive1_rank_of_all", "intuitive 1: rank"),
        ("intuitive2_rank_of_all", "intuitive 2: rank"),
    ):
        rows.append((label, *(_fmt(s[key]) if key in s else "" for s in sums.values())))
    return Table("mapping: Keller and Varbanescu's figures, one column per setting", ("", *groups), rows)


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keller and Varbanescu 2010's statements about these records, per panel (the straight
    average curve, the best mapping's and the top two's ranks in the runs, the
    intuitive mappings' ranks; the withheld ratios and ranks simulated only)
    and across panels (:mod:`._mapping_statements`)."""
    rows = []
    summaries = {}
    for label, recs in panels_of(records).items():
        r0 = recs[0]
        s = summary(recs)
        summaries[label] = s
        if not r0.get("hypervisor", True) and label:
            continue  # the hypervisor check: compared only through the cross statements
        point = {k: r0.get(k) for k in ("machine", "mode", "packet", "unidirectional")}
        name = f"{r0['machine']} {r0['mode']} {r0['packet']} B" + (" uni" if r0.get("unidirectional") else "")
        for entry in pub.entries(experiment=EXPERIMENT.name):
            if pub.matches(entry.where, point) and entry.quantity in s:
                rows.append(compare_row(entry, name, float(s[entry.quantity]), _sample_note(recs)))
    cross = cross_quantities(summaries)
    for entry in pub.entries(experiment=EXPERIMENT.name):
        if entry.quantity in cross:
            value, panels = cross[entry.quantity]
            rows.append(compare_row(entry, panels, value))
    return rows


def _sample_note(recs: Sequence[dict[str, Any]]) -> str:
    k = len(str(recs[0]["mapping"]).strip("[]"))
    total = math.factorial(k - 1) if "," not in recs[0]["mapping"] else 0
    if total and len(recs) < total:
        return f"a seeded sample of {len(recs)} of the {total} mappings; ranks among all estimated"
    return ""


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """Keller and Varbanescu 2010's rank plots (Figures 2-5): the average and each run against the rank."""
    groups = panels_of(records)
    if len(groups) == 1:
        plot_ranks(records, path)
    else:
        plot_figures(groups, path)


def _draw_panel(ax: Any, recs: Sequence[dict[str, Any]], every_run: bool) -> None:
    """One panel's curves: each run and the average at 1 KB (Figs 2, 3), else the average."""
    xs = [100.0 * r["rank"] / len(recs) for r in recs]
    ms = [r["mean_ns"] / 1e6 for r in recs]
    packet = recs[0]["packet"]
    if not every_run:
        ax.plot(xs, ms, lw=1.5, label=f"average, {packet} B")
    elif packet == 1024:
        for i in range(len(recs[0]["runs_ns"])):
            ax.plot(xs, [r["runs_ns"][i] / 1e6 for r in recs], lw=0.6, alpha=0.6, label=f"run {i + 1}")
        ax.plot(xs, ms, color="black", lw=2, label="average, 1024 B")
    else:
        ax.plot(xs, ms, lw=1, ls="--", label=f"average, {packet} B")


def plot_figures(groups: dict[str, list[dict[str, Any]]], path: str | PathLike[str]) -> None:
    """The paper's four figures side by side: Figs 2 and 3 with each run and
    the average, Figs 4 and 5 the average for each packet size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 9), layout="constrained")
    for ax, figure in zip(axes.flat, ("Fig 2", "Fig 3", "Fig 4", "Fig 5"), strict=True):
        mine = [v for v in groups.values() if v[0].get("figure") == figure and v[0].get("hypervisor", True)]
        if not mine:
            ax.set_axis_off()
            continue
        for recs in mine:
            _draw_panel(ax, recs, every_run=figure in ("Fig 2", "Fig 3"))
        r0 = mine[0][0]
        uni = ", unidirectional" if r0.get("unidirectional") else ""
        ax.set_title(
            f"{figure}: {r0['machine']} {r0['mode']}{uni}, {r0['transmissions']:,} transmissions per SPE"
        )
        ax.set_xlabel("rank by average runtime (% of the mappings run)")
        ax.set_ylabel("runtime (simulated ms)")
        ax.legend(fontsize=7, loc="upper left")
    save_figure(fig, path, f"Task mapping on the ring ({pub.cite('001')})", dpi=110)
    plt.close(fig)


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        *library_options(
            default_note=f"the figures': {PS3_TRANSMISSIONS} on the PS3, {DEFAULT_TRANSMISSIONS} on the "
            f"QS22; {DEFAULT_TRANSMISSIONS} with settings of its own"
        ),
        Option("runs", "int", "runs per mapping", default=DEFAULT_RUNS, default_note="as the paper"),
        Option(
            "placement_per",
            "str",
            "run (every mapping of a run shares the run's placement) or mapping (each mapping and run "
            "draws its own)",
            default="run",
            default_note="as the paper",
        ),
        Option("mappings", "int", "run a seeded sample of N mappings (with the identity) instead of all"),
        Option("tasks", "int", "tasks", default_note="every SPE of the machine"),
        Option(
            "figures",
            "ints",
            "run these of the paper's figures (2,3,4,5); with no setting of its own (--mode, --packet, "
            "--contexts, --tasks, --unidirectional, --machine) the experiment runs all four",
        ),
        *VARIATION_OPTIONS,
        *SWEEP_OPTIONS,
    ),
)
