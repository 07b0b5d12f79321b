"""Helpers of the command-line tests (tests/ and its packages import it): the ``cellsim``
command run in this process, and what a user must see when it refuses its input."""

from __future__ import annotations

from click.testing import CliRunner, Result

from cellsim.tools.cli import cli


def invoke(*args: str, stdin: str | None = None) -> Result:
    """``cellsim ARGS`` with ``stdin`` as its input; an exception inside it is not caught."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, input=stdin)


def one_error_line(r: Result, *words: str, status: int | None = 2) -> str:
    """The command failed with exit status ``status`` (2, a usage error, by click's convention;
    ``None``: any but 0) and told why in one line on stderr, ``error: ...``, that names each
    of ``words``: no traceback, nothing on stdout. Returns the line."""
    if status is None:
        assert r.exit_code != 0, r.output
    else:
        assert r.exit_code == status, r.output
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert r.stdout == "" and "Traceback" not in r.output, r.output
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]
