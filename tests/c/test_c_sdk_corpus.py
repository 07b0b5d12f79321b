"""The corpus of examples/c-sdk (issue 36): small programs in the styles real
Cell code was written in (SDK tutorial projects with their make.footer
Makefiles, book-style pthread fan-out with events, mailbox streams, user
registers, condition variables, stack buffers), each built as its author
would build it (``cellsim make`` on its Makefile, or the one line in
``cc.args``) and run: its output and final cycle are golden (``expected.out``).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cellsim.tools.cli import cli

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "c-sdk"
NAMES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.out").exists())


def _build(name: str, out: Path) -> Path:
    """Builds example ``name`` into ``out/name`` the way its author would."""
    src = CORPUS / name
    app = out / name
    if (src / "Makefile").exists():
        args = ["make", str(src), "-o", str(app)]
    else:
        words = (src / "cc.args").read_text().split()
        # cc.args is written for the example's directory: its file names are relative to it
        args = ["cc", *[w if w.startswith("-") else _in(src, w) for w in words], "-o", str(app)]
    cli.main(args, standalone_mode=False)
    return app


def _in(src: Path, word: str) -> str:
    name, sep, path = word.partition("=")
    return f"{name}={src / path}" if sep else str(src / word)


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("c-sdk")
    with ThreadPoolExecutor(2) as pool:  # the compilers run in parallel
        return dict(zip(NAMES, pool.map(lambda n: _build(n, out), NAMES), strict=True))


def test_the_corpus_is_there() -> None:
    assert len(NAMES) >= 12
    assert any((CORPUS / n / "Makefile").exists() for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_corpus_program_prints_its_golden_output(
    name: str, apps: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    capfd.readouterr()  # the build's own lines
    code = cli.main(["exec", str(apps[name])], standalone_mode=False)
    out = capfd.readouterr()
    text = out.out + out.err
    if os.environ.get("CELLSIM_UPDATE_GOLDEN"):
        (CORPUS / name / "expected.out").write_text(text)
    assert code == 0, out.err
    assert text == (CORPUS / name / "expected.out").read_text()
