"""The package's layers (docs/architecture.md, "The package"): every import of a cellsim module
goes to its own layer or one below, but for the few arrows the picture lists."""

from __future__ import annotations

import ast
from pathlib import Path

import cellsim

PACKAGE = Path(cellsim.__file__).parent

LAYERS: dict[str, int] = {
    **dict.fromkeys(["_engine", "exceptions", "_checks", "published", "sweep", "style"], 0),
    **dict.fromkeys(
        ["", "spec", "machine", "spu", "ppe", "sync", "kernels", "dmacheck", "trace", "limits", "reference"],
        1,
    ),
    "problem_state": 1,
    **dict.fromkeys(["buffering", "messaging", "mpi", "c"], 2),
    **dict.fromkeys(["experiments", "validate"], 3),
    "tools": 4,
}
"""The layer of each top-level name of ``cellsim`` ("" is ``cellsim/__init__.py``):
base, simulator API, the papers' software, reproduction, tooling."""

UPWARD: set[tuple[str, str]] = {
    # a package's command takes the tooling's output checks and run records
    ("cellsim.c.cli", "cellsim.tools.record"),
    ("cellsim.mpi.cli", "cellsim.tools._outputs"),
    ("cellsim.mpi.cli", "cellsim.tools.record"),
    ("cellsim.messaging.cli", "cellsim.tools._outputs"),
    # the PPE asks a C program's thread for its stop code
    ("cellsim.ppe", "cellsim.c.threads"),
}
"""The arrows that go up, each on purpose (docs/architecture.md lists them)."""


def _module(path: Path) -> str:
    parts = ["cellsim", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The cellsim modules ``path`` imports, at the top or inside a function."""
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out |= {module} | {f"{module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m.split(".")[0] == "cellsim" and _exists(m)}


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (
        (PACKAGE / rel).with_suffix(".py").exists()
        or (PACKAGE / rel / "__init__.py").exists()
        or (module == "cellsim._engine")
    )


def _top(module: str) -> str:
    """The name under ``cellsim`` that ``module`` is or is in ("" for ``cellsim`` itself)."""
    return module.partition(".")[2].partition(".")[0]


def _layer(module: str) -> int:
    return LAYERS[_top(module)]


def test_every_import_goes_down_the_layers_or_is_listed() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100
    up = set()
    for path in modules:
        here = _module(path)
        for target in _imports(path):
            # the papers' packages do not use each other
            sideways = _layer(target) == _layer(here) == 2 and _top(target) != _top(here)
            if _layer(target) > _layer(here) or sideways:
                up.add((here, target))
    assert up == UPWARD, f"new: {sorted(up - UPWARD)}; gone: {sorted(UPWARD - up)}"
