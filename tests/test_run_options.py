"""A run's options (``--time-limit``, ``--exact-reference``, ``--trace``) are a value that
travels with the run's ``MachineSpec``: every machine built from it applies them, a copy sent
to another process keeps them (but never traces), and no process-wide default is left."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from cellsim import Machine, RunawayError
from cellsim.experiments import get
from cellsim.spec import MachineSpec, RunOptions
from cellsim.spu import compute
from cellsim.trace import Capture


def _forever(speid: int, argp: int, envp: int) -> None:
    while True:
        compute(10_000)


def test_every_machine_of_the_spec_has_its_time_limit() -> None:
    spec = MachineSpec.of("qs20").running(RunOptions(time_limit_ns=50_000))
    for m in (spec.machine(), Machine(spec), Machine(spec, time_limit_ns=1e9)):
        m.load(0, _forever)
        with pytest.raises(RunawayError, match="simulated-time limit"):
            m.run()


def test_the_options_change_neither_the_machine_nor_another_spec() -> None:
    spec = MachineSpec.of("qs20-1chip")
    with_options = spec.running(RunOptions(exact_reference=True))
    assert with_options == spec and with_options.fingerprint == spec.fingerprint
    assert spec.run == RunOptions() and MachineSpec.of("qs20-1chip").run == RunOptions()
    assert with_options.with_overrides(["eib.arbiter_window=2"]).run.exact_reference


def test_a_copy_in_another_process_keeps_the_options_and_never_traces(tmp_path: Path) -> None:
    capture = Capture(tmp_path / "t.json")
    spec = MachineSpec.of("qs20").running(RunOptions(time_limit_ns=1e6, exact_reference=True, trace=capture))
    copy = pickle.loads(pickle.dumps(spec))
    assert copy.run.time_limit_ns == 1e6 and copy.run.exact_reference
    assert copy.run.trace is not None and copy.run.trace.take(copy.machine()) is None
    assert capture.writer is None  # the original still traces its first machine


def test_the_trace_is_of_the_first_machine_built_with_the_options(tmp_path: Path) -> None:
    capture = Capture(tmp_path / "t.json")
    records = get("dma-latency").run(ops=["get"], targets=["ls"], sizes=[128, 256], count=8, trace=capture)
    stats = capture.close()
    assert stats is not None and stats.records > 0
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["otherData"]["records"] == stats.records
    assert len(records) == 2


def test_check_dma_travels_with_the_spec_to_another_process() -> None:
    """``--check-dma`` is a run option: a sweep's worker, which does not share this process's
    default, builds checking machines from the spec it is sent (a machine's own argument wins)."""
    spec = MachineSpec.of("qs20-1chip").running(RunOptions(check_dma=True))
    copy = pickle.loads(pickle.dumps(spec))
    assert copy.machine()._dma_checker is not None
    assert Machine(copy, check_dma=False)._dma_checker is None
    assert MachineSpec.of("qs20-1chip").machine()._dma_checker is None
    (setup_spec, *_) = get("dma-latency").settings({"check_dma": True})
    assert setup_spec.run.check_dma
