"""cellsim: the Cell Broadband Engine's communication system, simulated cycle by cycle.

>>> import cellsim
>>> m = cellsim.Machine("qs20", seed=1)  # the QS20 blade: two Cell chips
>>> m.spe_count
16

See :mod:`cellsim.spu` for the SPE program API, :class:`cellsim.Machine` for
machines and runs, and ``cellsim --help`` for the experiments.
"""

from __future__ import annotations

from . import _engine
from .exceptions import (
    CellsimError,
    ConfigError,
    DeadlockError,
    InvariantError,
    MfcError,
    NotInProgramError,
    RunawayError,
    UsageError,
)
from .machine import EaBuffer, LsBuffer, Machine, ProgramResult, RunResult
from .spec import MachineSpec

__version__: str = _engine.__version__

__all__ = [
    "CellsimError",
    "ConfigError",
    "DeadlockError",
    "EaBuffer",
    "InvariantError",
    "LsBuffer",
    "Machine",
    "MachineSpec",
    "MfcError",
    "NotInProgramError",
    "ProgramResult",
    "RunResult",
    "RunawayError",
    "UsageError",
    "__version__",
    "error_catalogue",
    "machine_toml",
    "machines",
]


def machines() -> list[str]:
    """Names of the machines shipped with cellsim."""
    return list(_engine.machine_names())


def machine_toml(name: str) -> str:
    """The TOML file of a shipped machine (a template for new ones)."""
    return str(_engine.machine_toml(name))


def error_catalogue() -> list[tuple[str, str]]:
    """Every MFC error kind with the rule it stands for."""
    return list(_engine.error_catalogue())
