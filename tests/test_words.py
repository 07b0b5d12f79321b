"""What users read names the papers by their authors and never uses the
project's own words for them ("seed 000", "held out")."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import click
import pytest
from click.testing import CliRunner

from cellsim.experiments import all_experiments
from cellsim.published import PAPERS, cite, plain
from cellsim.tools.cli import cli

PROJECT_WORDS = re.compile(r"[Ss]eed 00\d|[Ss]eeds 00\d|[Hh]eld[- ]out")
ROOT = Path(__file__).resolve().parent.parent


def _out(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["run", "--help"],
        ["machines"],
        *[["run", e.name, "--help"] for e in all_experiments()],
    ],
)
def test_help_and_tables_cite_papers_by_authors(args: list[str]) -> None:
    text = _out(*args)
    assert not PROJECT_WORDS.search(text), PROJECT_WORDS.search(text)


def test_experiment_help_gives_the_full_reference() -> None:
    text = " ".join(_out("run", "dma-latency", "--help").split())
    assert (
        'M. Kistler, M. Perrone, F. Petrini, "Cell Multiprocessor Communication Network: Built for Speed"'
        in text
    )
    assert "IEEE Micro" in text and "2006" in text


def test_every_paper_has_a_citation() -> None:
    assert sorted(PAPERS) == ["000", "001", "002", "003", "004"]
    for key, paper in PAPERS.items():
        assert paper.title and paper.authors and paper.venue and paper.year > 2000
        assert cite(key).startswith(paper.short)
    assert plain("seed 002's blade, seed 7") == "Jiménez-González et al. 2007's blade, seed 7"


def _commands(group: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    if isinstance(group, click.Group):
        for name, sub in group.commands.items():
            yield from _commands(sub, (*path, name))


@pytest.mark.parametrize("path", list(_commands(cli)), ids=lambda p: " ".join(p) or "cellsim")
def test_every_commands_help_cites_papers_by_authors(path: tuple[str, ...]) -> None:
    text = _out(*path, "--help")
    assert not PROJECT_WORDS.search(text), PROJECT_WORDS.search(text)


@pytest.mark.parametrize(
    "doc", sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]), ids=lambda p: p.name
)
def test_the_docs_cite_papers_by_authors(doc: Path) -> None:
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        assert not PROJECT_WORDS.search(line), f"{doc.name}:{n}: {line}"


def _modules(names: list[str]) -> Iterator[ModuleType]:
    """The modules named, and every submodule of those that are packages."""
    for name in names:
        module = importlib.import_module(name)
        yield module
        for info in pkgutil.walk_packages(getattr(module, "__path__", []), prefix=f"{name}."):
            yield importlib.import_module(info.name)


def _docstrings(module: ModuleType) -> Iterator[tuple[str, str]]:
    """The docstrings of a module, of the public classes and functions it defines, and of
    their public methods and properties."""
    yield module.__name__, inspect.getdoc(module) or ""
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield f"{module.__name__}.{name}", inspect.getdoc(obj) or ""
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_"):
                    yield f"{module.__name__}.{name}.{attr}", inspect.getdoc(member) or ""


def test_the_api_references_docstrings_cite_papers_by_authors() -> None:
    # the modules docs/api.md renders (mkdocstrings), with their submodules
    names = re.findall(r"^::: ([\w.]+)", (ROOT / "docs" / "api.md").read_text(), re.M)
    assert len(names) > 10, names
    checked = 0
    for module in _modules(names):
        for name, doc in _docstrings(module):
            checked += 1
            assert not PROJECT_WORDS.search(doc), f"{name}: {PROJECT_WORDS.search(doc)}"
    assert checked > 300, checked
