"""``cellsim reproduce``: run every experiment and write the results and a report.

For each experiment ``<name>`` the output directory gets ``<name>.json`` (the
records), ``<name>.parquet`` (the same, as a table), ``<name>.png`` (the
figure) and ``<name>.compare.json`` (published vs simulated, one row per
point); ``report.html`` is a self-contained page (the template
``templates/report.html.j2``) with one row per published claim, the range
of error over its points, a link to the documentation that explains each
disagreement, an overall agreement figure, a simulated-versus-published
scatter of every point, the provenance of the run and the command that
regenerates each section.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import io
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..experiments import Experiment, all_experiments
from ..published import PAPERS, TOLERANCE_PCT, WITHHELD, WITHHELD_NOTE, cite, get, plain, readable_id
from ..style import PUBLISHED_COLOR, figure_style
from .explanations import explanation

__all__ = [
    "ExperimentResult",
    "claims",
    "format_error",
    "format_published",
    "format_simulated",
    "provenance",
    "reproduce",
    "verdict",
    "write_html",
]


@dataclass
class ExperimentResult:
    """What ``reproduce`` produced for one experiment."""

    experiment: Experiment
    records: list[dict[str, Any]]
    comparison: list[dict[str, Any]]
    seconds: float
    files: dict[str, Path] = field(default_factory=dict)


QUICK_OPTIONS: dict[str, dict[str, Any]] = {
    "dma-latency": {"count": 64},
    "dma-batch": {"count": 64},
    "hotspot": {"count": 64},
    "collective": {"count": 64, "placements": 2},
    "latency-hist": {"count": 128},
    "spe-mem": {"mb_per_spe": 1},
    "spe-spe": {"mb": 1},
    "couples": {"mb_per_spe": 1, "placements": 2},
    "cycle": {"mb_per_spe": 1, "placements": 2},
    "ppe-spe-mem": {"mb_per_spe": 1, "ppe_kb": 64},
    "cross-chip": {"mb_per_spe": 1},
    "buffering": {"blocks": 32},
    "ring": {"transmissions": 1000},
    "mapping": {"mappings": 12, "runs": 2, "transmissions": 200},
    "mpi-pingpong": {"reps": 4},
    "mpi-matvec": {"sizes": (512,), "products": 1},
    "mpi-collectives": {"reps": 2},
}
"""``cellsim reproduce --quick``: the options that shorten each experiment
(fewer DMAs, megabytes, placements, transmissions, mappings, repetitions;
the same points, so every published value is still compared). Experiments
not named run as in the full job (they take a few seconds)."""


ResultFn = Callable[[int, int, ExperimentResult], None]
"""``on_result(k, n, result)``: experiment ``k`` of ``n`` (from 1) has finished."""


def reproduce(
    out: str | Path,
    *,
    machine: str | None = None,
    seed: int = 0,
    native: bool = True,
    experiments: Sequence[Experiment] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    command: str | None = None,
    quick: bool = False,
    on_result: ResultFn | None = None,
    overrides: Sequence[str] = (),
) -> list[ExperimentResult]:
    """Runs ``experiments`` (default: all) and writes their files and
    ``report.html`` into ``out``. ``machine`` (default: each experiment's own,
    ``Experiment.machine``) is used for every experiment. ``progress(name,
    done, total)`` follows the points of each experiment, ``on_result(k, n,
    result)`` is called as each experiment finishes; ``command`` is the
    command line the report names as its origin (default: this process's).
    ``quick`` runs each experiment with :data:`QUICK_OPTIONS` (a check of the
    whole job in minutes; the report says so). ``overrides`` (``section.key=value``, a
    model variant's choice or a parameter) apply to every experiment's machine; the
    report's "model" section names the variants that ran."""
    import pandas as pd

    t0 = time.perf_counter()
    started = _dt.datetime.now(_dt.UTC)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    chosen = list(experiments) if experiments is not None else all_experiments()
    for k, exp in enumerate(chosen, 1):
        cb = None if progress is None else (lambda d, t, _n=exp.name: progress(_n, d, t))
        t1 = time.perf_counter()
        opts = QUICK_OPTIONS.get(exp.name, {}) if quick else {}
        records = exp.run(
            machine=machine or exp.machine,
            overrides=overrides,
            seed=seed,
            native=native,
            progress=cb,
            **opts,
        )
        seconds = time.perf_counter() - t1
        comparison = exp.compare(records)
        res = ExperimentResult(exp, records, comparison, seconds)
        res.files["json"] = out / f"{exp.name}.json"
        res.files["json"].write_text(json.dumps(records, indent=1) + "\n")
        res.files["parquet"] = out / f"{exp.name}.parquet"
        pd.DataFrame.from_records(records).to_parquet(res.files["parquet"], index=False)
        res.files["png"] = out / f"{exp.name}.png"
        with figure_style():
            exp.plot(records, res.files["png"])
        res.files["compare"] = out / f"{exp.name}.compare.json"
        res.files["compare"].write_text(json.dumps(comparison, indent=1) + "\n")
        results.append(res)
        if on_result is not None:
            on_result(k, len(chosen), res)
    prov = provenance(
        results,
        machine=machine,
        seed=seed,
        native=native,
        command=command,
        started=started,
        overrides=overrides,
    )
    prov["wall_s"] = time.perf_counter() - t0
    prov["quick"] = quick
    write_html(out / "report.html", results, machine=machine, seed=seed, native=native, origin=prov)
    return results


# -- one comparison row, as the tables show it -------------------------------------------


def format_published(row: dict[str, Any]) -> str:
    """The published column of a comparison row."""
    return str(row["published_text"])


def format_simulated(row: dict[str, Any]) -> str:
    """The simulated column of a comparison row, with its unit."""
    return _with_unit(row["simulated"], row["unit"])


def _with_unit(v: float, unit: str) -> str:
    return f"{v:.2f} {unit}" if unit != "x" else f"{v:.2f}x"


def format_error(row: dict[str, Any]) -> str:
    """The error column: signed % (relative to the value or the nearest range
    end); for a bound, how far under or over it the simulated value is."""
    if row["error_pct"] is None:
        return ""
    if row["kind"] in ("upper_bound", "lower_bound"):
        return _bound_error(row["error_pct"], row["error_pct"])
    return f"{row['error_pct']:+.1f}%"


def _bound_error(lo: float, hi: float) -> str:
    """How far from its bound a value is: ``12.0% under`` or ``3.1% to 4.0% over``
    (a bound has no error to be within; an upper bound holds under it, a lower one over it)."""
    if lo < 0 < hi:
        return f"{-lo:.1f}% under to {hi:.1f}% over"
    side = "under" if hi <= 0 else "over"
    a, b = sorted((abs(lo), abs(hi)))
    return f"{a:.1f}% {side}" if f"{a:.1f}" == f"{b:.1f}" else f"{a:.1f}% to {b:.1f}% {side}"


def verdict(row: dict[str, Any]) -> str:
    """``yes``/``NO`` (within the tolerance), ``holds``/``VIOLATED`` (bounds), ``withheld``."""
    if row["held_out"] or row["within"] is None:
        return "withheld"
    if row["kind"] in ("upper_bound", "lower_bound"):
        return "holds" if row["within"] else "VIOLATED"
    return "yes" if row["within"] else "NO"


# -- claims: the rows of one published result -----------------------------------------------


def claims(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The comparison rows grouped by published result (in first-seen order):
    ``id``, ``figure``, ``description``, ``kind``, ``published_text``,
    ``unit``, ``points``, ``simulated`` and ``error_pct`` as ``(min, max)``
    over the points, ``within`` (every point agrees; ``None`` if withheld),
    ``held_out`` and the points' distinct ``notes``."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["id"], []).append(row)
    out = []
    for rid, rs in grouped.items():
        r0 = rs[0]
        sims = [r["simulated"] for r in rs]
        errors = [r["error_pct"] for r in rs if r["error_pct"] is not None]
        judged = [r["within"] for r in rs if r["within"] is not None]
        out.append(
            {
                "id": rid,
                "paper": r0["paper"],
                "figure": r0["figure"],
                "description": r0["description"],
                "kind": r0["kind"],
                "published_text": r0["published_text"],
                "unit": r0["unit"],
                "points": len(rs),
                "simulated": (min(sims), max(sims)),
                "error_pct": (min(errors), max(errors)) if errors else None,
                "within": all(judged) if judged else None,
                "held_out": r0["held_out"],
                "notes": list(dict.fromkeys(r["note"] for r in rs if r["note"])),
            }
        )
    return out


def _span(lo_hi: tuple[float, float], fmt: Callable[[float], str]) -> str:
    lo, hi = lo_hi
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} to {fmt(hi)}"


def _claim_error(c: dict[str, Any]) -> str:
    if c["error_pct"] is None:
        return ""
    if c["kind"] in ("upper_bound", "lower_bound"):
        return _bound_error(*c["error_pct"])
    return _span(c["error_pct"], lambda x: f"{x:+.1f}%")


def _claim_row(c: dict[str, Any], name: str, page_dir: Path) -> dict[str, Any]:
    """A claim as the template shows it."""
    v = verdict(c)
    bad = v in ("NO", "VIOLATED")
    entry = _entry(c["id"])
    return {
        "id": c["id"],
        "label": readable_id(c["id"]),
        "figure": c["figure"],
        "description": plain(c["description"]),
        "quote": entry.quote_text() if entry is not None and entry.quote else "",
        "published": WITHHELD if c["held_out"] else c["published_text"],
        "withheld": v == "withheld",
        "simulated": _span(c["simulated"], lambda x: _with_unit(x, c["unit"])),
        "error": _claim_error(c),
        "points": c["points"],
        "verdict": v,
        "css": "bad" if bad else "withheld" if v == "withheld" else "",
        "note": plain("; ".join(c["notes"])),
        "explanation": explanation(name, page_dir) if bad else None,
    }


def _entry(rid: str) -> Any:
    try:
        return get(rid)
    except KeyError:  # a row made by hand (tests, other tools)
        return None


# -- the figures of the whole report -----------------------------------------------------


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def agreement_figure(results: Sequence[ExperimentResult]) -> str:
    """Claims agreeing, disagreeing and withheld per experiment (horizontal
    stacked bars), as a base64 PNG."""
    from matplotlib.figure import Figure

    names, counts = [], []
    for r in results:
        cs = claims(r.comparison)
        names.append(r.experiment.name)
        counts.append(
            (
                sum(1 for c in cs if c["within"] is True),
                sum(1 for c in cs if c["within"] is False),
                sum(1 for c in cs if c["within"] is None),
            )
        )
    fig = Figure(figsize=(9, 0.32 * len(names) + 1.4), layout="constrained")
    ax = fig.subplots()
    left = [0] * len(names)
    for i, (label, color) in enumerate(
        (
            ("agrees", "tab:green"),
            ("disagrees", PUBLISHED_COLOR),
            ("reference value withheld", "lightsteelblue"),
        )
    ):
        widths = [c[i] for c in counts]
        ax.barh(names, widths, left=left, color=color, label=label)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.invert_yaxis()
    ax.set(xlabel="published claims")
    fig.legend(loc="outside lower center", ncol=3)
    return _png(fig)


def scatter_figure(results: Sequence[ExperimentResult]) -> str:
    """Every compared point, simulated against published, coloured by paper
    (log scales, the tolerance as a band), as a base64 PNG."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 6.5), layout="constrained")
    ax = fig.subplots()
    lo, hi = float("inf"), 0.0
    colors = dict(
        zip(sorted(PAPERS), ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown"), strict=True)
    )
    for paper in sorted(PAPERS):
        for kind, marker in (("value", "o"), ("range", "s"), ("upper_bound", "v"), ("lower_bound", "^")):
            pts = [
                (_reference(row), row["simulated"])
                for r in results
                for row in r.comparison
                if row["paper"] == paper and row["kind"] == kind and row["published"] is not None
            ]
            # a log scale takes positive finite values (a ratio of a quick run can be infinite)
            pts = [(x, y) for x, y in pts if 0 < x < math.inf and 0 < y < math.inf]
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
            ax.scatter(
                xs,
                ys,
                s=14,
                marker=marker,
                color=colors[paper],
                alpha=0.7,
                label=f"{cite(paper)} ({kind.replace('_', ' ')})",
            )
    if hi > 0:
        span = [lo / 1.5, hi * 1.5]
        tol = TOLERANCE_PCT / 100
        ax.plot(span, span, color="black", linewidth=1)
        ax.fill_between(
            span, [x * (1 - tol) for x in span], [x * (1 + tol) for x in span], color="grey", alpha=0.2
        )
        ax.set(xscale="log", yscale="log", xlim=span, ylim=span)
    ax.set(xlabel="published value (its unit: ns, GB/s, ratio...)", ylabel="simulated value (same unit)")
    ax.grid(True, which="both", alpha=0.3)
    if hi > 0:
        ax.legend(fontsize=7, loc="upper left")
    return _png(fig)


def _reference(row: dict[str, Any]) -> float:
    """The published number a point is set against: a range's nearest end."""
    p = row["published"]
    if isinstance(p, list):
        return float(min(max(row["simulated"], p[0]), p[1]))
    return float(p)


# -- provenance ------------------------------------------------------------------------------


def provenance(
    results: Sequence[ExperimentResult],
    *,
    machine: str | None,
    seed: int,
    native: bool,
    command: str | None = None,
    started: _dt.datetime | None = None,
    overrides: Sequence[str] = (),
) -> dict[str, Any]:
    """Where the results come from: cellsim's version and git commit, the
    hashes of the machine files used, the model variants that ran, the
    command line, the host."""
    machines = sorted({machine} if machine else {r.experiment.machine for r in results})
    return {
        "overrides": list(overrides),
        "model": model_variants(machines, overrides),
        "version": __version__,
        "commit": _git_commit(),
        "command": command or shlex.join(["cellsim", *sys.argv[1:]]),
        "machine": machine or f"each experiment's own ({', '.join(machines)})",
        "machine_files": {m: _machine_hash(m) for m in machines},
        "seed": seed,
        "native": native,
        "host": f"{platform.node()} ({platform.platform()}, {os.cpu_count()} CPUs)",
        "python": platform.python_version(),
        "started": (started or _dt.datetime.now(_dt.UTC)).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "wall_s": 0.0,
    }


def model_variants(machines: Sequence[str], overrides: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The model variants the machines ran, one entry per variant and choice that ran (the
    machines that ran it listed): its status (sourced or inferred), its source or the visible
    statements it explains, and whether it is the machine file's default."""
    from ..spec import MachineSpec

    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for m in machines:
        for v in MachineSpec.of(m, overrides).variants:
            c = v.chosen
            row = rows.setdefault(
                (v.name, v.value),
                {
                    "name": v.name,
                    "key": v.key,
                    "choice": v.value,
                    "about": v.about,
                    "status": c.status,
                    "basis": plain(c.source) if c.status == "sourced" else ", ".join(c.explains),
                    "what": plain(" ".join(c.what.split())),
                    "default": v.is_default,
                    "machines": [],
                },
            )
            row["machines"].append(m)
            row["default"] = row["default"] and v.is_default
    return list(rows.values())


def _machine_hash(machine: str) -> str:
    from .. import machine_toml, machines

    text = machine_toml(machine) if machine in machines() else Path(machine).read_text(encoding="utf-8")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _git_commit() -> str | None:
    """The commit cellsim runs from: the checkout's (with ``-dirty`` for local
    changes) when it runs from one, else the one its engine was built from
    (an installed package: ``pip install .`` from a clone records it)."""
    from .. import _engine

    return _checkout_commit() or getattr(_engine, "COMMIT", "") or None


def _checkout_commit() -> str | None:
    """The commit of the git checkout cellsim's source is in, if any."""
    src = Path(__file__).resolve().parent
    try:
        p = subprocess.run(
            ["git", "-C", str(src), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return p.stdout.strip() or None


# -- the page --------------------------------------------------------------------------------


def _explanations(sections: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documentation sections the page's experiments cite, once each, with
    their text as HTML and the experiments that cite them."""
    out: dict[str, dict[str, Any]] = {}
    for s in sections:
        e = s["explanation"]
        if e is None or not e.markdown:
            continue
        entry = out.setdefault(
            e.key, {"id": e.href.lstrip("#"), "title": e.title, "html": e.html, "cited": []}
        )
        entry["cited"].append(s["name"])
    return list(out.values())


def _command(exp: Experiment, machine: str | None, seed: int, native: bool) -> str:
    """The ``cellsim run`` command that regenerates an experiment's section."""
    args = ["cellsim", "run", exp.name, "--machine", machine or exp.machine, "--seed", str(seed)]
    if not native:
        args.append("--python")
    return shlex.join([*args, "--json", f"{exp.name}.json", "--plot", f"{exp.name}.png"])


def _section(
    r: ExperimentResult, page_dir: Path, machine: str | None, seed: int, native: bool
) -> dict[str, Any]:
    exp = r.experiment
    cs = claims(r.comparison)
    rows = [_claim_row(c, exp.name, page_dir) for c in cs]
    png = r.files.get("png")
    return {
        "name": exp.name,
        "title": plain(exp.title),
        "description": plain(exp.description),
        "figure": exp.figure,
        "cite": cite(exp.paper),
        "citation": cite(exp.paper, full=True),
        "command": _command(exp, machine, seed, native),
        "png": base64.b64encode(Path(png).read_bytes()).decode("ascii") if png and Path(png).exists() else "",
        "claims": [row for row in rows if not row["withheld"]],
        "withheld": [row for row in rows if row["withheld"]],
        "explanation": explanation(exp.name),
        "tables": [
            {"title": plain(t.title), "columns": t.columns, "rows": t.rows}
            for t in (exp.tables(r.records) if exp.tables is not None and r.records else [])
        ],
        "files": [os.path.relpath(p, page_dir) for p in r.files.values()],
        "points": len(r.records),
        "agree": sum(1 for c in cs if c["within"]),
        "judged": sum(1 for c in cs if c["within"] is not None),
        "seconds": r.seconds,
    }


def write_html(
    path: str | Path,
    results: Sequence[ExperimentResult],
    *,
    machine: str | None,
    seed: int,
    native: bool,
    origin: dict[str, Any] | None = None,
) -> None:
    """Writes the self-contained HTML report (figures embedded as base64 PNG)
    from the Jinja2 template; ``machine`` None means each experiment ran on
    its own machine; ``origin`` is the run's :func:`provenance` (made here if not given)."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    page_dir = Path(path).resolve().parent
    rows = [row for r in results for row in r.comparison]
    every = claims(rows)
    prov = origin or provenance(results, machine=machine, seed=seed, native=native)
    env = Environment(
        loader=PackageLoader("cellsim", "templates"), autoescape=select_autoescape(["html", "j2"])
    )
    with figure_style():
        agreement, scatter = agreement_figure(results), scatter_figure(results)
    sections = [_section(r, page_dir, machine, seed, native) for r in results]
    html = env.get_template("report.html.j2").render(
        tolerance=f"{TOLERANCE_PCT:g}",
        summary={
            "agree": sum(1 for c in every if c["within"]),
            "judged": sum(1 for c in every if c["within"] is not None),
            "withheld": sum(1 for c in every if c["within"] is None),
            "points_agree": sum(1 for r in rows if r["within"]),
            "points_judged": sum(1 for r in rows if r["within"] is not None),
        },
        agreement_png=agreement,
        scatter_png=scatter,
        provenance=prov,
        sections=sections,
        explanations=_explanations(sections),
        withheld_note=WITHHELD_NOTE,
        papers=[PAPERS[k].citation() for k in sorted(PAPERS)],
    )
    Path(path).write_text(html, encoding="utf-8")
