"""Every output the README and docs/ show is produced by a test (issue 34,
item 4): a ```text block with `$ cellsim ...` lines is run here and must
print what it shows; any other ```text block is marked illustrative (an
`<!-- illustrative: why -->` line before it). The README's MPI outputs had
drifted 2x (ping-pong 1 MB: 82.5 us shown, 166.8 us printed) with nothing
to notice it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cellsim.tools.cli import cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:(<!-- illustrative[^>]*-->)\n[ \t]*)?```(text|console)\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, int, str | None, str]]:
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            line = text[: m.start(2)].count("\n") + 1
            out.append((doc.name, line, m.group(1), m.group(3)))
    return out


SESSIONS = [(f"{name}:{line}", body) for name, line, mark, body in _blocks() if body.startswith("$ ")]


def test_every_text_block_is_an_output_we_run_or_marked_illustrative() -> None:
    unmarked = [
        f"{name}:{line}" for name, line, mark, body in _blocks() if not body.startswith("$ ") and not mark
    ]
    assert not unmarked, (
        f"mark these illustrative (<!-- illustrative: why -->) or show a $ command: {unmarked}"
    )
    assert len(SESSIONS) >= 3


def _commands(body: str) -> list[tuple[list[str], str]]:
    """The `$ cellsim ...` commands of a block, each with the output shown under it."""
    out: list[tuple[list[str], str]] = []
    for chunk in re.split(r"^\$ ", body, flags=re.M)[1:]:
        cmd, _, shown = chunk.partition("\n")
        out.append((shlex.split(cmd), shown))
    return out


@pytest.mark.parametrize(("where", "body"), SESSIONS, ids=[w for w, _ in SESSIONS])
def test_a_shown_output_is_what_the_command_prints(
    where: str, body: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    for argv, shown in _commands(body):
        assert argv[0] == "cellsim", f"{where}: only cellsim commands are run here"
        code = cli.main(argv[1:], prog_name="cellsim", standalone_mode=False)
        got = capfd.readouterr()
        assert code == 0, got.err
        assert got.out + got.err == shown, f"{where}: $ {shlex.join(argv)}"


def _us(v: float) -> str:
    return f"{v:.3f} us" if v < 1 else f"{v:.2f} us" if v < 100 else f"{v:.1f} us"


def pingpong_table() -> str:
    """docs/mpi.md's ping-pong table, from the mpi-pingpong experiment."""
    from cellsim.experiments import mpi_pingpong

    recs = mpi_pingpong.run(sizes=[0, 2048, 65536, 1 << 20], pages=["first-touch"], chips=["one"])
    at = {(r["protocol"], r["size"]): r for r in recs}
    lines = [
        "| size | kumar latency | direct latency | kumar bandwidth | direct bandwidth |",
        "|---|---|---|---|---|",
    ]
    for size, label in ((0, "0 B"), (2048, "2 KB"), (65536, "64 KB"), (1 << 20, "1 MB")):
        k, d = at[("kumar", size)], at[("direct", size)]
        bw = ("—", "—") if size == 0 else (f"{k['bandwidth_gbs']:.2f} GB/s", f"{d['bandwidth_gbs']:.2f} GB/s")
        lines.append(f"| {label} | {_us(k['latency_us'])} | {_us(d['latency_us'])} | {bw[0]} | {bw[1]} |")
    return "\n".join(lines) + "\n"


def test_the_mpi_docs_pingpong_table_is_the_experiments() -> None:
    """docs/mpi.md's Results table had drifted 2x (1 MB direct: 82.5 us shown, 166.7 measured)."""
    doc = (ROOT / "docs" / "mpi.md").read_text()
    assert pingpong_table() in doc, (
        "python -c 'from tests.test_documented_outputs import pingpong_table as t; print(t())'"
    )


def test_the_readme_counter_comment_is_the_examples_golden_output() -> None:
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"# count=(\d+) in ([\d.]+) us simulated", readme)
    assert m, "the README's atomic counter shows its output in a comment"
    golden = (ROOT / "examples" / "atomic_counter.out").read_text()
    assert f"count={m.group(1)}\n" in golden and f"simulated time: {m.group(2)} us" in golden
