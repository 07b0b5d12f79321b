"""Chrome/Perfetto traces: the file loads, names its tracks and never overlaps slices on one track."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

from click.testing import CliRunner

from cellsim import Machine
from cellsim.cli import cli
from cellsim.kernels import load_dma_bench
from cellsim.ppe import spe_context_create, spe_context_run, spe_in_mbox_write, spe_program_load
from cellsim.spu import spu_read_in_mbox


def traced_run(tmp_path: Path) -> dict:
    m = Machine("qs20", seed=1, trace=True)
    for s in range(4):
        load_dma_bench(
            m, s, put=s % 2 == 0, ea=Machine.ls_ea((s + 1) % 4) + 0x10000, size=4096, batch=2, count=8
        )
    path = tmp_path / "t.json"
    m.run()
    m.write_trace(str(path))
    return json.loads(path.read_text())


def test_trace_has_spe_and_ring_tracks(tmp_path: Path) -> None:
    doc = traced_run(tmp_path)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"SPE 0", "SPE 3"} <= names
    assert any(n.startswith("EIB ring") for n in names)
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert any(e["name"].startswith("mfc_get") for e in slices)
    assert any("->" in e["name"] for e in slices), "bus transfers"
    assert doc["otherData"]["dropped"] == 0


def test_slices_on_one_track_never_overlap(tmp_path: Path) -> None:
    doc = traced_run(tmp_path)
    tracks = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for key, spans in tracks.items():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end - 1e-9, f"overlap on track {key}"


def test_mailbox_waits_and_deliveries_are_traced(tmp_path: Path) -> None:
    def spe(speid: int, argp: int, envp: int) -> int:
        return spu_read_in_mbox()

    def ppe() -> None:
        from cellsim.ppe import pthread_create, pthread_join

        ctx = spe_context_create()
        spe_program_load(ctx, spe)
        t = pthread_create(spe_context_run, ctx)
        from cellsim.ppe import compute

        compute(50_000)
        spe_in_mbox_write(ctx, [7])
        pthread_join(t)

    m = Machine("qs20", seed=1, trace=True)
    m.run(ppe)
    path = tmp_path / "mbox.json"
    m.write_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e["name"].startswith("in_mbox <- 0x7") for e in events)
    assert any(e["name"] == "wait: spu_read_in_mbox()" for e in events)


def test_cli_trace_flag_writes_a_file(tmp_path: Path) -> None:
    out = tmp_path / "cli.json"
    r = CliRunner().invoke(cli, ["run", "dma-latency", "--sizes", "128", "--trace", str(out), "--json", "-"])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["traceEvents"]


SCRIPT = """
import sys
from cellsim import Machine
from cellsim.spu import ls_alloc, mfc_get, mfc_read_tag_status_all, mfc_write_tag_mask

def prog(speid, argp, envp):
    buf = ls_alloc(4096, align=128)
    mfc_get(buf, Machine.ls_ea(1) + 0x10000, 4096, 0)
    mfc_write_tag_mask(1)
    mfc_read_tag_status_all()

m = Machine("qs20", seed=0)
m.load(0, prog)
m.run()
print("ran", sys.argv[1:])
"""


def test_cli_trace_runs_a_script_and_traces_its_machine(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    out = tmp_path / "prog.json"
    r = CliRunner().invoke(cli, ["trace", "-o", str(out), str(script), "--flag", "x"])
    assert r.exit_code == 0, r.output
    assert "ran ['--flag', 'x']" in r.output
    doc = json.loads(out.read_text())
    names = {e["name"] for e in doc["traceEvents"]}
    assert doc["otherData"]["records"] > 0 and any("get" in n for n in names), names


def test_cli_trace_says_when_no_machine_was_built(tmp_path: Path) -> None:
    script = tmp_path / "empty.py"
    script.write_text("print('hello')\n")
    r = CliRunner().invoke(cli, ["trace", "-o", str(tmp_path / "x.json"), str(script)])
    assert r.exit_code != 0
    assert "built no cellsim.Machine" in r.output
