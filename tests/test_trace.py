"""Chrome/Perfetto traces: the file loads, names its tracks and never overlaps slices on one track."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

from click.testing import CliRunner

from cellsim import Machine
from cellsim.kernels import load_dma_bench
from cellsim.ppe import spe_context_create, spe_context_run, spe_in_mbox_write, spe_program_load
from cellsim.spu import spu_read_in_mbox
from cellsim.tools.cli import cli


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


def _names(doc: dict, what: str) -> set[str]:
    return {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == what}


def test_trace_has_spe_and_ring_tracks(tmp_path: Path) -> None:
    doc = traced_run(tmp_path)
    assert _names(doc, "process_name") == {"chip 0"}  # qs20's default placement: the first chip
    threads = _names(doc, "thread_name")
    phys = Machine("qs20", seed=1).placement[0]
    assert {f"SPE 0 (phys {phys}, chip 0)", f"SPE 0 (phys {phys}, chip 0) MFC slot 0"} <= threads, threads
    assert any(n.startswith("ring 0 (clockwise) transfer") for n in threads)
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert any(e["name"].startswith("mfc_get") for e in slices)
    assert any("->" in e["name"] for e in slices), "bus transfers"
    assert doc["otherData"]["dropped"] == 0


def test_a_blade_has_a_track_group_per_chip(tmp_path: Path) -> None:
    first = [7, 11, 2, 9]
    m = Machine("qs20", seed=1, trace=True, placement=first + [p for p in range(16) if p not in first])
    for s in range(4):
        load_dma_bench(m, s, put=False, ea=int(m.alloc(4096)), size=4096, batch=1, count=2)
    m.run()
    doc = json.loads(Path(m.write_trace(tmp_path / "b.json").path).read_text())
    groups = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert sorted(groups.values()) == ["chip 0", "chip 1"]
    by_name = {e["args"]["name"]: groups[e["pid"]] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert by_name["SPE 1 (phys 11, chip 1)"] == "chip 1"
    assert by_name["SPE 0 (phys 7, chip 0)"] == "chip 0"
    assert any(n.startswith("ring") and g == "chip 1" for n, g in by_name.items()), "chip 1's rings"


def test_slices_carry_args_and_arrows_link_commands_to_transfers(tmp_path: Path) -> None:
    events = traced_run(tmp_path)["traceEvents"]
    dma = next(e for e in events if e["ph"] == "X" and e["name"].startswith("mfc_get"))
    assert dma["args"]["bytes"] == 4096 and {"tag", "ea", "ls"} <= set(dma["args"])
    transfer = next(e for e in events if e["ph"] == "X" and "->" in e["name"])
    assert transfer["args"]["bytes"] == 128 and transfer["args"]["direction"] in (
        "clockwise",
        "counter-clockwise",
    )
    assert {"ring", "spe", "slot"} <= set(transfer["args"])
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and starts.keys() == ends.keys()
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    a = next(iter(starts))
    assert "MFC slot" in names[(starts[a]["pid"], starts[a]["tid"])]
    assert names[(ends[a]["pid"], ends[a]["tid"])].startswith("ring")


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


def test_counter_tracks(tmp_path: Path) -> None:
    counters = {e["name"] for e in traced_run(tmp_path)["traceEvents"] if e["ph"] == "C"}
    assert any(n.startswith("ring ") and n.endswith(" transfers") for n in counters), counters
    phys = Machine("qs20", seed=1).placement[0]
    assert f"SPE 0 (phys {phys}, chip 0) MFC queue depth" in counters


def test_timestamps_are_whole_nanoseconds(tmp_path: Path) -> None:
    for e in traced_run(tmp_path)["traceEvents"]:
        for key in ("ts", "dur"):
            if key in e:
                assert abs(e[key] * 1000 - round(e[key] * 1000)) < 1e-6, e


def test_a_dma_list_slice_shows_the_bytes_moved(tmp_path: Path) -> None:
    from cellsim.spu import ls_alloc, mfc_getl, mfc_list, mfc_read_tag_status_all, mfc_write_tag_mask

    m = Machine("qs20", seed=1, trace=True)
    src = m.alloc(4096)

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = ls_alloc(2048, align=128)
        lst = ls_alloc(64, align=8)
        n = mfc_list(lst, [(512, int(src) + 1024 * i) for i in range(4)])
        mfc_getl(buf, int(src), lst, n, 3)
        mfc_write_tag_mask(1 << 3)
        mfc_read_tag_status_all()

    m.load(0, prog)
    m.run()
    doc = json.loads(Path(m.write_trace(tmp_path / "l.json").path).read_text())
    getl = next(e for e in doc["traceEvents"] if e["name"].startswith("mfc_getl"))
    assert getl["name"] == "mfc_getl 2048 B tag 3"
    assert getl["args"]["bytes"] == 2048 and getl["args"]["list_bytes"] == 32


def test_the_limit_is_kept_and_the_rest_counted(tmp_path: Path) -> None:
    m = Machine("qs20", seed=1, trace=True, trace_limit=50)
    load_dma_bench(m, 0, put=True, ea=int(m.alloc(4096)), size=4096, batch=1, count=16)
    m.run()
    stats = m.write_trace(tmp_path / "lim.json")
    assert stats.records == 50 and stats.dropped > 0
    doc = json.loads(stats.path.read_text())
    assert sum(1 for e in doc["traceEvents"] if e["ph"] in ("X", "i")) == 50
    assert doc["otherData"] == {"machine": "qs20", "seed": 1, "records": 50, "dropped": stats.dropped}


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


def test_cli_trace_honours_limit(tmp_path: Path) -> None:
    """The README's `cellsim trace --limit N`: at most N records in the file."""
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    out = tmp_path / "prog.json"
    r = CliRunner().invoke(cli, ["trace", "--limit", "5", "-o", str(out), str(script)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["otherData"]["records"] == 5 and doc["otherData"]["dropped"] > 0
    assert sum(1 for e in doc["traceEvents"] if e["ph"] in ("X", "i")) == 5
    assert f"wrote {out}: 5 records, {doc['otherData']['dropped']:,} dropped past the limit" in r.stderr


def test_cli_trace_says_when_no_machine_was_built(tmp_path: Path) -> None:
    script = tmp_path / "empty.py"
    script.write_text("print('hello')\n")
    r = CliRunner().invoke(cli, ["trace", "-o", str(tmp_path / "x.json"), str(script)])
    assert r.exit_code != 0
    assert "built no cellsim.Machine" in r.output


def test_an_arrow_goes_from_sndsig_to_the_signal_it_sets(tmp_path: Path) -> None:
    import runpy

    from cellsim.trace import capture

    out = tmp_path / "sig.json"
    with capture(out):
        runpy.run_path(
            str(Path(__file__).parent.parent / "examples" / "signal_gather.py"), run_name="__main__"
        )
    events = json.loads(out.read_text())["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    signals = [e for e in events if e["ph"] == "i" and e["name"].startswith("signal1 <- ")]
    assert signals and all("slot" in e["args"] for e in signals)
    ends = [e for e in events if e["ph"] == "f" and "MFC" not in names[(e["pid"], e["tid"])]]
    assert any(not names[(e["pid"], e["tid"])].startswith("ring") for e in ends), "arrows to SPU tracks"


def test_a_sweeps_worker_processes_never_write_the_trace(tmp_path: Path) -> None:
    """Workers inherit the capture when they fork; the file is the parent's alone."""
    out = tmp_path / "sweep.json"
    r = CliRunner().invoke(
        cli,
        [
            "run",
            "mapping",
            "--machine",
            "ps3",
            "--tasks",
            "3",
            "--transmissions",
            "4",
            "--runs",
            "1",
            "--workers",
            "2",
            "--out",
            str(tmp_path / "s"),
            "--trace",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "holds no records" in r.stderr
    if out.exists():  # the parent's own first machine, which ran nothing: a whole, empty trace
        assert json.loads(out.read_text())["otherData"]["records"] == 0
