"""mpi4py's own test suite under ``cellsim mpirun``: how much of the MPI-1
surface an unmodified mpi4py program finds.

Fetches the source distribution of the mpi4py version whose API cellsim.mpi
mirrors (``pip download mpi4py==VERSION --no-binary :all: --no-deps`` into a
cache directory; nothing of it is kept in the repository), and runs the test
modules that concern what cellsim.mpi implements (point-to-point and
collectives with buffers and with objects, communicators, groups, datatypes,
requests, status, topologies) under ``cellsim mpirun -n 1/2/4/8``. Prints a
table (module, ranks, tests run, passed, failed, skipped) and the failure
reasons grouped, most frequent first.

Each module runs as ``cellsim mpirun -n N`` of a small driver placed beside
the tests (so the tests' helper modules import as under ``python``): every
rank runs every test and reports each one as it ends. A test passes if it
passed on every rank, fails if it failed on any. A run that stops (a
deadlock, a rank that raised outside a test, a time-out) marks the test it
stopped in as failed with mpirun's reason and starts again after it.

    python benches/mpi4py_suite.py [--ranks 1 2 4 8] [--protocol direct] [--modules p2p_buf ...]
                                   [--version 3.1.6] [--cache DIR] [--json PATH] [--timeout S]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

VERSION = "3.1.6"
"""The mpi4py release whose API cellsim.mpi mirrors (its stand-in reports it)."""

MODULES = (
    "p2p_buf",
    "p2p_obj",
    "cco_buf",
    "cco_vec",
    "cco_obj",
    "comm",
    "group",
    "datatype",
    "request",
    "status",
    "comm_topo",
    "op",
    "msgzero",
)
"""mpi4py's test modules on the MPI-1 surface (``test_<name>.py``)."""

DRIVER = '''\
"""Runs one mpi4py test module on every rank and reports each test as it ends."""
import importlib
import json
import sys
import time
import unittest

from mpi4py import MPI

module = importlib.import_module(sys.argv[1])
skip = set(json.loads(open(sys.argv[2]).read())) if len(sys.argv) > 2 else set()


def flat(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flat(t)
        else:
            yield t


def reason(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "?"


rank = MPI.COMM_WORLD.Get_rank()
for test in flat(unittest.defaultTestLoader.loadTestsFromModule(module)):
    if test.id() in skip:
        continue
    result = unittest.TestResult()
    t0 = time.perf_counter()
    test(result)
    took = time.perf_counter() - t0
    if result.errors or result.failures:
        outcome, why = "fail", reason((result.errors + result.failures)[0][1])
    elif any(t is test for t, _ in result.skipped):
        outcome, why = "skip", result.skipped[0][1]
    else:
        outcome, why = "pass", ""
    record = {"test": test.id(), "rank": rank, "outcome": outcome, "why": why, "seconds": round(took, 3)}
    print("@@SUITE " + json.dumps(record))
    sys.stdout.flush()
'''
DRIVER_NAME = "_cellsim_suite_driver.py"
MARK = re.compile(r"^\[(\d+)\] @@SUITE (.*)$")


def fetch(version: str, cache: Path) -> Path:
    """mpi4py's test directory of ``version`` (downloaded once into ``cache``)."""
    tests = cache / f"mpi4py-{version}" / "test"
    if tests.is_dir():
        return tests
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", f"mpi4py=={version}", "--no-binary", ":all:",
         "--no-deps", "-q", "-d", str(cache)],
        check=True,
    )  # fmt: skip
    with tarfile.open(cache / f"mpi4py-{version}.tar.gz") as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(f"mpi4py-{version}/test/")]
        tar.extractall(cache, members=members, filter="data")
    return tests


def mpirun(
    tests: Path, module: str, n: int, protocol: str, skip: list[str], timeout: float
) -> tuple[dict[str, dict[int, tuple[str, str]]], str]:
    """One ``cellsim mpirun`` of the driver: what each rank reported per test,
    and why the run stopped ("" if it ended normally)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(skip, f)
    cmd = [sys.executable, "-m", "cellsim.tools.cli", "mpirun", "-n", str(n), "--protocol", protocol, "-q",
           DRIVER_NAME, f"test_{module}", f.name]  # fmt: skip
    stopped = ""
    try:
        p = subprocess.run(cmd, cwd=tests, capture_output=True, text=True, timeout=timeout)
        out, err, code = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, code = "", -1
        stopped = f"time-out: the run took more than {timeout:.0f} s of host time"
    finally:
        os.unlink(f.name)
    seen: dict[str, dict[int, tuple[str, str]]] = {}
    for line in out.splitlines():
        m = MARK.match(line)
        if m:
            rec = json.loads(m.group(2))
            seen.setdefault(rec["test"], {})[int(m.group(1))] = (rec["outcome"], rec["why"])
    if code and not stopped:
        tail = [ln for ln in err.splitlines() if ln.startswith("mpirun:") or "Error" in ln]
        stopped = (tail[-1] if tail else f"exit status {code}").removeprefix("mpirun: ")
    return seen, stopped


def test_ids(tests: Path, module: str) -> list[str]:
    """The module's tests, in the order the driver runs them (from a 1-rank
    run that reports every test)."""
    seen, _ = mpirun(tests, module, 1, "direct", [], 600)
    return list(seen)


def run_module(tests: Path, module: str, n: int, protocol: str, timeout: float) -> dict[str, Any]:
    """Every test of ``module`` on ``n`` ranks: outcome and reason per test."""
    results: dict[str, tuple[str, str]] = {}
    restarts: list[str] = []
    order: list[str] = []
    t0 = time.perf_counter()
    while True:
        seen, stopped = mpirun(tests, module, n, protocol, list(results), timeout)
        for t in seen:
            if t not in order:
                order.append(t)
        for t, by_rank in seen.items():
            if len(by_rank) == n:
                results[t] = combine(by_rank)
        if not stopped:
            break
        # the run stopped inside the first test that not every rank reported
        pending = [t for t in order if t not in results]
        culprit = pending[0] if pending else None
        if culprit is None:
            if not seen:
                results["<module>"] = ("fail", f"run stopped before any test ended: {stopped}")
                break
            culprit = next_test(tests, module, results)
            if culprit is None:
                break
        results[culprit] = ("fail", f"run stopped: {stopped}")
        restarts.append(culprit)
        if len(restarts) > 60:
            break
    return {"results": results, "restarts": restarts, "seconds": time.perf_counter() - t0}


_IDS: dict[str, list[str]] = {}


def next_test(tests: Path, module: str, done: dict[str, Any]) -> str | None:
    """The first test not yet done (the run stopped before reporting any)."""
    if module not in _IDS:
        _IDS[module] = test_ids(tests, module)
    return next((t for t in _IDS[module] if t not in done), None)


def combine(by_rank: dict[int, tuple[str, str]]) -> tuple[str, str]:
    """Fails if it failed on any rank (the lowest's reason); skipped if skipped everywhere."""
    for r in sorted(by_rank):
        if by_rank[r][0] == "fail":
            return "fail", by_rank[r][1]
    if all(o == "skip" for o, _ in by_rank.values()):
        return "skip", next(iter(by_rank.values()))[1]
    return "pass", ""


def group(reason: str) -> str:
    """A failure reason with its varying details (numbers, addresses) masked."""
    r = re.sub(r"0x[0-9a-f]+", "0x…", reason)
    r = re.sub(r"(?<![A-Za-z_])-?\d+(\.\d+)?", "N", r)
    return r[:150]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default=VERSION, help="mpi4py release to fetch (default %(default)s)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--protocol", default="direct", choices=["direct", "kumar"])
    ap.add_argument("--modules", nargs="+", default=list(MODULES), help="test modules (without test_)")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cellsim" / "mpi4py"
    ap.add_argument("--cache", type=Path, default=cache, help="where the sdist goes (default %(default)s)")
    ap.add_argument(
        "--timeout", type=float, default=1200, help="host seconds per mpirun (default %(default)s)"
    )
    ap.add_argument("--json", type=Path, help="write every test's outcome to this file")
    ap.add_argument("--reasons", type=int, default=40, help="how many failure groups to print")
    args = ap.parse_args()

    tests = fetch(args.version, args.cache)
    (tests / DRIVER_NAME).write_text(DRIVER)
    rows: list[dict[str, Any]] = []
    print(f"mpi4py {args.version} test suite under cellsim mpirun, protocol {args.protocol}")
    head = ("module", "ranks", "run", "passed", "failed", "skipped", "stops", "host s")
    print(f"{head[0]:<12} " + " ".join(f"{h:>{max(5, len(h))}}" for h in head[1:]))
    for module in args.modules:
        for n in args.ranks:
            r = run_module(tests, module, n, args.protocol, args.timeout)
            c = Counter(o for t, (o, _) in r["results"].items() if t != "<module>")
            row = {"module": module, "ranks": n, "run": sum(c.values()), "passed": c["pass"],
                   "failed": c["fail"], "skipped": c["skip"], "stops": len(r["restarts"]),
                   "seconds": round(r["seconds"], 1), "results": r["results"]}  # fmt: skip
            rows.append(row)
            note = "  (no test started: see the reasons)" if "<module>" in r["results"] else ""
            print(
                f"{module:<12} {n:>5} {row['run']:>5} {row['passed']:>6} {row['failed']:>6} "
                f"{row['skipped']:>7} {row['stops']:>5} {row['seconds']:>7.1f}{note}",
                flush=True,
            )
    tot = {k: sum(r[k] for r in rows) for k in ("run", "passed", "failed", "skipped", "stops", "seconds")}
    print(
        f"{'total':<12} {'':>5} {tot['run']:>5} {tot['passed']:>6} {tot['failed']:>6} {tot['skipped']:>7} "
        f"{tot['stops']:>5} {tot['seconds']:>7.1f}"
    )
    reasons: Counter[str] = Counter()
    example: dict[str, str] = {}
    for row in rows:
        for test, (outcome, why) in row["results"].items():
            if outcome == "fail":
                g = group(why)
                reasons[g] += 1
                example.setdefault(g, f"{test} (-n {row['ranks']})")
    if reasons:
        print(f"\nfailure reasons ({len(reasons)} groups; count, reason, first test):")
        for g, k in reasons.most_common(args.reasons):
            print(f"{k:>5}  {g}\n       e.g. {example[g]}")
    if args.json:
        everything = {"version": args.version, "protocol": args.protocol, "rows": rows}
        args.json.write_text(json.dumps(everything, indent=1))


if __name__ == "__main__":
    main()
