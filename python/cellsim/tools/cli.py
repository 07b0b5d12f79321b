"""The ``cellsim`` command line.

::

    cellsim run dma-latency [--machine M] [--seed N] [--json PATH|-] [--plot PATH] [--csv PATH] [--python]
    cellsim reproduce [--out DIR] [--machine M] [--seed N] [--python]
    cellsim plan-buffers --c-inner NS --c-outer NS --bytes-per-iter B --budget BYTES [--machine M] [--json]
    cellsim cc PPU.c --spu NAME=SPU.c -o APP     (C programs on the SDK headers)
    cellsim exec APP [--machine M] [--seed N] [--trace T] [-- ARGS]
    cellsim machines
    cellsim machine show NAME
    cellsim errors
    cellsim bench ...

Errors that a user can cause (a ``CellsimError``, a bad command line) print
one line ``error: ...`` on stderr; the exit status is 2 for a bad command
line or bad input, 1 for a run that failed and 130 after Ctrl-C.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
from rich.table import Table

import cellsim

from ..buffering.cli import plan_buffers
from ..c.cli import cc_cmd, exec_cmd, make_cmd
from ..dmacheck import check_dma_default
from ..exceptions import CellsimError, CompileError, ConfigError, UsageError
from ..experiments import Experiment, Option, all_experiments
from ..limits import COUNT, SEED, command_limits, limit_params, run_options
from ..messaging.cli import map_cmd
from ..mpi.cli import mpirun_cmd
from ..published import PAPERS, TOLERANCE_PCT, WITHHELD_NOTE, cite, plain
from ..spec import MachineSpec, variants_markdown
from ..style import figure_style
from ..sweep import SweepInterrupted
from ..trace import DEFAULT_LIMIT, Capture
from ..trace import capture as capture_trace
from ._outputs import check_output, check_plot, require_report
from .console import console
from .progress import RunProgress
from .report import format_error, format_published, format_simulated, verdict
from .validate_cli import validate_cmd

__all__ = ["cli", "main"]


def _one_line(msg: object) -> str:
    return " ".join(str(msg).split())


# -- tables ----------------------------------------------------------------------------


def _experiment_tables(exp: Experiment, records: Sequence[dict[str, Any]]) -> list[Table]:
    """The experiment's own tables of its records, or :func:`_records_table`."""
    if exp.tables is None:
        return [_records_table(exp, records)]
    out = []
    for tab in exp.tables(records):
        t = Table(title=plain(tab.title))
        for i, col in enumerate(tab.columns):
            t.add_column(col, justify="left" if i == 0 else "right")
        for row in tab.rows:
            t.add_row(*row)
        out.append(t)
    return out


def _records_table(exp: Experiment, records: Sequence[dict[str, Any]]) -> Table:
    """The measured points; with several batch sizes, bandwidth by batch (one column each)."""
    batches = sorted({r["batch"] for r in records if "batch" in r}, key=lambda b: 1 << 30 if b == 0 else b)
    if len(batches) > 1:
        t = Table(title=f"{exp.name}: bandwidth (GB/s) by batch size, {records[0]['machine']}")
        for col in ("target", "op", "size (B)"):
            t.add_column(col, justify="right" if col == "size (B)" else "left")
        for b in batches:
            t.add_column("nonblocking" if b == 0 else "blocking" if b == 1 else f"batch {b}", justify="right")
        bw = {(r["target"], r["op"], r["size"], r["batch"]): r["bandwidth_gbs"] for r in records}
        keys = sorted(
            {(r["target"], r["op"], r["size"]) for r in records}, key=lambda k: (k[0] != "memory", k)
        )
        for tgt, op, size in keys:
            cells = [f"{bw[(tgt, op, size, b)]:.2f}" if (tgt, op, size, b) in bw else "" for b in batches]
            t.add_row(tgt, op, str(size), *cells)
        return t
    t = Table(title=f"{exp.name}: {exp.title}, {records[0]['machine'] if records else ''}")
    cols = [("target", "target"), ("op", "op"), ("size", "size (B)")]
    if batches:
        cols.append(("batch", "batch"))
    cols += [("count", "DMAs"), ("latency_ns", "time per DMA (ns)"), ("bandwidth_gbs", "bandwidth (GB/s)")]
    for key, head in cols:
        t.add_column(head, justify="left" if key in ("target", "op") else "right")
    for r in records:
        t.add_row(*(f"{r[k]:.2f}" if isinstance(r[k], float) else str(r[k]) for k, _ in cols))
    return t


def _comparison_table(title: str, rows: Sequence[dict[str, Any]]) -> Table:
    t = Table(title=title)
    for head, just in (
        ("published result", "left"),
        ("figure", "left"),
        ("point", "left"),
        ("published", "right"),
        ("simulated", "right"),
        ("error", "right"),
        (f"within {TOLERANCE_PCT:g}%", "left"),
    ):
        t.add_column(head, justify=just)  # type: ignore[arg-type]
    for row in rows:
        v = verdict(row)
        style = "bold red" if v in ("NO", "VIOLATED") else None
        t.add_row(
            row["id"],
            row["figure"],
            row["point"],
            format_published(row),
            format_simulated(row),
            format_error(row),
            v,
            style=style,
        )
    return t


def _id_key(rows: Sequence[dict[str, Any]]) -> str:
    """The one line that reads the tables' result ids: ``<paper>-<figure>-<what>``, each paper's key."""
    keys = sorted({str(r["paper"]) for r in rows if r.get("paper") in PAPERS})
    papers = ", ".join(f"{k} {cite(k)}" for k in keys)
    return f"note: a published result's id is <paper>-<figure>-<what> ({papers}; f4a: Figure 4a, t1: Table 1)"


def _summary(rows: Sequence[dict[str, Any]]) -> str:
    judged = [r for r in rows if r["within"] is not None]
    ok = sum(1 for r in judged if r["within"])
    return f"{ok} of {len(judged)} published values reproduced (within {TOLERANCE_PCT:g}%, or bound holds)"


# -- the command groups -----------------------------------------------------------------


EXIT_ERROR = 1
"""Exit status of a run that failed (a ``CellsimError``, a file that cannot be written)."""
EXIT_USAGE = 2
"""Exit status of a bad command line or bad input (click's convention)."""
EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT, the shells' convention)."""


def exit_status(e: BaseException) -> int:
    """The exit status of a command that ended with ``e``, with its one line on stderr."""
    if isinstance(e, SweepInterrupted):  # it says what it kept
        click.echo(_one_line(e), err=True)
        return EXIT_INTERRUPTED
    if isinstance(e, (click.Abort, KeyboardInterrupt)):  # click turns Ctrl-C into Abort
        click.echo("interrupted (Ctrl-C)", err=True)
        return EXIT_INTERRUPTED
    if isinstance(e, click.ClickException):
        click.echo(f"error: {_one_line(e.format_message())}", err=True)
        return EXIT_USAGE if isinstance(e, click.UsageError) else EXIT_ERROR
    if isinstance(e, CompileError):  # the compiler's words, whole, as cc prints them
        click.echo(f"error: {_one_line(e.headline)}", err=True)
        if e.diagnostics:
            click.echo(e.diagnostics, err=True)
    else:
        click.echo(f"error: {_one_line(e)}", err=True)
    # a bad value or a bad machine (name, file, override) came from the command line
    return EXIT_USAGE if isinstance(e, (UsageError, ConfigError)) else EXIT_ERROR


class CellsimGroup(click.Group):
    """The top-level group: turns user errors into one ``error:`` line and an
    exit status: 1 for a failed run, 2 for a bad command line, 130 for Ctrl-C."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        code = 0
        from .record import _INVOKED

        _INVOKED[:] = [list(args) if args is not None else sys.argv[1:]]
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            if isinstance(rv, int):
                code = rv
        except click.exceptions.NoArgsIsHelpError as e:
            click.echo(e.ctx.get_help() if e.ctx else "")
        except BrokenPipeError:
            # stdout closed early (`cellsim run ... --json - | head`): not worth a
            # traceback; point stdout at /dev/null so the flush at exit is quiet
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = EXIT_ERROR
        except (click.ClickException, click.Abort, KeyboardInterrupt, CellsimError, OSError) as e:
            # OSError: an output file that cannot be written
            code = exit_status(e)
        if standalone_mode:
            sys.exit(code)
        return code


@click.group(cls=CellsimGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    cellsim.__version__,
    prog_name="cellsim",
    message=f"%(prog)s, version %(version)s (engine build: {cellsim._engine.BUILD})",
)
def cli() -> None:
    """cellsim: a cycle-level simulator of the Cell Broadband Engine's communication system.

    Run the experiments that reproduce the published measurements, compare them with
    the published values, and inspect the simulated machines.
    """


class _RunGroup(click.Group):
    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            known = ", ".join(self.list_commands(ctx))
            raise click.UsageError(f"unknown experiment {name!r}: known experiments are {known}", ctx)
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # registration order, the papers' order


@cli.group(cls=_RunGroup)
def run() -> None:
    """Run one experiment, print its points and compare them with the published values."""


def _parse_ints(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...]:
    if value is None or value == "":
        return ()
    try:
        return tuple(int(v, 0) for v in value.replace(" ", "").split(",") if v)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of integers") from None


def _option_param(opt: Option) -> click.Option:
    if opt.type == "choice":
        return click.Option(
            [opt.cli_flag, opt.name], type=click.Choice(list(opt.choices)), multiple=True, help=opt.described
        )
    if opt.type == "ints":
        return click.Option(
            [opt.cli_flag, opt.name], type=str, callback=_parse_ints, help=opt.described, metavar="N,N,..."
        )
    if opt.type == "float":
        return click.Option(
            [opt.cli_flag, opt.name],
            type=click.FloatRange(min=0, min_open=True),
            default=None,
            help=opt.described,
            metavar="NUMBER",
        )
    if opt.type == "str":
        return click.Option([opt.cli_flag, opt.name], type=str, default=None, help=opt.described)
    if opt.type == "flag":
        return click.Option([opt.cli_flag, opt.name], is_flag=True, default=False, help=opt.described)
    return click.Option([opt.cli_flag, opt.name], type=COUNT, default=None, help=opt.described)


def _common_params() -> list[click.Parameter]:
    return [
        click.Option(
            ["--machine", "-m"],
            default=None,
            help="machine name (see `cellsim machines`) or machine TOML file "
            "(default: the paper's machine: qs20-1chip for Kistler et al.'s evaluation board, qs20 for "
            "Kumar et al. and Chen et al., blade21 for Jimenez-Gonzalez et al., ps3 or qs22 for the "
            "ring mapping study)",
        ),
        click.Option(["--seed", "-s"], type=SEED, default=0, show_default=True, help="seed of the machines"),
        click.Option(
            ["--set", "overrides"],
            multiple=True,
            metavar="KEY=VALUE",
            help="change a machine setting (repeat it): a model variant's choice or a parameter, e.g. "
            "--set eib.recv_switch_bus_cycles=0 (cellsim machine variants lists the variants)",
        ),
        click.Option(
            ["--json", "json_path"],
            metavar="PATH|-",
            help="write the points as a JSON array to PATH ('-': stdout, and nothing else on stdout)",
        ),
        click.Option(
            ["--plot", "plot_path"], type=click.Path(dir_okay=False), help="write the figure (PNG, SVG, PDF)"
        ),
        click.Option(["--csv", "csv_path"], type=click.Path(dir_okay=False), help="write the points as CSV"),
        click.Option(
            ["--trace", "trace_path"],
            type=click.Path(dir_okay=False),
            help="write a Chrome/Perfetto trace of the first simulated run (open it at https://ui.perfetto.dev)",
        ),
        click.Option(
            ["--python", "python_programs"],
            is_flag=True,
            help="run the Python benchmark programs instead of the native kernels (slower, same timing)",
        ),
        click.Option(
            ["--check-dma", "check_dma"],
            is_flag=True,
            help="stop a benchmark program (Python, C or native) at a DMA race (a local-store range used "
            "while a DMA moves it, overlapping DMAs without a fence or barrier); the papers' DMA benchmarks "
            "rewrite one buffer on purpose and are reported",
        ),
        click.Option(
            ["--exact-reference", "exact_reference"],
            is_flag=True,
            help="simulate every bus transfer event by event, without the engine's fast-forward of "
            "steady states (identical results, slower: the reference it is tested against)",
        ),
    ]


def _traced(path: str, stats: Any) -> str:
    """What ``--trace`` wrote: nothing, or no records, when the simulations ran
    in a sweep's worker processes (only this process's first machine is traced)."""
    if stats is None or stats.records == 0:
        return (
            f"note: {path} holds no records: the simulations ran in the sweep's worker processes "
            "(--workers 1 traces the first one)"
        )
    dropped = f", {stats.dropped:,} dropped past the limit" if stats.dropped else ""
    return f"wrote {path}: {stats.records:,} records{dropped} (open it at https://ui.perfetto.dev)"


def _check_machine(machine: str, overrides: Sequence[str] = ()) -> None:
    """Fails early, with the engine's message, on an unknown machine, a bad file or a bad override."""
    MachineSpec.of(machine, overrides).toml  # noqa: B018


def _record_param(exp: Experiment | None) -> click.Option:
    """``--out DIR`` (``--record DIR``; only that where the experiment has an ``--out`` of its own)."""
    flags = ["--record"] if exp is not None and any(o.cli_flag == "--out" for o in exp.options) else ["--out"]
    flags = [*flags, "--record"] if flags == ["--out"] else flags
    return click.Option(
        [*dict.fromkeys(flags), "record_dir"],
        type=click.Path(file_okay=False),
        default=None,
        help="write a record of the run into DIR: run.json (command, seed, machine, version), machine.toml "
        "(the machine as it ran) and records.json; compare two with `cellsim diff`",
    )


def _make_run_command(exp: Experiment) -> click.Command:
    def callback(
        record_dir: str | None,
        machine: str | None,
        seed: int,
        overrides: tuple[str, ...],
        json_path: str | None,
        plot_path: str | None,
        csv_path: str | None,
        trace_path: str | None,
        python_programs: bool,
        check_dma: bool,
        exact_reference: bool,
        time_limit: float | None,
        wall_limit: float | None,
        **options: Any,
    ) -> None:
        machine = machine or exp.machine
        _check_machine(machine, overrides)
        for path, option in ((json_path, "--json"), (csv_path, "--csv"), (trace_path, "--trace")):
            check_output(path, option)
        check_plot(plot_path)
        opts = {k: v for k, v in options.items() if v not in (None, ())}
        trace = Capture(trace_path) if trace_path else None
        run_opts = run_options(time_limit, exact_reference=exact_reference, trace=trace, check_dma=check_dma)
        # --check-dma reaches the machines an experiment builds from its spec (in a sweep's workers
        # too) as a run option, and those built from a name (the buffering planner's) as the
        # process's default
        with command_limits(wall_limit), check_dma_default(check_dma):
            try:
                with RunProgress(exp.name) as progress:
                    records = exp.run(
                        machine=machine,
                        overrides=overrides,
                        seed=seed,
                        native=not python_programs,
                        progress=progress,
                        time_limit_ns=run_opts.time_limit_ns,
                        exact_reference=exact_reference,
                        trace=trace,
                        check_dma=check_dma,
                        **opts,
                    )
            finally:
                stats = trace.close() if trace is not None else None
        err = console(stderr=True)
        if trace_path:
            err.print(_traced(trace_path, stats))
        if record_dir:
            from .record import write_record

            write_record(
                record_dir,
                machine=machine,
                seed=seed,
                overrides=overrides,
                records=records,
            )
            err.print(f"wrote a record of the run into {record_dir}/ (cellsim diff compares two)")
        if json_path == "-":
            sys.stdout.write(json.dumps(records, indent=1) + "\n")
            sys.stdout.flush()
        elif json_path:
            Path(json_path).write_text(json.dumps(records, indent=1) + "\n")
            err.print(f"wrote {json_path}")
        if csv_path:
            import pandas as pd

            pd.DataFrame.from_records(records).to_csv(csv_path, index=False)
            err.print(f"wrote {csv_path}")
        if plot_path:
            with figure_style():
                exp.plot(records, plot_path)
            err.print(f"wrote {plot_path}")
        if json_path != "-":
            out = console()
            for table in _experiment_tables(exp, records):
                out.print(table)
            rows = exp.compare(records)
            if rows:
                out.print(_comparison_table(f"{exp.name}: published ({cite(exp.paper)}) vs simulated", rows))
                out.print(_summary(rows))
                out.print(_id_key(rows))
                if any(r["held_out"] for r in rows):
                    out.print(f"note: {WITHHELD_NOTE}")
                if not exp.measured(machine):
                    # The published figures are of the paper's machine: another
                    # machine's results are set beside them, not judged by them.
                    out.print(
                        f"note: {cite(exp.paper)} measured {exp.machine}; this run is on {machine}, so the"
                        " published values are a reference, not a check"
                    )

    return click.Command(
        exp.name,
        callback=callback,
        params=[
            *_common_params(),
            _record_param(exp),
            *limit_params(),
            *(_option_param(o) for o in exp.options),
        ],
        help=plain(f"{exp.title} ({cite(exp.paper)}, {exp.figure}).\n\n{exp.description}")
        + f"\n\nPaper: {cite(exp.paper, full=True)}.",
        short_help=f"{exp.title} ({cite(exp.paper)}, {exp.figure})",
    )


for _exp in all_experiments():
    run.add_command(_make_run_command(_exp))

cli.add_command(plan_buffers)
cli.add_command(map_cmd)
cli.add_command(mpirun_cmd)
cli.add_command(cc_cmd)
cli.add_command(exec_cmd)
cli.add_command(make_cmd)
cli.add_command(validate_cmd)


def _experiment_line(k: int, n: int, r: Any) -> str:
    """The line ``cellsim reproduce`` prints as experiment ``k`` of ``n`` finishes."""
    cs = [c for c in r.comparison if c["within"] is not None]
    agree = sum(1 for c in cs if c["within"])
    withheld = len(r.comparison) - len(cs)
    agreement = f"{agree} of {len(cs)} published values agree" if cs else "no published value to judge"
    if withheld:
        agreement += f" ({withheld} withheld: simulated only)"
    done = f"[{k:>{len(str(n))}}/{n}] {r.experiment.name}"
    return f"{done}: {len(r.records)} points in {r.seconds:.1f} s; {agreement}"


@cli.command()
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False),
    default="cellsim-results",
    show_default=True,
    help="directory for the results",
)
@click.option(
    "--machine",
    "-m",
    default=None,
    help="machine name or TOML file for every experiment (default: each experiment's own machine)",
)
@click.option("--seed", "-s", type=SEED, default=0, show_default=True, help="seed of the machines")
@click.option("--python", "python_programs", is_flag=True, help="run the Python benchmark programs")
@click.option(
    "--only",
    multiple=True,
    type=click.Choice([e.name for e in all_experiments()]),
    help="run only this experiment (repeat for several; default every experiment)",
)
@click.option(
    "--quick",
    is_flag=True,
    help="every experiment at reduced counts (fewer DMAs, placements, transmissions, mappings): "
    "a check of the whole job in a few minutes; its report is marked as quick",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="change a machine setting for every experiment (repeat it): a model variant's choice or a "
    "parameter; the report's model section names the variants that ran",
)
def reproduce(
    out: str,
    machine: str | None,
    seed: int,
    python_programs: bool,
    only: tuple[str, ...],
    quick: bool,
    overrides: tuple[str, ...],
) -> None:
    """Run every experiment and write DIR/<name>.json, .parquet, .png and DIR/report.html.

    A line is printed as each experiment finishes (on any output: a terminal,
    a pipe, a log); on a terminal a bar shows the current experiment's points
    and the time remaining.
    """
    from .report import reproduce as _reproduce

    for m in {machine} if machine is not None else {e.machine for e in all_experiments()}:
        _check_machine(m, overrides)
    require_report("cellsim reproduce")
    if Path(out).exists() and not Path(out).is_dir():
        raise UsageError(f"--out {out!r} is a file; give a directory for the results")
    chosen = [e for e in all_experiments() if e.name in only] if only else all_experiments()
    t0 = time.perf_counter()
    kind = "quick check (reduced counts)" if quick else "full run"
    n = len(chosen)
    print(f"cellsim reproduce: {n} experiment{'s' if n != 1 else ''}, {kind}, into {out}/", flush=True)

    with RunProgress("reproduce", single=True) as progress:
        started = {"k": 0}

        def step(name: str, done: int, total: int) -> None:
            progress(done, total, f"[{started['k'] + 1}/{n}] {name}")

        def finished(k: int, total: int, r: Any) -> None:
            started["k"] = k
            # print() goes above a live bar (rich redirects stdout while it shows)
            print(_experiment_line(k, total, r), flush=True)

        results = _reproduce(
            out,
            machine=machine,
            seed=seed,
            native=not python_programs,
            experiments=chosen,
            progress=step,
            command=shlex.join(["cellsim", *sys.argv[1:]]),
            quick=quick,
            on_result=finished,
            overrides=overrides,
        )
    seconds = time.perf_counter() - t0
    con = console()
    every = []
    for r in results:
        if r.comparison:
            con.print(
                _comparison_table(
                    f"{r.experiment.name}: published ({cite(r.experiment.paper)}) vs simulated", r.comparison
                )
            )
        every += r.comparison
    con.print(_summary(every))
    if every:
        con.print(_id_key(every))
    if any(row["held_out"] for row in every):
        con.print(f"note: {WITHHELD_NOTE}")
    con.print(f"results in {Path(out).resolve()}/:")
    for r in results:
        con.print(
            "  "
            + ", ".join(p.name for p in r.files.values())
            + f"  ({len(r.records)} points, {r.seconds:.1f} s)"
        )
    con.print(f"  report.html: {(Path(out) / 'report.html').resolve()}")
    counted = [r for r in results if any("transfers" in rec for rec in r.records)]
    transfers = sum(int(rec.get("transfers", 0)) for r in counted for rec in r.records)
    line = f"{len(results)} experiments in {seconds:.1f} s"
    if quick:
        line += " (quick: reduced counts, not the published settings)"
    if transfers:
        rate = transfers / max(sum(r.seconds for r in counted), 1e-9)
        line += f"; {transfers:,} simulated EIB transfers in those that count them ({rate:,.0f} per second)"
    con.print(line)


@cli.command("diff")
@click.argument("run_a", type=click.Path(exists=True, file_okay=False))
@click.argument("run_b", type=click.Path(exists=True, file_okay=False))
def diff_cmd(run_a: str, run_b: str) -> int:
    """What changed between two run records (written with --out DIR): the
    command, the seed, the machine's parameters, the stats and the points.
    The exit status is 0 when nothing did, 1 otherwise (as diff's)."""
    from .record import diff_runs

    lines = diff_runs(run_a, run_b)
    for line in lines:
        click.echo(line)
    if not lines:
        click.echo(f"no difference between {run_a} and {run_b}")
    return 1 if lines else 0


@cli.command()
def machines() -> None:
    """List the machines shipped with cellsim."""
    t = Table(title="machines")
    for col in ("name", "description", "chips", "SPEs", "core clock", "memory", "pages", "SPE TLB"):
        t.add_column(col)
    for name in cellsim.machines():
        facts = MachineSpec.of(name).facts
        tlb = facts.tlb_entries
        t.add_row(
            name,
            plain(facts.description),
            str(facts.chips),
            str(facts.spes),
            f"{facts.core_hz / 1e9:g} GHz",
            _size(facts.memory_bytes),
            f"{_size(facts.page_bytes)}, {facts.numa_policy}",
            f"{tlb} entries" if tlb else "off",
        )
    console().print(t)


def _size(n: int) -> str:
    """Bytes as people write memory sizes (512 MB, 1 GB, 64 KB)."""
    for unit, b in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= b and n % b == 0:
            return f"{n // b} {unit}"
    return f"{n} B"


@cli.group()
def machine() -> None:
    """Inspect a machine."""


@machine.command("show")
@click.argument("name")
def machine_show(name: str) -> None:
    """Print the TOML file of machine NAME (a template for new machines)."""
    known = cellsim.machines()
    if name not in known:
        raise UsageError(f"unknown machine {name!r}: known machines are {', '.join(known)}")
    click.echo(cellsim.machine_toml(name), nl=False)


@machine.command("variants")
@click.argument("name", default="qs20-1chip")
@click.option(
    "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="a machine setting to apply first"
)
@click.option("--markdown", is_flag=True, help="every shipped machine's variants as docs/model.md's table")
def machine_variants(name: str, overrides: tuple[str, ...], markdown: bool) -> None:
    """List the model variants of machine NAME (a name or a TOML file): each mechanism no source
    fixes, its choices (sourced: the document; inferred: the visible statements it explains), the
    one the machine runs and why it is the default."""
    if markdown:
        click.echo(variants_markdown(), nl=False)
        return
    spec = MachineSpec.of(name, overrides)
    con = console()
    for v in spec.variants:
        t = Table(title=f"{v.name}: {v.about}", title_justify="left", show_lines=False)
        for col in ("choice", "status", "source / explains", "what"):
            t.add_column(col, overflow="fold")
        for c in v.choices:
            mark = " (runs)" if c.name == v.value else ""
            mark += " (default)" if c.name == v.default else ""
            basis = c.source if c.status == "sourced" else "explains " + ", ".join(c.explains)
            params = f"; parameters {', '.join(c.params)}" if c.params else ""
            t.add_row(f"{v.key} = {c.name}{mark}", c.status, plain(basis), plain(c.what) + params)
        con.print(t)
        con.print(f"  why the default: {plain(v.why)}\n")


@cli.command("trace", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--out", "-o", default="trace.json", show_default=True, help="the Chrome/Perfetto trace file")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="records kept (the rest are counted as dropped)",
)
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def trace_cmd(out: str, limit: int, script: str, args: tuple[str, ...]) -> None:
    """Run a Python SCRIPT and trace the first Machine it builds.

    The trace has a track per SPU, per MFC queue slot, per PPE thread and per
    ring transfer lane, in simulated time; open it at https://ui.perfetto.dev.
    Example: cellsim trace -o counter.json examples/atomic_counter.py
    """
    import runpy

    check_output(out, "--out")
    saved = sys.argv
    sys.argv = [script, *args]
    try:
        with capture_trace(out, limit=limit) as state:
            runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = saved
    if state.stats is None:
        raise UsageError(f"{script} built no cellsim.Machine: nothing to trace")
    click.echo(_traced(out, state.stats), err=True)


@cli.command()
def errors() -> None:
    """List the MFC errors a program can cause, with the rule each one stands for."""
    t = Table(title="MFC error catalogue (MfcError.kind)")
    t.add_column("kind", style="bold")
    t.add_column("rule")
    for kind, rule in cellsim.error_catalogue():
        t.add_row(kind, rule)
    console().print(t)


# -- cellsim bench: extension point -------------------------------------------------------
# `cellsim bench` belongs to the simulator's own benchmarks, in cellsim/bench.py
# (not written here). That module, if present, must define
#     register(group: click.Group) -> None
# which adds its commands (e.g. `speed`) to the group. It is imported only when
# `cellsim bench` is used, so a broken or slow bench module never affects the
# other commands.


class _LazyBenchGroup(click.Group):
    _loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if importlib.util.find_spec("cellsim.tools.bench") is not None:
            register: Callable[[click.Group], None] = importlib.import_module("cellsim.tools.bench").register
            register(self)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._load()
        return super().get_command(ctx, cmd_name)


@cli.group(cls=_LazyBenchGroup)
def bench() -> None:
    """Benchmarks of the simulator itself (provided by cellsim.tools.bench)."""


# -----------------------------------------------------------------------------------------


def main() -> None:
    """Entry point of the ``cellsim`` command."""
    cli.main(prog_name="cellsim")


if __name__ == "__main__":
    main()
