"""``cellsim reproduce``: run every experiment and write the results and a report.

For each experiment ``<name>`` the output directory gets ``<name>.json`` (the
records), ``<name>.parquet`` (the same, as a table), ``<name>.png`` (the
figure) and ``<name>.compare.json`` (published vs simulated); ``report.html``
is a self-contained page with every figure and comparison table.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .experiments import Experiment, all_experiments
from .published import TOLERANCE_PCT

__all__ = ["ExperimentResult", "format_published", "format_simulated", "reproduce", "verdict", "write_html"]


@dataclass
class ExperimentResult:
    """What ``reproduce`` produced for one experiment."""

    experiment: Experiment
    records: list[dict[str, Any]]
    comparison: list[dict[str, Any]]
    seconds: float
    files: dict[str, Path] = field(default_factory=dict)


def reproduce(
    out: str | Path,
    *,
    machine: str | None = None,
    seed: int = 0,
    native: bool = True,
    experiments: Sequence[Experiment] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[ExperimentResult]:
    """Runs ``experiments`` (default: all) and writes their files and
    ``report.html`` into ``out``. ``machine`` (default: each experiment's own,
    ``Experiment.machine``) is used for every experiment. ``progress(name,
    done, total)`` follows the points of each experiment."""
    import pandas as pd

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for exp in experiments if experiments is not None else all_experiments():
        cb = None if progress is None else (lambda d, t, _n=exp.name: progress(_n, d, t))
        t0 = time.perf_counter()
        records = exp.run(machine=machine or exp.machine, seed=seed, native=native, progress=cb)
        seconds = time.perf_counter() - t0
        comparison = exp.compare(records)
        res = ExperimentResult(exp, records, comparison, seconds)
        res.files["json"] = out / f"{exp.name}.json"
        res.files["json"].write_text(json.dumps(records, indent=1) + "\n")
        res.files["parquet"] = out / f"{exp.name}.parquet"
        pd.DataFrame.from_records(records).to_parquet(res.files["parquet"], index=False)
        res.files["png"] = out / f"{exp.name}.png"
        exp.plot(records, res.files["png"])
        res.files["compare"] = out / f"{exp.name}.compare.json"
        res.files["compare"].write_text(json.dumps(comparison, indent=1) + "\n")
        results.append(res)
    write_html(out / "report.html", results, machine=machine, seed=seed, native=native)
    return results


def format_published(row: dict[str, Any]) -> str:
    """The published column of a comparison row."""
    return str(row["published_text"])


def format_simulated(row: dict[str, Any]) -> str:
    """The simulated column of a comparison row, with its unit."""
    v = row["simulated"]
    return f"{v:.2f} {row['unit']}" if row["unit"] != "x" else f"{v:.2f}x"


def format_error(row: dict[str, Any]) -> str:
    """The error column: signed % (relative to the value, bound, or nearest range end)."""
    return "" if row["error_pct"] is None else f"{row['error_pct']:+.1f}%"


def verdict(row: dict[str, Any]) -> str:
    """``yes``/``NO`` (within the tolerance), ``holds``/``VIOLATED`` (bounds), ``held out``."""
    if row["held_out"] or row["within"] is None:
        return "withheld"
    if row["kind"] == "upper_bound":
        return "holds" if row["within"] else "VIOLATED"
    return "yes" if row["within"] else "NO"


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.bad td { background: #fde8e8; }
tr.heldout td { background: #eef3fb; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
img { max-width: 100%; border: 1px solid #ddd; }
.meta { color: #666; font-size: 0.9em; }
"""


def write_html(
    path: str | Path, results: Sequence[ExperimentResult], *, machine: str | None, seed: int, native: bool
) -> None:
    """Writes a self-contained HTML report (figures embedded as base64 PNG);
    ``machine`` None means each experiment ran on its own machine."""
    e = html.escape
    if machine is None:
        own = sorted({r.experiment.machine for r in results})
        machine = f"each experiment's own ({', '.join(own)})"
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>cellsim {e(__version__)}: reproduction report</title><style>{_CSS}</style></head><body>",
        "<h1>cellsim: simulated vs published</h1>",
        f"<p class='meta'>cellsim {e(__version__)}, machine <b>{e(machine)}</b>, seed {seed}, "
        f"{'native' if native else 'Python'} benchmark programs, "
        f"Python {e(platform.python_version())}, {now}. "
        f"A simulated value agrees if it is within {TOLERANCE_PCT:g}% of a published value or range, "
        "or at most an upper bound. Held-out results are shown as simulated only.</p>",
        "<h2>Summary</h2><table><tr><th>experiment</th><th>paper / figure</th><th>points</th>"
        "<th>agree</th><th>run time</th></tr>",
    ]
    for r in results:
        judged = [row for row in r.comparison if row["within"] is not None]
        ok = sum(1 for row in judged if row["within"])
        parts.append(
            f"<tr><td><a href='#{e(r.experiment.name)}'>{e(r.experiment.name)}</a></td>"
            f"<td>seed {e(r.experiment.paper)}, {e(r.experiment.figure)}</td>"
            f"<td class='num'>{len(r.records)}</td>"
            f"<td class='num'>{ok} / {len(judged)}</td><td class='num'>{r.seconds:.1f} s</td></tr>"
        )
    parts.append("</table>")
    for r in results:
        exp = r.experiment
        png = r.files.get("png")
        parts.append(f"<h2 id='{e(exp.name)}'>{e(exp.name)}: {e(exp.title)}</h2>")
        parts.append(f"<p>Seed {e(exp.paper)}, {e(exp.figure)}. {e(exp.description)}</p>")
        if png is not None and Path(png).exists():
            b64 = base64.b64encode(Path(png).read_bytes()).decode("ascii")
            parts.append(f"<img alt='{e(exp.name)}' src='data:image/png;base64,{b64}'>")
        parts.append(
            "<table><tr><th>figure</th><th>published result</th><th>point</th><th>published</th>"
            "<th>simulated</th><th>error</th><th>agrees</th><th>note</th></tr>"
        )
        for row in r.comparison:
            cls = "heldout" if row["held_out"] else ("bad" if row["within"] is False else "")
            parts.append(
                f"<tr class='{cls}'><td>{e(row['figure'])}</td><td>{e(row['description'])}<br>"
                f"<small>{e(row['id'])}</small></td><td>{e(row['point'])}</td>"
                f"<td class='num'>{e(format_published(row))}</td>"
                f"<td class='num'>{e(format_simulated(row))}</td>"
                f"<td class='num'>{e(format_error(row))}</td><td>{e(verdict(row))}</td>"
                f"<td><small>{e(row['note'])}</small></td></tr>"
            )
        parts.append("</table>")
        if exp.tables is not None and r.records:
            # the experiment's own tables of its points (as `cellsim run` prints them)
            for tab in exp.tables(r.records):
                head = "".join(f"<th>{e(c)}</th>" for c in tab.columns)
                parts.append(f"<table><caption>{e(tab.title)}</caption><tr>{head}</tr>")
                for cells in tab.rows:
                    tds = "".join(
                        (f"<td>{e(c)}</td>" if i == 0 else f"<td class='num'>{e(c)}</td>")
                        for i, c in enumerate(cells)
                    )
                    parts.append(f"<tr>{tds}</tr>")
                parts.append("</table>")
        files = ", ".join(f"<code>{e(p.name)}</code>" for k, p in r.files.items() if k != "png")
        parts.append(f"<p class='meta'>Data: {files}.</p>")
    parts.append("</body></html>\n")
    Path(path).write_text("\n".join(parts), encoding="utf-8")
