"""What the MPI experiments (Kumar et al. 2007) share: running a program under both
protocols, options and plot styling. ``MPI.Wtime`` reads the decrementer at
the machine's own timebase (14.318 MHz on ``qs20``, as Kumar et al. timed)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..exceptions import UsageError
from ..mpi import MpirunResult, mpirun
from ..spec import MachineLike
from . import Option
from ._common import check_choices

__all__ = [
    "PROTOCOLS",
    "PROTOCOL_OPTION",
    "STYLE",
    "check_protocols",
    "label",
    "protocols_in",
    "run_ranks",
    "side_by_side",
]

PROTOCOLS: tuple[str, ...] = ("kumar", "direct")
"""Kumar et al. 2007's design first, then cellsim's default."""
STYLE: dict[str, dict[str, Any]] = {
    "kumar": {"color": "tab:blue", "marker": "o", "label": "kumar (Kumar et al.'s design)"},
    "direct": {"color": "tab:red", "marker": "s", "label": "direct (cellsim's default)"},
}
PROTOCOL_OPTION = Option("protocols", "choice", "MPI protocol", PROTOCOLS, "--protocol", default=PROTOCOLS)


def check_protocols(protocols: Iterable[str]) -> tuple[str, ...]:
    """The protocols to run (default both, kumar first)."""
    chosen = check_choices("protocol", protocols, PROTOCOLS)
    return tuple(p for p in PROTOCOLS if p in chosen)


def protocols_in(records: Iterable[dict[str, Any]]) -> list[str]:
    """The protocols the records measured, in :data:`PROTOCOLS` order."""
    records = list(records)
    return [p for p in PROTOCOLS if any(r["protocol"] == p for r in records)]


def label(protocol: str) -> str:
    """The legend text of a protocol."""
    return str(STYLE[protocol]["label"])


PAGES: tuple[str, ...] = ("first-touch", "local", "remote", "interleave")
"""Where the pages of main memory go on a blade: the machine's first touch
(chip 0's memory, where mpirun runs), chip 0's memory, chip 1's memory, or
alternating (numactl --membind / --interleave)."""

_POLICY = {"first-touch": "first-touch", "local": "node0", "remote": "node1", "interleave": "interleave"}


def page_overrides(pages: str) -> list[str]:
    """Machine overrides placing every page by ``pages`` (one of :data:`PAGES`)."""
    return [f'numa.policy="{_POLICY[pages]}"']


def run_ranks(
    program: Callable[[], Any],
    n: int,
    *,
    protocol: str,
    machine: MachineLike,
    seed: int,
    compute: str = "model",
    overrides: Sequence[str] = (),
) -> MpirunResult:
    """Runs ``program`` as ``n`` ranks (output discarded) and returns the result;
    a failing run is an error naming the protocol."""
    import io

    sink = io.StringIO()
    res = mpirun(
        program,
        n,
        machine=machine,
        protocol=protocol,
        seed=seed,
        compute=compute,
        overrides=list(overrides),
        stdout=sink,
        stderr=sink,
        raise_errors=False,
    )
    if res.error is not None:
        raise UsageError(f"the {protocol} run on {n} ranks failed: {res.error}") from res.error
    return res


def side_by_side(
    records: Sequence[dict[str, Any]], key: Callable[[dict[str, Any]], Any], value: str
) -> dict[Any, dict[str, float]]:
    """``{key: {protocol: value}}`` over the records."""
    out: dict[Any, dict[str, float]] = {}
    for r in records:
        out.setdefault(key(r), {})[r["protocol"]] = float(r[value])
    return out
