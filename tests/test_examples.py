"""Golden runs: every example with a ``.out`` file prints exactly that.

The outputs hold simulated times only, so a same-seed rerun matches byte for
byte; a change in the model shows up here as a diff to review (regenerate
with ``python examples/NAME.py > examples/NAME.out`` when it is intended).
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
GOLDEN = sorted(p for p in EXAMPLES.glob("*.py") if p.with_suffix(".out").exists())


@pytest.mark.parametrize("script", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_example_prints_its_golden_output(script: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=240
    )
    want = script.with_suffix(".out").read_text()
    if out.stdout != want:
        diff = "".join(
            difflib.unified_diff(want.splitlines(True), out.stdout.splitlines(True), "golden", "now")
        )
        pytest.fail(f"{script.name} output changed:\n{diff}")


def test_there_are_golden_examples() -> None:
    assert GOLDEN, "no examples/*.out files found"
