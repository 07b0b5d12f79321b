"""C programs on the Cell SDK's headers: build them with the host C compiler
and run them on the simulated machine (see docs/c-programs.md).

``build(ppu_sources, {"NAME": spu_sources}, "app")`` (``cellsim cc``) makes an
app directory; ``run_app("app")`` (``cellsim exec``) runs its PPU ``main``;
``Machine.load(spe, CProgram("app", "NAME"))`` runs one of its SPU programs
from Python, as ``spe_program_load(ctx, CProgram(...))`` does from a Python
PPE program.
"""

from .app import CApp, ExecResult, build, compiler, include_dir, run_app
from .threads import ComputeMode, CProgram

__all__ = ["CApp", "CProgram", "ComputeMode", "ExecResult", "build", "compiler", "include_dir", "run_app"]
