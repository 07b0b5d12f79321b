"""The ``cellsim validate`` command: the scoreboard of :mod:`cellsim.validate` on the console,
as JSON and as a figure."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from .. import published as pub
from ..limits import COUNT, SEED
from ..validate import (
    DEFAULT,
    Fit,
    Scoreboard,
    Setting,
    fit_on_half,
    load_grid,
    ranking,
    select,
    shipped_grids,
    validate,
    withheld,
)
from ._outputs import check_output, check_plot
from .console import console

__all__ = ["validate_cmd"]


def _statement_lines(boards: Sequence[Scoreboard]) -> dict[str, list[list[Any]]]:
    """Per paper: one line per published entry, its rows under each setting."""
    by_id: dict[str, dict[str, list[Any]]] = {}
    for b in boards:
        for r in b.rows:
            by_id.setdefault(r.id, {}).setdefault(b.setting.label, []).append(r)
    out: dict[str, list[list[Any]]] = {}
    for entry in pub.PUBLISHED:
        if entry.id in by_id:
            out.setdefault(entry.paper, []).append([entry, by_id[entry.id]])
    return out


def _cell(rows: Sequence[Any]) -> tuple[str, bool]:
    """``held/points`` and, for one point, the simulated value; whether all hold."""
    held = sum(r.holds for r in rows)
    ok = held == len(rows)
    if len(rows) == 1:
        r = rows[0]
        return (f"{'yes' if ok else 'NO'} {r.simulated:.4g}", ok)
    worst = max(rows, key=lambda r: (not r.holds, abs(r.error_pct or 0.0)))
    return (f"{held}/{len(rows)}" + ("" if ok else f" (worst {worst.simulated:.4g})"), ok)


def _paper_table(paper: str, lines: list[list[Any]], boards: Sequence[Scoreboard], failing: bool) -> Table:
    what = "the values failing under some setting" if failing else "every visible value"
    t = Table(title=f"{pub.cite(paper)}: {what}", title_justify="left")
    t.add_column("published value (id)", overflow="fold")
    t.add_column("role / half")
    t.add_column("published", justify="right")
    for b in boards:
        t.add_column(b.setting.label if len(boards) > 1 else "holds / simulated", justify="right")
    t.add_column("mechanisms (variant=choice)", overflow="fold")
    for entry, per in lines:
        cells = [
            _cell(per.get(b.setting.label, [])) if per.get(b.setting.label) else ("-", True) for b in boards
        ]
        if failing and all(ok for _, ok in cells):
            continue
        mech = next((r.mechanisms for rows in per.values() for r in rows), ())
        differ = len({ok for _, ok in cells}) > 1
        t.add_row(
            f"{entry.description} ({entry.id})",
            f"{'cal' if entry.role == 'calibration' else 'stmt'} / {entry.half}",
            entry.text(),
            *(f"[bold red]{c}[/]" if not ok else (f"[green]{c}[/]" if differ else c) for c, ok in cells),
            ", ".join(mech),
        )
    return t


def _ranking_table(rank: list[dict[str, Any]]) -> Table:
    t = Table(title="settings ranked: statements held, then calibration values held, then calibration error")
    for col in (
        "rank",
        "setting",
        "statements",
        "calibration",
        "fit half",
        "check half",
        "cal. error",
        "host s",
    ):
        t.add_column(col, justify="left" if col == "setting" else "right", overflow="fold")
    for r in rank:
        t.add_row(
            str(r["rank"]),
            r["setting"],
            f"{r['statements_held']}/{r['statements']}",
            f"{r['calibrations_held']}/{r['calibrations']}",
            f"{r['fit_held']}/{r['fit']}",
            f"{r['check_held']}/{r['check']}",
            "-" if math.isnan(r["calibration_error_pct"]) else f"{r['calibration_error_pct']:.1f}%",
            f"{r['seconds']:.0f}",
        )
    return t


def _totals(b: Scoreboard) -> str:
    held, judged = b.held()
    (s_held, s_all), (c_held, c_all) = b.held("statement"), b.held("calibration")
    (f_held, f_all), (k_held, k_all) = b.held(half="fit"), b.held(half="check")
    return (
        f"{b.setting.label}: {held} of {judged} visible values hold ({s_held}/{s_all} statements, "
        f"{c_held}/{c_all} calibration values; fit half {f_held}/{f_all}, check half {k_held}/{k_all})"
    )


def _markdown(boards: Sequence[Scoreboard], command: str, totals: list[str], fit: str | None) -> str:
    """The scoreboard as Markdown, per paper (docs/scoreboard.md is one)."""
    from .. import __version__

    out = [
        "# Scoreboard: every visible published value",
        "",
        f"Written by `{command}` (cellsim {__version__}); rerun it to bring this page up to date.",
        "A cell is `yes`/`NO` and the simulated value for one point, or `held/points` (and the",
        "worst point's simulated value) for a value compared at several points.",
        "",
        *(f"- {line}" for line in totals),
        *([f"- {fit}"] if fit else []),
    ]
    papers = _statement_lines(boards)
    failing = [
        (paper, entry) for paper, lines in papers.items() for entry, per in lines if _fails(per, boards)
    ]
    if failing:
        out += ["", "## Failing under some setting", ""]
        out += [f"- {pub.cite(paper)}: {entry.description} (`{entry.id}`)" for paper, entry in failing]
    for paper, lines in papers.items():
        heads = [b.setting.label if len(boards) > 1 else "holds / simulated" for b in boards]
        held = ", ".join(f"{b.setting.label} {_paper_held(b, paper)}" for b in boards)
        out += ["", f"## {pub.cite(paper)}", "", f"Values that hold: {held}.", ""]
        out.append(
            "| published value (id) | role / half | published | " + " | ".join(heads) + " | mechanisms |"
        )
        out.append("|---|---|---|" + "---|" * len(heads) + "---|")
        for entry, per in lines:
            cells = [_cell(per[b.setting.label])[0] if per.get(b.setting.label) else "-" for b in boards]
            mech = next((r.mechanisms for rows in per.values() for r in rows), ())
            role = "cal" if entry.role == "calibration" else "stmt"
            text = [f"{entry.description} (`{entry.id}`)", f"{role} / {entry.half}", entry.text(), *cells]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in text) + f" | {', '.join(mech)} |")
    return "\n".join(out) + "\n"


def _fails(per: dict[str, list[Any]], boards: Sequence[Scoreboard]) -> bool:
    """Whether a published value fails at some point under some setting."""
    return any(not r.holds for b in boards for r in per.get(b.setting.label, []))


def _paper_held(b: Scoreboard, paper: str) -> str:
    rows = [r for r in b.rows if r.paper == paper]
    return f"{sum(r.holds for r in rows)} of {len(rows)}"


def _fit_line(fit: Fit) -> str:
    f = fit.summary()
    if fit.chosen is fit.default:
        return (
            f"fitted on the fit half: the default ({f['fit_held']}/{f['fit']}); no setting holds more of it, "
            f"so the check half ({f['check_held']}/{f['check']}) has nothing to confirm"
        )
    verdict = "confirmed" if fit.confirmed else "not confirmed"
    return (
        f"fitted on the fit half: {f['setting']} ({f['fit_held']}/{f['fit']}, the default "
        f"{f['default_fit_held']}); on the check half it holds {f['check_held']}/{f['check']} against the "
        f"default's {f['default_check_held']}: {verdict}"
    )


def _plot(rank: list[dict[str, Any]], path: str) -> None:
    from ..style import figure_style

    with figure_style():
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 0.45 * len(rank) + 1.6))
        labels = [r["setting"] for r in rank][::-1]
        stmts = [r["statements_held"] / max(r["statements"], 1) for r in rank][::-1]
        cals = [r["calibrations_held"] / max(r["calibrations"], 1) for r in rank][::-1]
        y = range(len(rank))
        ax.barh([i + 0.2 for i in y], stmts, height=0.4, label="statements held")
        ax.barh([i - 0.2 for i in y], cals, height=0.4, label="calibration values held")
        ax.set_yticks(list(y), labels)
        ax.set(xlim=(0, 1), xlabel="fraction of the visible published values that hold")
        ax.legend(loc="lower right")
        ax.set_title("cellsim validate: settings ranked (best at the top)")
        fig.savefig(path, bbox_inches="tight")
        plt.close(fig)


def _list_statements() -> None:

    con = console()
    experiments, _ = select(())
    names = {e.name for e in experiments}
    t = Table(
        title="visible published values (cellsim validate --only ID, or a prefix, a paper, an experiment)"
    )
    for col in ("id", "paper", "experiment", "role", "half", "published", "description"):
        t.add_column(col, overflow="fold")
    for e in pub.entries(held_out=False):
        if e.experiment in names:
            t.add_row(e.id, pub.cite(e.paper), e.experiment, e.role, str(e.half), e.text(), e.description)
    con.print(t)


def _list_grids() -> None:

    con = console()
    t = Table(title="hypothesis grids (cellsim validate --grid NAME)")
    for col in ("name", "settings", "only", "about"):
        t.add_column(col, overflow="fold")
    for name, g in shipped_grids().items():
        t.add_row(name, str(len(g.settings)), " ".join(g.only) or "every value", g.about)
    con.print(t)


@click.command("validate")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="a machine setting for every experiment's machine (repeat it; a variant's choice, e.g. "
    "eib.recv_switch_bus_cycles=0, or a parameter; blade21:KEY=VALUE changes only that shipped "
    "machine): scored beside the default",
)
@click.option(
    "--grid",
    "grid_path",
    metavar="FILE|NAME",
    help="a TOML file of settings to score side by side: [axes] KEY = [values, ...] (every "
    'combination) and/or [[setting]] overrides = ["KEY=VALUE", ...], label = "..."; the default is '
    "always scored too. NAME: a hypothesis grid cellsim ships (--list-grids), which also says "
    "which values it scores (its only = [...], unless --only is given)",
)
@click.option(
    "--only",
    multiple=True,
    metavar="WHAT",
    help="only these values: a paper (000 or Kistler), an experiment (hotspot) or a statement id or id "
    "prefix (000-f6b); repeat for several",
)
@click.option("--full", is_flag=True, help="run cellsim reproduce's paper-scale sizes (much longer)")
@click.option("--seed", "-s", type=SEED, default=0, show_default=True, help="seed of the machines")
@click.option("--workers", type=COUNT, default=None, help="local worker processes (default: all cores)")
@click.option("--cluster", default=None, help="address of a Dask scheduler to run on (tcp://host:8786)")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Parquet dataset of the finished points (with --resume, run only what it lacks)",
)
@click.option("--resume", is_flag=True, help="keep the points already in --out and run only the others")
@click.option("--json", "json_path", metavar="PATH|-", help="write the scoreboards and the ranking as JSON")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="the ranking as a figure")
@click.option("--failing", is_flag=True, help="show only the values that fail under some setting")
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False),
    help="write the scoreboard as a Markdown page, per paper (docs/scoreboard.md is one)",
)
@click.option("--list", "list_only", is_flag=True, help="list the visible published values and exit")
@click.option(
    "--list-grids", is_flag=True, help="list the hypothesis grids cellsim ships (for --grid NAME) and exit"
)
def validate_cmd(
    overrides: tuple[str, ...],
    grid_path: str | None,
    only: tuple[str, ...],
    full: bool,
    seed: int,
    workers: int | None,
    cluster: str | None,
    out: str | None,
    resume: bool,
    json_path: str | None,
    plot_path: str | None,
    failing: bool,
    markdown_path: str | None,
    list_only: bool,
    list_grids: bool,
) -> None:
    """Score the model on every visible published value: each experiment at the smallest sizes
    where it still measures what its paper measured (--full: the paper-scale sizes of cellsim
    reproduce), one line per published value with the mechanisms that claim to explain it.
    --set and --grid score model variants side by side and rank them. Withheld values are
    never used."""
    from .progress import RunProgress

    if list_only:
        _list_statements()
        return
    if list_grids:
        _list_grids()
        return
    if resume and out is None:
        raise click.UsageError("--resume needs --out (the dataset to resume)")
    if json_path != "-":
        check_output(json_path, "--json")
    check_plot(plot_path)
    check_output(markdown_path, "--markdown")
    settings: list[Setting] = [DEFAULT]
    if grid_path:
        grid = load_grid(grid_path)
        settings = list(grid.settings)
        if grid.only and not only:
            only = grid.only
            console(stderr=True).print(f"grid {grid.name}: only {' '.join(only)} (its only = [...])")
    if overrides:
        settings.append(Setting.of(overrides))
    settings = list(dict.fromkeys(settings))
    experiments, _ = select(only)
    err = console(stderr=True)
    size = "cellsim reproduce's sizes" if full else "validation sizes (--full: cellsim reproduce's)"
    err.print(
        f"cellsim validate: {len(experiments)} experiments at {size}, {len(settings)} setting"
        f"{'s' if len(settings) > 1 else ''}"
    )
    t0 = time.perf_counter()
    with RunProgress("validate") as progress:
        boards = validate(
            settings,
            only=only,
            full=full,
            seed=seed,
            workers=workers,
            cluster=cluster,
            out=out,
            resume=resume,
            progress=progress,
        )
    seconds = time.perf_counter() - t0
    rank = ranking(boards)
    fit = fit_on_half(boards) if len(boards) > 1 else None
    hidden = withheld(only)
    doc = {
        "full": full,
        "seed": seed,
        "only": list(only),
        "seconds": seconds,
        "ranking": rank,
        "fit": fit.summary() if fit else None,
        "withheld": hidden,
        "rows": [vars(r) | {"mechanisms": list(r.mechanisms)} for b in boards for r in b.rows],
    }
    if json_path == "-":
        click.echo(json.dumps(doc, indent=1, default=str))
        return
    con = console()
    for paper, lines in _statement_lines(boards).items():
        con.print(_paper_table(paper, lines, boards, failing))
    con.print(_ranking_table(rank))
    totals = [_totals(b) for b in boards]
    for line in totals:
        con.print(line)
    fit_line = _fit_line(fit) if fit else None
    if fit_line:
        con.print(fit_line)
    if hidden:
        con.print(
            "withheld, kept to judge the model and never scored: "
            + ", ".join(f"{pub.PAPERS[k].short} ({k}) {n}" for k, n in hidden.items())
        )
    con.print(f"validated in {seconds:.0f} s")
    if json_path:
        Path(json_path).write_text(json.dumps(doc, indent=1, default=str) + "\n")
        err.print(f"wrote {json_path}")
    if plot_path:
        _plot(rank, plot_path)
        err.print(f"wrote {plot_path}")
    if markdown_path:
        # what decides the values, not where they were written or on how many cores
        words = ["cellsim validate", *(["--full"] if full else []), *(f"--only {o}" for o in only)]
        words += [f"--set {o}" for o in overrides] + ([f"--grid {grid_path}"] if grid_path else [])
        words += [f"--seed {seed}"] if seed else []
        Path(markdown_path).write_text(_markdown(boards, " ".join(words), totals, fit_line))
        err.print(f"wrote {markdown_path}")
