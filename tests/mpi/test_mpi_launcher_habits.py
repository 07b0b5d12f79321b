"""`cellsim mpirun` as people type launchers (issue 34, items 5 and 6):
`-np 4`, a leading `python`, `--limit` for traces, MPI-call spans in the
trace, gzip traces, and mpi4py's constructor forms of communicators."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from mpi_helpers import mpirun_command

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mpi"


@pytest.mark.parametrize(
    "launch",
    [
        ["-np", "4"],
        ["-np=4"],
        ["-n", "4", "python"],
        ["-np", "4", "python3", "-u"],
        ["-n", "4", "/usr/bin/python3.11"],
    ],
)
def test_launchers_as_people_type_them(launch: list[str]) -> None:
    r = mpirun_command(*launch, str(EXAMPLES / "hello.py"))
    assert r.exit_code == 0, r.output
    assert sorted(ln.split()[0] for ln in r.stdout.splitlines()) == ["[0]", "[1]", "[2]", "[3]"]


def test_a_leading_python_with_a_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hellomod.py").write_text("from mpi4py import MPI\nprint(MPI.COMM_WORLD.Get_size())\n")
    monkeypatch.chdir(tmp_path)
    r = mpirun_command("-np", "2", "python", "-m", "hellomod")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["[0] 2", "[1] 2"]


def _trace(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc: dict = json.load(f)
    return doc


def test_mpi_calls_are_spans_on_each_ranks_track(tmp_path: Path) -> None:
    out = tmp_path / "pp.json.gz"
    r = mpirun_command("-np", "2", "--trace", str(out), "python", str(EXAMPLES / "pingpong.py"), "2048")
    assert r.exit_code == 0, r.output
    assert out.read_bytes()[:2] == b"\x1f\x8b", "gzip, since the name ends in .gz"
    doc = _trace(out)
    tracks = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"
    }
    spans = [e for e in doc["traceEvents"] if e.get("cat") == "mpi"]
    sends = [e for e in spans if e["name"] == "MPI Send"]
    assert sends and all(e["ph"] == "X" and e["dur"] > 0 for e in sends)
    assert {tuple(sorted(e["args"].items())) for e in sends} == {
        (("bytes", 2048), ("peer", 1), ("tag", 1)),
        (("bytes", 2048), ("peer", 0), ("tag", 1)),
    }
    names = {tracks[(e["pid"], e["tid"])] for e in spans}
    assert names == {"MPI rank 0, SPE 0 (phys 7, chip 0)", "MPI rank 1, SPE 1 (phys 2, chip 0)"}


def test_mpirun_limit_keeps_that_many_records(tmp_path: Path) -> None:
    out = tmp_path / "pp.json"
    r = mpirun_command(
        "-n", "2", "--trace", str(out), "--limit", "500", str(EXAMPLES / "pingpong.py"), "2048"
    )
    assert r.exit_code == 0, r.output
    doc = _trace(out)
    assert doc["otherData"]["dropped"] > 0 and "dropped past the limit (--limit)" in r.stderr
    slices = [e for e in doc["traceEvents"] if e.get("ph") in ("X", "i") and e.get("cat") != "mpi"]
    assert len(slices) == 500


SUBCLASSES = """
from mpi4py import MPI

class A(MPI.Intracomm):                      # mpi4py's own form: the handle is made in __new__
    def __new__(cls, comm=None):
        return super().__new__(cls, comm)

class B(MPI.Intracomm):                      # an __init__ of its own, with more arguments
    def __init__(self, comm, label):
        super().__init__(comm)
        self.label = label

class C(MPI.Intracomm):
    def __new__(cls, comm, label):
        self = super().__new__(cls, comm)
        self.label = label
        return self

a, b, c = A(MPI.COMM_WORLD), B(MPI.COMM_WORLD, "b"), C(MPI.COMM_SELF, "c")
s = MPI.Intracomm(MPI.COMM_SELF)
assert a == MPI.COMM_WORLD and A() == MPI.COMM_NULL and s == MPI.COMM_SELF and c == MPI.COMM_SELF
print(a.allreduce(1), b.label, b.bcast(b.Get_rank()), c.label, c.Get_size(), s.Get_size())
try:
    MPI.Intracomm(MPI.GROUP_EMPTY)
except TypeError as e:
    print("TypeError", "expected a Comm" in str(e))
"""


def test_every_mpi4py_constructor_form_of_a_communicator(tmp_path: Path) -> None:
    prog = tmp_path / "sub.py"
    prog.write_text(SUBCLASSES)
    r = mpirun_command("-n", "2", str(prog))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        "[0] 2 b 0 c 1 1",
        "[0] TypeError True",
        "[1] 2 b 0 c 1 1",
        "[1] TypeError True",
    ]
