"""``cellsim cc`` and ``cellsim exec``: build a C app and run it."""

from __future__ import annotations

import signal
from pathlib import Path

import click

from ..exceptions import ProgramCrashError, UsageError
from ..limits import command_limits, limit_options, run_options
from ..spec import MachineSpec
from ..tools.record import record_option, write_record
from . import makefile
from .app import build, include_dir, run_app


def _spu_option(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for v in value:
        name, sep, path = v.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{v!r} is not NAME=file.c")
        out.setdefault(name, []).append(path)
    return out


@click.command("cc", context_settings={"ignore_unknown_options": True})
@click.argument("sources", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--spu",
    "spus",
    multiple=True,
    callback=_spu_option,
    metavar="NAME=FILE.c",
    help="An SPU program NAME, a file name as programs open it (x.elf, spu-task, x_spu): "
    'spe_image_open("dir/NAME") and extern spe_program_handle_t NAME-as-a-symbol find it; '
    "repeat for more files or programs.",
)
@click.option("-o", "output", type=click.Path(file_okay=False), help="The app directory to write.")
@click.option(
    "--count-intrinsics",
    is_flag=True,
    help="Charge each SPU intrinsic its issue cost in simulated time (see docs/c-programs.md).",
)
@click.option("--cflag", "cflags", multiple=True, metavar="FLAG", help="An extra flag for the C compiler.")
@click.option(
    "--include-dir",
    "show_include",
    is_flag=True,
    help="Print the directory of cellsim's SDK headers and exit.",
)
def cc_cmd(
    sources: tuple[str, ...],
    spus: dict[str, list[str]],
    output: str | None,
    count_intrinsics: bool,
    cflags: tuple[str, ...],
    show_include: bool,
) -> None:
    """Build a C program written on the Cell SDK's headers into an app for `cellsim exec`.

    SOURCES are the PPU program's files (main(argc, argv)); each --spu NAME=FILE.c adds an
    SPU program (main(speid, argp, envp)). The host C compiler ($CC, cc or gcc) builds them
    (with -g -O2 -Wall, an implicit function declaration an error) and its warnings are shown;
    other compiler flags among the sources (-O0, -DNAME, -Idir, -w...) go to it too.

        cellsim cc ppu.c --spu worker=spu.c -o app && cellsim exec app
    """
    if show_include:
        click.echo(str(include_dir()))
        return
    if output is None:
        raise UsageError("cellsim cc: give the app's directory with -o APP")
    extra = [s for s in sources if s.startswith("-")]
    sources = tuple(s for s in sources if not s.startswith("-"))
    warnings: list[str] = []
    app = build(
        list(sources),
        spus,
        output,
        count_intrinsics=count_intrinsics,
        cflags=[*cflags, *extra],
        warnings=warnings,
    )
    for text in warnings:  # the compiler's own words (-Wall), as cc prints them
        click.echo(text, err=True)
    names = ", ".join(sorted(spus)) or "none"
    click.echo(f"built {app}: PPU program {'yes' if sources else 'none'}, SPU programs: {names}", err=True)


@click.command("make")
@click.argument("directory", default=".", type=click.Path(file_okay=False, exists=True))
@click.option("-o", "output", type=click.Path(file_okay=False), help="The app directory to write.")
@click.option(
    "--count-intrinsics",
    is_flag=True,
    help="Charge each SPU intrinsic its issue cost in simulated time (see docs/c-programs.md).",
)
def make_cmd(directory: str, output: str | None, count_intrinsics: bool) -> None:
    """Build a C app from an SDK sample's own Makefiles (the make.footer style).

    Reads DIRECTORY's Makefile and those of its DIRS: PROGRAM_ppu and PROGRAM_spu (or
    PROGRAMS_*) with their sources (OBJS, else every .c file beside the Makefile),
    LIBRARY_embed and IMPORTS (which SPU programs the PPU program embeds), CFLAGS,
    CPPFLAGS, CC_OPT_LEVEL, INCLUDE and DEFINES. The app goes where make would put the
    PPU program (DIR/PROGRAM_ppu) unless -o says otherwise.

        cellsim make samples/simple && cellsim exec samples/simple/simple
    """
    project = makefile.read(directory)
    if len(project.ppu) > 1:
        names = ", ".join(p.name for p in project.ppu)
        raise UsageError(
            f"{directory}: its Makefiles build several PPU programs ({names}); cellsim builds one"
        )
    ppu = project.ppu[0] if project.ppu else None
    spus = makefile.embedded(project, ppu) if ppu else list(project.spu)
    if ppu is None and not spus:
        raise UsageError(f"{directory}: its Makefiles set no PROGRAM_ppu and no PROGRAM_spu")
    first = ppu or project.spu[spus[0]]
    out = Path(output) if output else first.directory / first.name
    warnings: list[str] = []
    app = build(
        ppu.sources if ppu else [],
        {n: project.spu[n].sources for n in spus},
        out,
        count_intrinsics=count_intrinsics,
        warnings=warnings,
        spu_cflags={n: project.spu[n].flags for n in spus},
        ppu_cflags=ppu.flags if ppu else (),
        ppu_libs=makefile.link_flags(ppu) if ppu else (),
    )
    for text in warnings:  # the compiler's own words (-Wall), as cc prints them
        click.echo(text, err=True)
    click.echo(
        f"built {app}: PPU program {ppu.name if ppu else 'none'}, SPU programs: {', '.join(spus) or 'none'}",
        err=True,
    )


def _placement(text: str | None) -> list[int] | None:
    """``--placement 7,6,5``: a physical SPE per logical SPE, each named once."""
    if text is None:
        return None
    try:
        spes = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise UsageError(f"--placement {text!r}: a comma-separated list of physical SPE numbers") from None
    if not spes or any(p < 0 for p in spes) or len(set(spes)) != len(spes):
        raise UsageError(f"--placement {text!r}: physical SPE numbers, each at most once")
    return spes


@click.command("exec", context_settings={"ignore_unknown_options": True})
@click.argument("app", type=click.Path(file_okay=False))
@click.option("--machine", default="qs20", show_default=True, help="Machine name or TOML file.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the run.")
@click.option("--trace", type=click.Path(dir_okay=False), help="Write a Chrome/Perfetto trace here.")
@click.option(
    "--host-time-scale",
    type=float,
    metavar="F",
    help="Charge the C code's host CPU time between calls, times F, as simulated time "
    "(off by default: not deterministic).",
)
@click.option(
    "--placement",
    metavar="P0,P1,...",
    help="The physical SPE of each logical SPE: context i runs on SPE Pi (default: the machine's policy).",
)
@record_option(sentence=True)
@click.option(
    "--check-dma",
    is_flag=True,
    help="Stop at a DMA race: overlapping DMAs in flight without a fence or barrier (both C lines named).",
)
@click.option("--quiet", is_flag=True, help="No run summary on stderr.")
@limit_options
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def exec_cmd(
    app: str,
    machine: str,
    seed: int,
    trace: str | None,
    host_time_scale: float | None,
    placement: str | None,
    record_dir: str | None,
    check_dma: bool,
    quiet: bool,
    time_limit: float | None,
    wall_limit: float | None,
    args: tuple[str, ...],
) -> int:
    """Run a C app built by `cellsim cc` on a simulated machine: its PPU main(argc, argv)
    with ARGS (after --), to the end. The exit status is main's; a C program that dies
    (a fatal signal) is named in the summary with its SPE, the signal and the C line."""
    argv = list(args[1:] if args[:1] == ("--",) else args)
    spes = _placement(placement)
    try:
        with command_limits(wall_limit):
            r = run_app(
                app,
                machine=MachineSpec.of(machine).running(run_options(time_limit)),
                seed=seed,
                argv=argv,
                trace=trace,
                host_time_scale=host_time_scale,
                placement=spes,
                check_dma=check_dma,
            )
    except ProgramCrashError as e:
        # the PPU program's process died: the run stopped; exit as a shell reports a signal
        click.echo(f"cellsim exec: {Path(app).name}: {e}; the run stopped", err=True)
        if e.signal is None:
            return (e.exit_status or 0) & 0xFF
        return 128 + int(getattr(signal.Signals, e.signal, signal.SIGKILL))
    if record_dir:
        write_record(
            record_dir,
            machine=machine,
            seed=seed,
            stats=r.run.stats,
            result={"exit_status": r.exit_code, "cycles": r.run.cycles, "ns": r.run.ns, "placement": spes},
        )
    if not quiet:
        run = r.run
        click.echo(
            f"cellsim exec: {Path(app).name} on {machine} (seed {seed}): main returned {r.exit_code} "
            f"at cycle {run.cycles:,} ({run.ns / 1000:.1f} us simulated); compute time: {r.compute_mode}",
            err=True,
        )
    for crash in r.crashes:  # even with --quiet: a program died
        click.echo(f"cellsim exec: {crash}", err=True)
    return r.exit_code
