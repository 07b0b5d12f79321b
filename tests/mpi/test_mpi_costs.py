"""The library's SPU costs come from instruction counts timed by the SPU's
issue rules, not from fitted constants."""

from __future__ import annotations

import dataclasses

from cellsim.mpi._costs import COSTS, FACTS, STEPS, SpuFacts, Step, costs_from


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
