"""The program every rank runs, started as ``python`` starts it, and each
rank's own modules.

``python script.py ARGS``, ``python -m pkg.mod ARGS`` and ``python -c CODE
ARGS`` have their ``mpirun`` forms with the same start-up: ``sys.argv``
(the script as given, the module's file, or ``-c``), ``sys.path[0]`` (the
script's directory, the working directory, or ``''``), ``__file__`` (an
absolute path, as since Python 3.9), ``__name__ == "__main__"``,
``__spec__`` and ``__package__`` for a module, so relative imports work;
a ``module:function`` or a callable is called in each rank instead.

All ranks run in one Python process, but each has its own ``__main__`` and
its own copy of every module imported from the program's own directory
(the script's, or the working directory for ``-m`` and ``-c``): a helper
module that computes ``rank = MPI.COMM_WORLD.rank`` at import gets each
rank's rank, and ``unittest.main()`` finds the tests of the rank's own
``__main__``. While a rank runs, ``sys.modules`` holds its copies: a
greenlet switch trace puts them in place when the engine switches to the
rank. Installed packages (and cellsim) are imported once and shared.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import os
import site
import sys
import sysconfig
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

import greenlet

from ..exceptions import UsageError

__all__ = ["RankModules", "RankProgram", "load_program", "user_dirs"]


@dataclass
class RankProgram:
    """What each rank runs, and how python would have started it."""

    kind: str
    """``script``, ``module``, ``command`` or ``callable``."""
    argv0: str
    path0: str | None = None
    """What goes first on ``sys.path`` (None: nothing)."""
    code: types.CodeType | None = None
    fn: Callable[[], Any] | None = None
    file: str | None = None
    spec: ModuleSpec | None = None

    def main_module(self) -> types.ModuleType:
        """A fresh ``__main__`` for one rank."""
        m = types.ModuleType("__main__")
        m.__dict__.update(__builtins__=builtins, __spec__=self.spec, __package__=None, __cached__=None)
        if self.file is not None:
            m.__file__ = self.file
        if self.spec is not None:
            m.__loader__ = self.spec.loader
            m.__package__ = self.spec.parent
        elif self.kind == "script":
            m.__loader__ = importlib.machinery.SourceFileLoader("__main__", str(self.file))
        return m

    def run(self, main: types.ModuleType) -> Any:
        """Runs the program in this rank; what a callable returned."""
        if self.fn is not None:
            return self.fn()
        assert self.code is not None
        exec(self.code, main.__dict__)
        return None


def _compile(source: str | bytes, filename: str, what: str) -> types.CodeType:
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise UsageError(f"{what} does not compile: {e}") from None


def load_program(
    program: str | Path | Callable[[], Any] | None = None,
    *,
    module: str | None = None,
    command: str | None = None,
) -> RankProgram:
    """The program of an ``mpirun``: a file, ``module:function`` or a
    callable (``program``), a module run as ``-m`` or code run as ``-c``."""
    if sum(x is not None for x in (program, module, command)) != 1:
        raise UsageError("give one program: a file or module:function, a module (-m) or code (-c)")
    if command is not None:
        return RankProgram("command", "-c", "", _compile(command, "<string>", "the -c code"))
    if module is not None:
        return _module_program(module)
    if callable(program):
        return RankProgram("callable", getattr(program, "__name__", "program"), fn=program)
    text = str(program)
    p = Path(text)
    if text.endswith(".py") or p.is_file():
        if not p.is_file():
            raise UsageError(f"program {text!r} does not exist (can't open file {os.path.abspath(text)!r})")
        here = str(p.resolve().parent)
        code = _compile(p.read_bytes(), os.path.abspath(text), f"program {text!r}")
        return RankProgram("script", text, here, code, file=os.path.abspath(text))
    if ":" in text:
        return _function_program(text)
    raise UsageError(
        f"program {text!r} is neither a .py file nor module:function (or use -m MODULE, -c CODE)"
    )


def user_dirs(program: Any, module: str | None, command: str | None) -> list[str]:
    """Where the program's own modules are: the script's directory, or the
    working directory for ``-m`` and ``-c`` (none for a function)."""
    if module is not None or command is not None:
        return [os.getcwd()]
    if isinstance(program, str | Path) and Path(program).is_file():
        return [str(Path(program).resolve().parent)]
    return []


def _function_program(text: str) -> RankProgram:
    mod, _, fn = text.partition(":")
    try:
        f = getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as e:
        raise UsageError(f"program {text!r}: {e}") from None
    if not callable(f):
        raise UsageError(f"program {text!r} is not a function")
    return RankProgram("callable", text, fn=f)


def _module_program(name: str) -> RankProgram:
    """``-m name``: the module (a package's ``__main__``), found as python finds it."""
    here = os.getcwd()
    sys.path.insert(0, here)
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(f"{name}.__main__")
    except (ImportError, ValueError) as e:
        raise UsageError(f"-m {name}: {e}") from None
    finally:
        sys.path.remove(here)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "get_code"):
        raise UsageError(f"-m {name}: No module named {name!r} (from {here})")
    try:
        code = spec.loader.get_code(spec.name)
    except SyntaxError as e:
        raise UsageError(f"-m {name} does not compile: {e}") from None
    if code is None:
        raise UsageError(f"-m {name}: {spec.name} has no code to run")
    return RankProgram("module", str(spec.origin), here, code, file=spec.origin, spec=spec)


# -- each rank's modules -------------------------------------------------------------------------------


def _shared_dirs() -> list[str]:
    """Where installed packages are (and cellsim): never per rank, even under a user directory."""
    dirs = {sys.prefix, sys.base_prefix, *site.getsitepackages(), site.getusersitepackages()}
    dirs |= {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.add(str(Path(__file__).resolve().parents[1]))
    return [os.path.realpath(d) + os.sep for d in dirs if d]


class RankModules(importlib.abc.MetaPathFinder):
    """Each rank's ``__main__`` and copies of the program's own modules.

    A meta-path finder notes the modules imported from the user
    directories; a greenlet switch trace swaps them in ``sys.modules`` when
    the engine switches to another rank (a rank greenlet carries its table
    in ``_mpi_modules``). Used as a context manager around the run, which
    puts ``sys.modules`` back as it was."""

    def __init__(self, user_dirs: Sequence[str]) -> None:
        self.user = [os.path.realpath(d) + os.sep for d in user_dirs]
        self.shared = _shared_dirs()
        self.names: set[str] = {"__main__"}
        self.before: dict[str, Any] = {"__main__": sys.modules.get("__main__")}
        self.current: Any = None
        self.previous_trace: Any = None

    def __enter__(self) -> RankModules:
        sys.meta_path.insert(0, self)
        self.previous_trace = greenlet.settrace(self._trace)
        return self

    def __exit__(self, *exc: Any) -> None:
        greenlet.settrace(self.previous_trace)
        sys.meta_path.remove(self)
        for name in self.names:
            old = self.before.get(name)
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old

    def _mine(self, spec: ModuleSpec) -> bool:
        where = spec.origin if spec.has_location and spec.origin else None
        if where is None and spec.submodule_search_locations:
            where = next(iter(spec.submodule_search_locations), None)
        if where is None:
            return False
        path = os.path.realpath(where)
        return any(path.startswith(d) for d in self.user) and not any(path.startswith(d) for d in self.shared)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        """Notes a module of the program's own (the normal finders then load it)."""
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and self._mine(spec) and fullname not in self.names:
            self.before.setdefault(fullname, sys.modules.get(fullname))
            self.names.add(fullname)
        return None

    def enter(self, rank: Any) -> None:
        """Puts ``rank``'s modules in ``sys.modules`` (the rank greenlet runs next)."""
        if rank is self.current:
            return
        if self.current is not None:
            table = self.current._mpi_modules
            for name in self.names:
                table[name] = sys.modules.get(name)
        table = rank._mpi_modules
        for name in self.names:
            m = table.get(name)
            if m is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = m
        self.current = rank

    def _trace(self, event: str, args: Any) -> None:
        # called at every greenlet switch: as little as possible
        target = args[1]
        if target is not self.current and getattr(target, "_mpi_modules", None) is not None:
            self.enter(target)
        if self.previous_trace is not None:
            self.previous_trace(event, args)
