"""The README's first command, run as a newcomer runs it: on a clean clone, in a
fresh virtual environment, exactly as the README writes it (narrowed to one
experiment). It once failed at once because the report's libraries were an
extra the command did not install."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_env import UNOPTIMISED_ENGINE

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

# Narrowed to one short experiment: the point is the install and the main job's path
# (tables, figures, report), not the experiments' length.
NARROWED = "--only dma-latency"


def readme_first_command() -> str:
    """The first shell block under the README's "Two commands"."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1]
    block = re.search(r"```sh\n(.*?)\n```", section, re.S)
    assert block, "the README's 'Two commands' section has no sh block"
    return block.group(1).strip()


def clean_clone(dest: Path) -> None:
    """A clone of this repository with the working tree's tracked changes on top,
    so that a developer tests what they are about to commit (CI's clone is clean)."""
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(dest)], check=True)
    changed = subprocess.run(
        ["git", "diff", "--name-only", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for name in changed:
        src = ROOT / name
        if src.exists():
            shutil.copy2(src, dest / name)
        else:
            (dest / name).unlink(missing_ok=True)


def test_the_readme_names_the_main_command() -> None:
    assert readme_first_command() == "pip install . && cellsim reproduce"


def test_the_readme_main_command_runs_on_a_clean_clone_in_a_fresh_venv(tmp_path: Path) -> None:
    if shutil.which("git") is None or shutil.which("cargo") is None:
        pytest.skip("needs git and cargo")
    clone = tmp_path / "cellsim"
    clean_clone(clone)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(UNOPTIMISED_ENGINE)
    command = f"{readme_first_command()} {NARROWED}"
    p = subprocess.run(
        ["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=1100, check=False
    )
    assert p.returncode == 0, f"{command}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    report = clone / "cellsim-results" / "report.html"
    assert report.stat().st_size > 0
    assert (clone / "cellsim-results" / "dma-latency.json").exists()
    assert "published (Kistler et al. 2006) vs simulated" in p.stdout
    # the installed package is no git checkout: the report names the commit its engine was built from
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=clone, capture_output=True, text=True
    )
    assert f"<dd>{head.stdout.strip()}" in report.read_text(), "the commit recorded at build time"
    assert "[1/1] dma-latency: " in p.stdout, "a line per finished experiment on a pipe"
