"""Output files checked before a command runs: a run of minutes must not end
in an error about its output path or format."""

from __future__ import annotations

import os
from pathlib import Path

from ..exceptions import UsageError

__all__ = ["check_output", "check_plot", "plot_formats", "require_report"]


def require_report(what: str) -> None:
    """Fails, saying how to install them, unless the figures' and the
    report's libraries are installed. They are cellsim's dependencies, so
    this only fires in an environment where someone removed them."""
    import importlib.util

    missing = [m for m in ("matplotlib", "jinja2") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(
            f"{what} needs {' and '.join(missing)}, a dependency of cellsim missing from this "
            f"environment: pip install {' '.join(missing)}"
        )


def plot_formats() -> dict[str, str]:
    """The image formats matplotlib can write: extension -> description."""
    require_report("--plot")
    from matplotlib.backend_bases import FigureCanvasBase

    return dict(FigureCanvasBase.get_supported_filetypes())


def check_output(path: str | os.PathLike[str] | None, option: str) -> None:
    """Fails, naming ``option`` and the path, unless a file can be written at ``path``."""
    if path is None or str(path) == "-":
        return
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{option} {str(path)!r} is a directory; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{option} {str(path)!r}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UsageError(f"{option} {str(path)!r} cannot be written (permission denied)")


def check_plot(path: str | os.PathLike[str] | None, option: str = "--plot") -> None:
    """:func:`check_output`, and the extension must be a format matplotlib writes."""
    if path is None:
        return
    check_output(path, option)
    ext = Path(path).suffix.lower().lstrip(".")
    formats = plot_formats()
    if ext not in formats:
        known = ", ".join(sorted(formats))
        raise UsageError(
            f"{option} {str(path)!r}: {ext or 'no extension'} is not an image format "
            f"matplotlib writes (give one of {known})"
        )
