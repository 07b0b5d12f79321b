"""The exceptions cellsim raises.

Every error a user can cause is a :class:`CellsimError`; the CLI prints its
message on one line and exits non-zero. Classes that are also a builtin error
(``ConfigError`` is a ``ValueError``) can be caught either way.

==================  ==========================================================
class               raised when
==================  ==========================================================
ConfigError         a machine file or override is invalid (``.key`` names it)
MfcError            the MFC rejects a command (``.kind``: ``size``,
                    ``alignment``, ``ls_range``, ``tag``, ``unmapped``, ...)
DeadlockError       every program is blocked and nothing is in flight
                    (``.blocked``: who waits on what, since when)
RunawayError        the run passed its simulated- or host-time limit
                    (``.activity``: what each program was doing)
UsageError          the API was used wrongly (bad SPE number, bad argument)
CompileError        the C compiler or linker refused a program (a
                    ``UsageError``; ``.diagnostics``: its words, whole)
NotInProgramError   an SPU call was made outside a running SPE program
InvariantError      an EIB invariant check failed (a simulator bug)
ProgramCrashError   a C program's process died (a fatal signal, ``_exit``):
                    ``.who``, ``.signal``, ``.location`` (C file:line)
==================  ==========================================================
"""

from __future__ import annotations

__all__ = [
    "CellsimError",
    "CompileError",
    "ConfigError",
    "DeadlockError",
    "InvariantError",
    "MfcError",
    "NotInProgramError",
    "ProgramCrashError",
    "RunawayError",
    "UsageError",
]


class CellsimError(Exception):
    """Base class of every error cellsim raises on purpose."""


class ConfigError(CellsimError, ValueError):
    """A machine configuration is invalid. ``key`` names the parameter, if one is at fault."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class MfcError(CellsimError):
    """The MFC rejected a command; the SPE program stops at the call.

    Attributes:
        kind: stable name of the broken rule (see ``cellsim.error_catalogue()``).
        spe: logical SPE of the issuing program.
        cycle: simulated cycle of the issue.
        command: the call as the SDK spells it.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "",
        spe: int | None = None,
        cycle: int = 0,
        command: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.spe = spe
        self.cycle = cycle
        self.command = command


class DeadlockError(CellsimError):
    """Every program is blocked and nothing is in flight.

    ``blocked`` lists ``(program, call, since_cycle)`` for each blocked program.
    """

    def __init__(
        self, message: str, *, blocked: list[tuple[str, str, int]] | None = None, cycle: int = 0
    ) -> None:
        super().__init__(message)
        self.blocked = blocked or []
        self.cycle = cycle


class RunawayError(CellsimError):
    """The run passed its simulated-time limit (``time_limit_ns``) or its
    host-time limit (``wall_limit_s``, ``--wall-limit``).

    ``activity`` is the livelock report: ``(program, what it was doing)`` for
    each unfinished program, e.g. the channel it kept polling; ``cycle`` is
    where the run stopped.
    """

    def __init__(
        self,
        message: str,
        *,
        limit_cycles: int = 0,
        cycle: int = 0,
        activity: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.limit_cycles = limit_cycles
        self.cycle = cycle
        self.activity = activity or []


class UsageError(CellsimError, ValueError):
    """The API was used wrongly: the message says how."""


class CompileError(UsageError):
    """``cellsim cc`` could not build a C program: the compiler or the linker
    refused it. ``headline`` says what failed in one line; ``diagnostics`` holds
    the compiler's own words, whole (several lines, with their carets). The
    message is both; the CLI prints the headline, then the diagnostics as they are."""

    def __init__(self, headline: str, diagnostics: str = "") -> None:
        diagnostics = diagnostics.rstrip("\n")
        super().__init__(f"{headline}\n{diagnostics}" if diagnostics else headline)
        self.headline = headline
        self.diagnostics = diagnostics


class NotInProgramError(CellsimError, RuntimeError):
    """An SPU call (``mfc_get``, ...) was made outside a running SPE program."""


class InvariantError(CellsimError, AssertionError):
    """An invariant of the EIB model was violated: a bug in cellsim, please report it."""


class ProgramCrashError(CellsimError):
    """A C program's process died: a fatal signal (a NULL write, ``abort()``, a
    division by zero, a stack overflow) or ``_exit`` from the PPU program.

    Attributes:
        who: the program's place (``"SPE 3"``, ``"the PPU program"``).
        program: the C program's name.
        signal: the signal's name (``"SIGSEGV"``), or None if the process exited.
        location: ``file:line (in function)`` of the faulting code, if known.
        last_call: ``file:line`` of the program's last SDK call, if any.
        exit_status: the process's exit status when it exited without a signal.
    """

    def __init__(
        self,
        message: str,
        *,
        who: str = "",
        program: str = "",
        signal: str | None = None,
        location: str | None = None,
        last_call: str | None = None,
        exit_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.who = who
        self.program = program
        self.signal = signal
        self.location = location
        self.last_call = last_call
        self.exit_status = exit_status
