"""The library's SPU costs come from instruction counts timed by the SPU's
issue rules, not from fitted constants."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cellsim import ConfigError
from cellsim.mpi._costs import (
    COSTS,
    FACTS,
    STEPS,
    SpuFacts,
    Step,
    costs_from,
    dp_issue_cycles,
    dp_latency_cycles,
    flop_cycles,
    reduce_cycles,
)
from cellsim.spec import MachineSpec


def test_a_step_is_dual_issue_plus_exposed_latencies_and_misses() -> None:
    s = Step("x", odd=5, even=3, loads=2, misses=1)
    assert s.cycles(SpuFacts(load_latency=6, branch_miss=18)) == 5 + 2 * 6 + 18
    assert Step("y", odd=1, even=4).cycles() == 4  # the longer pipeline sets the time
    assert Step("z", odd=0, narrow_stores=1).cycles(SpuFacts(narrow_store_slots=4)) == 4


def test_costs_are_the_steps_timed_with_the_spu_facts() -> None:
    assert set(STEPS) == {f.name for f in dataclasses.fields(COSTS)}
    for name, step in STEPS.items():
        assert getattr(COSTS, name) == step.cycles(FACTS), name
        assert step.what  # every step says which instructions it stands for


def test_the_branch_miss_is_where_control_flow_depends_on_data() -> None:
    """Only the call's dispatch and a search loop's exit go against their hint."""
    no_miss = costs_from(dataclasses.replace(FACTS, branch_miss=0))
    diff = {n: getattr(COSTS, n) - getattr(no_miss, n) for n in STEPS}
    assert diff == {n: (FACTS.branch_miss if n in ("call", "scan_loop") else 0) for n in STEPS}


def test_load_latency_is_exposed_only_where_a_value_is_used_at_once() -> None:
    slow = costs_from(dataclasses.replace(FACTS, load_latency=FACTS.load_latency + 1))
    # unrolled loops (entries, copies) hide it; single lookups expose it
    assert slow.entry_empty == COSTS.entry_empty and slow.copy_per_quadword == COSTS.copy_per_quadword
    assert slow.call == COSTS.call + 1 and slow.scan_loop == COSTS.scan_loop + 1


def test_mpirun_takes_other_step_costs_and_the_protocol_pays_them() -> None:
    """The library's SPU work is a hypothesis one can weigh: tripled, a 0-byte ping-pong is slower."""
    import io

    from cellsim.experiments import mpi_pingpong
    from cellsim.mpi import mpirun

    def half_round_trip(costs: object) -> float:
        sink = io.StringIO()
        res = mpirun(
            lambda: mpi_pingpong._pingpong((0,), {0: 5}),
            2,
            protocol="kumar",
            costs=costs,  # type: ignore[arg-type]
            stdout=sink,
            stderr=sink,
        )
        return float(res.values[0][0])

    triple = dataclasses.replace(
        COSTS, **{f.name: 3 * getattr(COSTS, f.name) for f in dataclasses.fields(COSTS)}
    )
    assert half_round_trip(triple) > half_round_trip(None) + 50e-9


@pytest.mark.parametrize(
    ("machine", "issue", "latency"),
    [("qs20-1chip", 7, 13), ("qs20", 7, 13), ("ps3", 7, 13), ("blade21", 7, 13), ("qs22", 1, 9)],
)
def test_the_dp_unit_is_a_fact_of_the_machine_file(machine: str, issue: int, latency: int) -> None:
    """The original Cell's DP pipeline issues every 7 cycles with a 13-cycle latency, the
    PowerXCell 8i's is fully pipelined (1, 9): ``spu.dp_issue_cycles`` / ``spu.dp_latency_cycles``."""
    assert (dp_issue_cycles(machine), dp_latency_cycles(machine)) == (issue, latency)
    facts = MachineSpec.of(machine).facts
    assert (facts.dp_issue_cycles, facts.dp_latency_cycles) == (issue, latency)


def test_a_machine_derived_from_qs22_keeps_its_dp_unit(tmp_path: Path) -> None:
    """A user's machine with ``base = "qs22"`` is a PowerXCell 8i, whatever its name: it once got
    the original Cell's DP unit because the rate was chosen by the name ``qs22``."""
    f = tmp_path / "my22.toml"
    f.write_text(
        'base = "qs22"\nname = "my22"\ndescription = "a QS22 with slower memory"\n[mic]\ndram_gbs = 20\n'
    )
    assert (dp_issue_cycles(str(f)), dp_latency_cycles(str(f))) == (1, 9)
    assert flop_cycles(4000, str(f), simd=True) == flop_cycles(4000, "qs22", simd=True) == 1000
    assert reduce_cycles(1600, "f", 8, str(f)) == 100 * 3  # the loads bind, not the arithmetic
    assert reduce_cycles(1600, "f", 8, "qs20") == 100 * 7
    # and an override changes it like any setting
    slow = MachineSpec.of("qs22", ["spu.dp_issue_cycles=2", "spu.dp_latency_cycles=10"])
    assert (dp_issue_cycles(slow), dp_latency_cycles(slow)) == (2, 10)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["spu.dp_issue_cycles=0"], "spu.dp_issue_cycles"),
        (["spu.dp_latency_cycles=6"], "spu.dp_latency_cycles"),
    ],
)
def test_a_dp_unit_that_cannot_be_is_refused_naming_its_key(overrides: list[str], key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        dp_issue_cycles(MachineSpec.of("qs20", overrides))
