"""``cellsim mpirun``: run an MPI program on the SPEs of a simulated Cell."""

from __future__ import annotations

import sys

import click

from .._checks import positive
from .._outputs import check_output
from ..limits import SEED, limit_options
from ._run import PROTOCOLS, mpirun, report_failure

__all__ = ["mpirun_cmd"]


@click.command(
    "mpirun",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "-n", "--np", "n", type=int, required=True, help="MPI ranks, one per SPE (at most the machine's SPEs)"
)
@click.option("--machine", "-m", default="qs20", show_default=True, help="machine name or TOML file")
@click.option(
    "--protocol",
    type=click.Choice(list(PROTOCOLS)),
    default="direct",
    show_default=True,
    help="direct (LS to LS, signals) or kumar (Kumar et al.'s design)",
)
@click.option(
    "--compute",
    default="model",
    show_default=True,
    metavar="zero|model|host-scaled:F",
    help="simulated time of the program's work between MPI calls: none; what it states with "
    "cellsim.mpi.compute/flops; or F times the host time its Python code took",
)
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), help="write a Chrome/Perfetto trace")
@click.option(
    "--seed", "-s", type=SEED, default=0, show_default=True, help="seed of the machine (SPE placement)"
)
@limit_options
@click.option("--no-prefix", is_flag=True, help="do not prefix each output line with [rank]")
@click.option("--quiet", "-q", is_flag=True, help="no summary line on stderr")
@click.argument("program")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def mpirun_cmd(
    n: int,
    machine: str,
    protocol: str,
    compute: str,
    trace_path: str | None,
    seed: int,
    time_limit: float | None,
    wall_limit: float | None,
    no_prefix: bool,
    quiet: bool,
    program: str,
    args: tuple[str, ...],
) -> int:
    """Run PROGRAM as N MPI ranks on the SPEs of a simulated Cell.

    PROGRAM is a Python file, an unmodified mpi4py script (``from mpi4py
    import MPI`` gets cellsim's MPI) or a program using cellsim.mpi and the
    SPU API, or module:function. Its output lines are prefixed with their
    rank; the exit status is the worst rank's. Times are simulated (MPI.Wtime
    reads the SPU decrementer).
    """
    check_output(trace_path, "--trace")
    result = mpirun(
        program,
        n,
        args=args,
        machine=machine,
        protocol=protocol,
        compute=compute,
        seed=seed,
        trace=trace_path,
        time_limit_ns=None if time_limit is None else positive(time_limit, "--time-limit") * 1e9,
        wall_limit_s=None if wall_limit is None else positive(wall_limit, "--wall-limit"),
        prefix=not no_prefix,
        raise_errors=False,
    )
    sys.stdout.flush()
    report_failure(result, sys.stderr)
    if trace_path:
        click.echo(f"mpirun: wrote {trace_path} (open it at https://ui.perfetto.dev)", err=True)
    if not quiet:
        click.echo(
            f"mpirun: {n} ranks on {result.machine.name}, protocol {protocol}, compute {compute}: "
            f"{result.ns / 1000:.3f} us simulated, exit status {result.exit_code}",
            err=True,
        )
    return result.exit_code
