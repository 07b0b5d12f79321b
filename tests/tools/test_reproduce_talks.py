"""`cellsim reproduce` talks on any output (issue 34, item 2): a line per
finished experiment on a pipe or a log, a bar with the time remaining on a
terminal, and `--quick`, the whole job at reduced counts with its report
marked as such."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console

from cellsim.experiments import all_experiments
from cellsim.sweep import Work
from cellsim.tools.progress import DELAY_S, RunElapsedColumn, RunProgress, RunRemainingColumn, count
from cellsim.tools.report import QUICK_OPTIONS


def test_a_piped_reproduce_prints_a_line_per_finished_experiment(tmp_path: Path) -> None:
    out = tmp_path / "res"
    p = subprocess.run(
        [sys.executable, "-m", "cellsim.tools.cli", "reproduce", "--quick", "--only", "dma-latency", "--only",
         "latency-hist", "-o", str(out)],
        capture_output=True, text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == f"cellsim reproduce: 2 experiments, quick check (reduced counts), into {out}/"
    done = [ln for ln in lines if ln.startswith("[")]
    assert [ln.split(":")[0] for ln in done] == ["[1/2] dma-latency", "[2/2] latency-hist"]
    assert " points in " in done[0] and " s; " in done[0] and "published values agree" in done[0]
    assert "(quick: reduced counts, not the published settings)" in p.stdout
    html = (out / "report.html").read_text()
    assert 'class="quick"' in html and "reduced: cellsim reproduce --quick" in html


def test_on_a_terminal_the_bar_shows_the_time_remaining() -> None:
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=120)
    with RunProgress("reproduce", console=con, single=True) as progress:
        progress.t0 -= 10  # shown once the run has lasted a moment
        progress(3, 12, "[1/20] dma-latency")
        progress(5, 12, "[2/20] hotspot")
        assert progress.bar is not None
        assert [t.description for t in progress.bar.tasks] == ["[2/20] hotspot"]
        columns = " ".join(type(c).__name__ for c in progress.bar.columns)
        progress.bar.refresh()
    assert "RunRemainingColumn" in columns and "ETA" in buf.getvalue()
    assert "5/12" in buf.getvalue(), "a task of points shows them"


def test_on_a_log_a_plain_line_says_how_far_at_most_once_a_minute() -> None:
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=False, width=200)
    with RunProgress("validate", console=con) as progress:
        progress(1, 40, "mapping")
        assert buf.getvalue() == "", "nothing before the first minute"
        progress.logged -= 61
        progress.started["mapping"] -= 120  # 120 s for the first 10 points
        progress(10, 40, "mapping")
        progress(11, 40, "mapping")
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1, "at most a line a minute"
    assert lines[0].startswith("validate: mapping 10/40 runs, ")
    assert lines[0].endswith(", about 6 min 00 s left")


def test_quick_options_are_each_experiments_own() -> None:
    names = {e.name: e for e in all_experiments()}
    assert set(QUICK_OPTIONS) <= set(names)
    for name, opts in QUICK_OPTIONS.items():
        assert set(opts) <= {o.name for o in names[name].options}, name


def test_a_task_counting_work_shows_its_share_done_not_points() -> None:
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=120)
    with RunProgress("mapping", console=con) as progress:
        progress.t0 -= 10
        progress(Work(0), Work(400_000))
        progress(Work(164_000), Work(400_000))
        assert progress.bar is not None
        (task,) = progress.bar.tasks
        assert task.fields["count"] == "41%" and task.completed == 164_000
        progress.bar.refresh()
    shown = buf.getvalue()
    assert "41%" in shown and "/400000" not in shown and "ETA" in shown


def test_a_plain_line_of_work_says_the_share_done_and_the_time_left_by_work() -> None:
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=False, width=200)
    with RunProgress("mapping", console=con) as progress:
        progress(Work(0), Work(400_000))
        progress.logged -= 61
        progress.started["mapping"] -= 120  # 120 s for the first quarter of the work
        progress(Work(100_000), Work(400_000))
        progress.logged -= 61
        progress(Work(400_000), Work(400_000))
    first, last = buf.getvalue().splitlines()
    assert first.startswith("mapping: mapping 25% of the work, ") and first.endswith(
        ", about 6 min 00 s left"
    )
    assert last.startswith("mapping: mapping 100% of the work, ") and "left" not in last


def test_a_share_under_ten_percent_has_a_decimal_so_a_slow_start_does_not_read_zero() -> None:
    assert count(Work(1_200), Work(400_000)) == "0.3%"
    assert count(Work(0), Work(400_000)) == "0.0%"
    assert count(Work(39_999), Work(400_000)) == "9.9%"
    assert count(Work(40_000), Work(400_000)) == "10%"
    assert count(Work(399_999), Work(400_000)) == "99%", "rounded down: 100% only at the end"
    assert count(Work(0), Work(0)) == "100%"


def test_the_bar_shows_from_the_runs_start_not_from_its_first_finished_point() -> None:
    # a sweep of long points calls back at its start and then minutes later: the bar is
    # drawn a moment after the start all the same, and counts its time from the start
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=120)
    with RunProgress("validate", console=con) as progress:
        progress(Work(0), Work(1000))
        assert progress.bar is None, "no bar for a run shorter than a moment"
        deadline = time.monotonic() + 10
        while not (progress.bar and progress.bar.tasks) and time.monotonic() < deadline:
            time.sleep(0.05)  # (the timer's thread draws the bar, then adds the task)
        assert progress.bar is not None, f"drawn {DELAY_S} s after the start without another call"
        (task,) = progress.bar.tasks
        assert task.fields["since"] == progress.started["validate"]


def test_the_time_left_is_the_runs_rate_over_the_work_still_to_do() -> None:
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=120)
    with RunProgress("validate", console=con) as progress:
        progress.t0 -= 10
        progress(Work(0), Work(400_000))
        progress.started["validate"] -= 120  # a quarter of the work in 120 s
        assert progress.bar is not None
        (task,) = progress.bar.tasks
        progress.bar.update(task.id, since=progress.started["validate"])
        progress(Work(100_000), Work(400_000))
        elapsed, _, left = progress.bar.columns[3:6]
        assert isinstance(elapsed, RunElapsedColumn) and isinstance(left, RunRemainingColumn)
        assert str(left.render(progress.bar.tasks[0])) in {"0:06:00", "0:06:01"}
        assert str(elapsed.render(progress.bar.tasks[0])) in {"0:02:00", "0:02:01"}


def test_after_the_run_a_late_timer_draws_nothing() -> None:
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=120)
    with RunProgress("validate", console=con) as progress:
        progress(0, 3)
    time.sleep(DELAY_S + 0.3)
    assert progress.bar is None and buf.getvalue() == ""
