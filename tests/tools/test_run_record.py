"""A record of each run (issue 34, item 8): `--out DIR` writes the command,
the seed, the machine as it ran and the stats with units and descriptions;
`cellsim diff` says what changed; results stay out of git."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

from click.testing import CliRunner

from cellsim import Machine
from cellsim.tools.cli import cli
from cellsim.tools.record import STATS, described, diff_runs, resolved_machine, write_record

ROOT = Path(__file__).resolve().parents[2]
PINGPONG = str(ROOT / "examples" / "mpi" / "pingpong.py")


def test_every_stat_has_a_unit_and_a_description() -> None:
    stats = Machine("qs20").stats()
    d = described(stats)
    assert set(stats) <= set(STATS)
    assert all(v["unit"] and v["description"] for v in d.values())


def test_the_machine_as_it_ran_resolves_base_and_overrides(tmp_path: Path) -> None:
    table = resolved_machine("ps3", {"eib.command_phase_bus_cycles": 40})
    assert "base" not in table and table["eib"]["command_phase_bus_cycles"] == 40
    write_record(
        tmp_path, command=["x"], machine="ps3", seed=3, overrides=["eib.command_phase_bus_cycles=40"]
    )
    written = tomllib.loads((tmp_path / "machine.toml").read_text())
    assert written == table
    # the file runs: a machine built from it is the machine with its overrides
    m = Machine(str(tmp_path / "machine.toml"))
    assert m.spe_count == Machine("ps3").spe_count


def test_mpirun_out_writes_a_record_and_diff_names_what_changed(tmp_path: Path) -> None:
    runner = CliRunner()
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, extra in ((a, []), (b, ["--protocol", "kumar"]), (c, [])):
        r = runner.invoke(cli, ["mpirun", "-q", "-n", "2", *extra, "--out", str(out), PINGPONG, "64"])
        assert r.exit_code == 0, r.output
    assert sorted(p.name for p in a.iterdir()) == ["machine.toml", "run.json", "stats.json", "stats.txt"]
    run = json.loads((a / "run.json").read_text())
    assert run["seed"] == 0 and run["machine"] == "qs20" and run["command"][:2] == ["cellsim", "mpirun"]
    stats = json.loads((a / "stats.json").read_text())
    assert stats["transfers"]["unit"] == "transfers" and stats["transfers"]["value"] > 0
    assert "# EIB data transfers over every chip (transfers)" in (a / "stats.txt").read_text()
    lines = diff_runs(a, b)
    assert any(ln.startswith('result protocol: "direct" -> "kumar"') for ln in lines), lines
    assert any(ln.startswith("stat cycles: ") for ln in lines)
    r = runner.invoke(cli, ["diff", str(a), str(b)])
    assert r.exit_code == 1 and "stat transfers" in r.stdout
    r = runner.invoke(cli, ["diff", str(a), str(a)])
    assert r.exit_code == 0 and "no difference" in r.stdout
    assert [ln for ln in diff_runs(a, c) if not ln.startswith("command")] == [], "deterministic"


def test_run_out_records_an_experiments_points(tmp_path: Path) -> None:
    runner = CliRunner()
    for out, seed in ((tmp_path / "a", "0"), (tmp_path / "b", "1")):
        r = runner.invoke(cli, ["run", "dma-latency", "--sizes", "128", "--count", "64", "--seed", seed,
                                "--out", str(out)])  # fmt: skip
        assert r.exit_code == 0, r.output
    assert (tmp_path / "a" / "records.json").is_file()
    lines = diff_runs(tmp_path / "a", tmp_path / "b")
    assert "seed: 0 -> 1" in lines
    r = runner.invoke(cli, ["diff", str(tmp_path), str(tmp_path / "b")])
    assert r.exit_code == 2 and "not a run record" in r.stderr


def test_results_stay_out_of_git() -> None:
    p = subprocess.run(
        ["git", "check-ignore", "-q", "cellsim-results/report.html"],
        cwd=ROOT,
        check=False,
        capture_output=True,
    )
    assert p.returncode == 0, "cellsim reproduce's default folder is ignored by git"
