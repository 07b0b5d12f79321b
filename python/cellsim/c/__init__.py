"""C programs on the Cell SDK's headers: build them with the host C compiler
and run them on the simulated machine (see docs/c-programs.md).

>>> from cellsim.c import build, include_dir            # doctest: +SKIP
>>> build(["main.c"], {"worker": ["worker.c"]}, "app")   # doctest: +SKIP
"""

from .app import CApp, ExecResult, build, compiler, include_dir, run_app
from .threads import ComputeMode, CProgram

__all__ = ["CApp", "CProgram", "ComputeMode", "ExecResult", "build", "compiler", "include_dir", "run_app"]
