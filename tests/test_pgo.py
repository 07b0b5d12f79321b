"""`make pgo` (scripts/pgo.sh) is not run by the suite (three builds); what it
trains on must still exist: the script parses, its files are there, and its
`cellsim` command lines are ones the CLI accepts."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from click.testing import CliRunner

from cellsim.tools.cli import cli

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "pgo.sh"


def _training_commands() -> list[list[str]]:
    """The `$PY ...` lines of the script, split as the shell would (comments and redirections off)."""
    lines = [ln.split("#")[0].strip() for ln in SCRIPT.read_text().splitlines()]
    return [shlex.split(re.sub(r">\S+", "", ln))[1:] for ln in lines if ln.startswith("$PY ")]


def test_the_script_parses() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_what_it_trains_on_exists() -> None:
    commands = _training_commands()
    assert len(commands) >= 4, commands
    for args in commands:
        if args[:2] == ["-m", "cellsim.tools.cli"]:
            r = CliRunner().invoke(cli, [*args[2:], "--help"])
            assert r.exit_code == 0, f"{args}: {r.output}"
        elif args[0] != "-c":
            assert (ROOT / args[0]).is_file(), args
