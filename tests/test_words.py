"""What users read names the papers by their authors and never uses the
project's own words for them ("seed 000", "held out")."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from cellsim.experiments import all_experiments
from cellsim.published import PAPERS, cite, plain
from cellsim.tools.cli import cli

PROJECT_WORDS = re.compile(r"[Ss]eed 00\d|[Hh]eld[- ]out")


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
