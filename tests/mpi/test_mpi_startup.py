"""``cellsim mpirun`` starts a program as ``python`` does: a script, ``-m
MODULE`` or ``-c CODE``, with sys.argv, sys.path[0], __file__ and
__name__ as under python, helper modules and unittest per rank."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import Result
from mpi_helpers import mpirun_command

REPORT = (
    "import sys\nprint(sys.argv, __name__, __file__ if '__file__' in dir() else None, repr(sys.path[0]))\n"
)


def lines(r: Result, rank: int, stream: str = "stdout") -> list[str]:
    text = r.stdout if stream == "stdout" else r.stderr
    return [ln[len(f"[{rank}] ") :] for ln in text.splitlines() if ln.startswith(f"[{rank}] ")]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with a package and helper modules; the working directory."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helper.py").write_text("from mpi4py import MPI\nrank = MPI.COMM_WORLD.rank\n")
    (tmp_path / "pkg" / "mod.py").write_text(
        "import sys\nfrom . import helper\nfrom mpi4py import MPI\n"
        "print(sys.argv[1:], __name__, __package__, __file__, repr(sys.path[0]),\n"
        "      helper.rank == MPI.COMM_WORLD.rank)\n"
    )
    (tmp_path / "pkg" / "__main__.py").write_text("from .helper import rank\nprint('main of pkg', rank)\n")
    (tmp_path / "helper.py").write_text("from mpi4py import MPI\nrank = MPI.COMM_WORLD.rank\nseen = []\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_script_starts_as_under_python(project: Path) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "prog.py").write_text(REPORT)
    r = mpirun_command("-n", "2", "-q", "sub/prog.py", "a", "-q", "--x=1")
    assert r.exit_code == 0, r.output
    want = f"['sub/prog.py', 'a', '-q', '--x=1'] __main__ {project / 'sub' / 'prog.py'} '{project / 'sub'}'"
    assert lines(r, 0) == [want] and lines(r, 1) == [want]


def test_dash_m_and_dash_c(project: Path) -> None:
    r = mpirun_command("-n", "3", "-q", "-m", "pkg.mod", "x", "-n", "5")
    assert r.exit_code == 0, r.output
    mod = project / "pkg" / "mod.py"
    assert lines(r, 2) == [f"['x', '-n', '5'] __main__ pkg {mod} '{os.getcwd()}' True"]
    r = mpirun_command("-n", "2", "-q", "-m", "pkg")
    assert r.exit_code == 0, r.output
    assert lines(r, 1) == ["main of pkg 1"]
    r = mpirun_command(
        "-n", "2", "-q", "-c", REPORT + "from mpi4py import MPI\nprint(MPI.COMM_WORLD.rank)", "y"
    )
    assert r.exit_code == 0, r.output
    assert lines(r, 1) == ["['-c', 'y'] __main__ None ''", "1"]


def test_helper_modules_are_per_rank(project: Path) -> None:
    (project / "prog.py").write_text(
        "import helper\nfrom mpi4py import MPI\nhelper.seen.append(MPI.COMM_WORLD.rank)\n"
        "MPI.COMM_WORLD.Barrier()\nprint(helper.rank, helper.seen)\n"
    )
    r = mpirun_command("-n", "4", "-q", "prog.py")
    assert r.exit_code == 0, r.output
    assert sorted(r.stdout.splitlines()) == [f"[{i}] {i} [{i}]" for i in range(4)]
    assert "helper" not in sys.modules or not hasattr(sys.modules["helper"], "seen")


def test_unittest_main_runs_each_ranks_tests(project: Path) -> None:
    (project / "test_prog.py").write_text(
        "import unittest\nimport helper\nfrom mpi4py import MPI\n\n"
        "class Payload:\n    def __init__(self, r):\n        self.r = r\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_rank(self):\n        self.assertEqual(helper.rank, MPI.COMM_WORLD.rank)\n"
        "    def test_objects_of_main(self):\n"
        "        got = MPI.COMM_WORLD.allgather(Payload(MPI.COMM_WORLD.rank))\n"
        "        self.assertEqual([p.r for p in got], list(range(MPI.COMM_WORLD.size)))\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    )
    r = mpirun_command("-n", "3", "-q", "test_prog.py", "-v")
    assert r.exit_code == 0, r.output
    for rank in range(3):
        assert "test_objects_of_main (__main__.T.test_objects_of_main) ... ok" in lines(r, rank, "stderr")
        assert "Ran 2 tests" in "\n".join(lines(r, rank, "stderr"))


def test_failing_unittest_gives_the_status(project: Path) -> None:
    (project / "t.py").write_text(
        "import unittest\nfrom mpi4py import MPI\n\nclass T(unittest.TestCase):\n"
        "    def test_no(self):\n        self.assertEqual(MPI.COMM_WORLD.rank, 0)\n\n"
        "unittest.main()\n"
    )
    r = mpirun_command("-n", "2", "t.py")
    assert r.exit_code == 1
    assert "FAILED (failures=1)" in r.stderr


def test_bad_program_forms_are_one_line(project: Path) -> None:
    for args in (["-m", "no_such_module"], ["-c", "def ("], ["nope.py"], []):
        r = mpirun_command("-n", "2", *args)
        assert r.exit_code != 0
        assert r.stderr.startswith(("error: ", "Usage:")) and "Traceback" not in r.stderr, r.stderr
