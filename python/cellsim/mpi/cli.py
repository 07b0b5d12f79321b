"""``cellsim mpirun``: run an MPI program on the SPEs of a simulated Cell.

The program is given as to ``python``: ``PROGRAM.py ARGS``, ``-m MODULE
ARGS`` or ``-c CODE ARGS`` (or ``module:function``); everything after it is
the program's own arguments, options included."""

from __future__ import annotations

import re
import sys
from typing import Any

import click

from .._checks import positive
from ..exceptions import CellsimError
from ..limits import SEED, limit_options
from ..tools._outputs import check_output
from ..tools.record import record_option, write_record
from ..trace import DEFAULT_LIMIT
from ._run import PROTOCOLS, mpirun, report_failure
from ._runtime import ComputeRule

__all__ = ["mpirun_cmd"]


def _compute_rule(text: str) -> str:
    """``--compute`` checked before anything runs: a bad rule is a usage error."""
    try:
        ComputeRule.parse(text)
    except CellsimError as e:
        raise click.BadParameter(getattr(e, "detail", "") or str(e)) from None
    return text


_PYTHON = re.compile(r"(?:.*/)?python(?:\d+(?:\.\d+)?)?$")
"""A leading interpreter, as in mpi4py's ``mpiexec -n 4 python script.py``."""

_PYTHON_FLAGS = {"-u", "-B", "-O", "-OO", "-E", "-s", "-S", "-I", "-b", "-bb", "-d", "-v", "-P"}
"""The interpreter's own flags that may follow it; they change nothing here."""
_PYTHON_VALUED = {"-X", "-W"}


class _PythonLike(click.Command):
    """Parses mpirun's options up to the program (a file, ``-m MODULE`` or
    ``-c CODE``), as ``python`` does; what follows is the program's. Written
    as launchers are typed: ``-np 4`` is ``-n 4``, and a leading ``python``
    (with its own flags, ``-u``...) is the interpreter cellsim already is."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        options = [p for p in self.params if isinstance(p, click.Option)]
        takes_value = {o for p in options if not p.is_flag for o in p.opts}
        args = list(args)
        i = 0
        after_python = False
        while i < len(args):
            a = args[i]
            if a == "-np" or a.startswith("-np="):  # mpiexec's spelling of -n
                args[i : i + 1] = ["--np", *a.split("=", 1)[1:]]
                continue
            if after_python and (a in _PYTHON_FLAGS or a in _PYTHON_VALUED):
                del args[i : i + (2 if a in _PYTHON_VALUED else 1)]
                continue
            if a in ("-m", "-c"):
                i += 2
                break
            if a.startswith(("-m", "-c")) and not a.startswith("--"):
                i += 1
                break
            if not after_python and not a.startswith("-") and _PYTHON.fullmatch(a):
                del args[i]  # the interpreter: what follows is python's command line
                after_python = True
                continue
            if not a.startswith("-") or a == "--":
                break
            i += 2 if a in takes_value else 1
        ctx.meta["program_args"] = args[i:]
        return super().parse_args(ctx, args[:i])


@click.command("mpirun", cls=_PythonLike)
@click.option(
    "-n", "--np", "n", type=int, required=True, help="MPI ranks, one per SPE (at most the machine's SPEs)"
)
@click.option("-m", "module", metavar="MODULE", help="run MODULE as a script, as python -m does")
@click.option("-c", "command", metavar="CODE", help="run CODE, as python -c does")
@click.option("--machine", default="qs20", show_default=True, help="machine name or TOML file")
@click.option(
    "--protocol",
    type=click.Choice(list(PROTOCOLS)),
    default="direct",
    show_default=True,
    help="direct (LS to LS, signals) or kumar (Kumar et al.'s buffered-mode design)",
)
@click.option(
    "--compute",
    default="model",
    show_default=True,
    callback=lambda _ctx, _param, value: _compute_rule(value),
    metavar="zero|model|host-scaled:F",
    help="simulated time of the program's work between MPI calls: none; what it states with "
    "cellsim.mpi.compute/flops; or F times the host time its Python code took",
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False),
    help="write a Chrome/Perfetto trace, each rank's MPI calls on its own track (gzip: PATH ending in .gz)",
)
@click.option(
    "--limit",
    "trace_limit",
    type=click.IntRange(min=1),
    default=None,
    help=f"records the trace keeps, the rest counted as dropped (default {DEFAULT_LIMIT:,})",
)
@click.option(
    "--seed", "-s", type=SEED, default=0, show_default=True, help="seed of the machine (SPE placement)"
)
@limit_options
@record_option()
@click.option(
    "--check-dma",
    is_flag=True,
    help="stop a rank at a DMA race of its own (a local-store range used while its DMA is in flight, "
    "overlapping DMAs without a fence or barrier)",
)
@click.option("--no-prefix", is_flag=True, help="do not prefix each output line with [rank]")
@click.option("--quiet", "-q", is_flag=True, help="no summary line on stderr")
@click.pass_context
def mpirun_cmd(
    ctx: click.Context,
    n: int,
    module: str | None,
    command: str | None,
    machine: str,
    protocol: str,
    compute: str,
    trace_path: str | None,
    trace_limit: int | None,
    seed: int,
    time_limit: float | None,
    wall_limit: float | None,
    record_dir: str | None,
    check_dma: bool,
    no_prefix: bool,
    quiet: bool,
) -> int:
    """Run a program as N MPI ranks on the SPEs of a simulated Cell.

    \b
    cellsim mpirun -n 4 PROGRAM.py [ARGS]     a script (an unmodified mpi4py script, or a
                                             program using cellsim.mpi and the SPU API)
    cellsim mpirun -n 4 -m MODULE [ARGS]      a module, as python -m runs it
    cellsim mpirun -n 4 -c CODE [ARGS]        code, as python -c runs it
    cellsim mpirun -n 4 module:function       a function, called in each rank
    cellsim mpirun -np 4 python PROGRAM.py    as mpiexec and mpi4py's docs write it

    The program starts as under python (sys.argv, sys.path[0], __file__,
    __name__ == "__main__"); `from mpi4py import MPI` gets cellsim's MPI.
    Output lines are prefixed with their rank; the exit status is the worst
    rank's. Times are simulated (MPI.Wtime reads the SPU decrementer).
    """
    check_output(trace_path, "--trace")
    rest: list[str] = ctx.meta.get("program_args", [])
    program: Any = None
    if module is None and command is None:
        if not rest or rest[0] == "--":
            raise click.UsageError("give the program: PROGRAM.py, -m MODULE, -c CODE or module:function")
        program, rest = rest[0], rest[1:]
    from ..dmacheck import check_dma_default

    with check_dma_default(check_dma):
        result = mpirun(
            program,
            n,
            module=module,
            command=command,
            args=rest,
            machine=machine,
            protocol=protocol,
            compute=compute,
            seed=seed,
            trace=trace_path,
            trace_limit=trace_limit,
            time_limit_ns=None if time_limit is None else positive(time_limit, "--time-limit") * 1e9,
            wall_limit_s=None if wall_limit is None else positive(wall_limit, "--wall-limit"),
            prefix=not no_prefix,
            raise_errors=False,
        )
    sys.stdout.flush()
    report_failure(result, sys.stderr)
    if record_dir:
        write_record(
            record_dir,
            machine=machine,
            seed=seed,
            stats=result.machine.stats(),
            result={"exit_status": result.exit_code, "ns": result.ns, "ranks": n, "protocol": protocol},
        )
    stats = result.world.trace_stats if result.world is not None else None
    if trace_path and stats is not None:
        dropped = f", {stats.dropped:,} dropped past the limit (--limit)" if stats.dropped else ""
        click.echo(
            f"mpirun: wrote {trace_path}: {stats.records:,} records{dropped} (open it at https://ui.perfetto.dev)",
            err=True,
        )
    if not quiet:
        click.echo(
            f"mpirun: {n} ranks on {result.machine.name}, protocol {protocol}, compute {compute}: "
            f"{result.ns / 1000:.3f} us simulated, exit status {result.exit_code}",
            err=True,
        )
    return result.exit_code
