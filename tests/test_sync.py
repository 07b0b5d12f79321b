"""The synchronisation helpers built on the atomic unit (cellsim.sync):
fetch-and-add, the mutex and the barrier, for SPE and PPE programs.

Each property is checked through what the programs can observe: exact
totals in memory, and enter/exit times taken from the simulator's clock.
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cellsim import Machine, NotInProgramError, UsageError, spu
from cellsim.ppe import pthread_create, pthread_join
from cellsim.sync import Barrier, Mutex, atomic_add, ppe_atomic_add

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def wait_tags(mask: int) -> None:
    spu.mfc_write_tag_mask(mask)
    spu.mfc_read_tag_status_all()


# -- atomic_add -----------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 7])
def test_atomic_add_loses_no_increment(seed: int) -> None:
    m = Machine("qs20", seed=seed)
    counter = m.alloc(128)
    olds: list[int] = []

    def prog(speid: int, argp: int, envp: int) -> None:
        for _ in range(150):
            olds.append(atomic_add(argp, 1))

    for s in range(8):
        m.load(s, prog, argp=counter)
    m.run()
    assert int(counter.array(">u4")[0]) == 1200
    assert sorted(olds) == list(range(1200)), "every fetch-and-add returned a distinct old value"


def test_atomic_add_on_other_words_of_the_line_and_wrapping(m: Machine) -> None:
    line = m.alloc(128)
    line.array(">u4")[5] = 0xFFFF_FFFE

    def prog(speid: int, argp: int, envp: int) -> None:
        for _ in range(20):
            atomic_add(argp, 3, offset=31)
            atomic_add(argp, 1, offset=5)

    for s in range(4):
        m.load(s, prog, argp=line)
    m.run()
    words = line.array(">u4")
    assert int(words[31]) == 240
    assert int(words[5]) == (0xFFFF_FFFE + 80) & 0xFFFF_FFFF
    assert not words[:5].any() and not words[6:31].any()


def test_the_atomic_counter_example_counts_exactly_under_every_seed() -> None:
    """examples/atomic_counter.py (8 PPE-started SPEs, getllar/putllc) with fewer increments."""
    spec = importlib.util.spec_from_file_location("atomic_counter", EXAMPLES / "atomic_counter.py")
    assert spec and spec.loader
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    for seed in range(5):
        out, _, _ = ex.run(seed, increments=100)
        assert out["count"] == 800
        assert sum(out["retries"]) > 0, "eight SPEs on one line contend"


def test_ppe_and_spe_atomics_share_a_counter() -> None:
    m = Machine("qs20", seed=2)
    counter = m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> None:
        for _ in range(100):
            atomic_add(argp, 1)

    def ppe_worker() -> None:
        for _ in range(100):
            ppe_atomic_add(counter, 1)

    def main() -> None:
        threads = [pthread_create(ppe_worker) for _ in range(2)]
        for t in threads:
            pthread_join(t)

    for s in range(4):
        m.load(s, prog, argp=counter)
    m.run(main)
    assert int(counter.array(">u4")[0]) == 600


def test_ppe_atomic_add_of_a_doubleword(m: Machine) -> None:
    ea = m.alloc(128)
    ea.array(">u8")[0] = 2**32 - 1

    def main() -> int:
        return ppe_atomic_add(ea, 1, size=8)

    assert m.run(main).value == 2**32 - 1
    assert int(ea.array(">u8")[0]) == 2**32


def test_sync_helpers_check_their_arguments(m: Machine) -> None:
    with pytest.raises(UsageError, match="not 128-byte aligned"):
        Mutex(0x1040)
    with pytest.raises(UsageError, match="at least one participant"):
        Barrier(0x1000, 0)
    with pytest.raises(NotInProgramError):
        atomic_add(0x1000, 1)

    m.load(0, lambda speid, argp, envp: atomic_add(argp + 4, 1))
    with pytest.raises(UsageError, match="not 128-byte aligned"):
        m.run()


# -- Mutex ----------------------------------------------------------------------------


def mutex_run(seed: int, spes: int, rounds: int, backoff: int) -> tuple[Machine, int, list]:
    """Each SPE increments a plain (non-atomic) word in another line ``rounds``
    times inside the mutex, by DMA get / compute / DMA put; returns the final
    value and every (enter, exit, spe) interval."""
    m = Machine("qs20", seed=seed)
    lock, data = m.alloc(128), m.alloc(128)
    spans: list[tuple[int, int, int]] = []

    def prog(speid: int, argp: int, envp: int) -> None:
        mutex = Mutex(argp, backoff_cycles=backoff)
        buf = spu.ls_alloc(16, align=16)
        for _ in range(rounds):
            with mutex:
                enter = m.cycles
                spu.mfc_get(buf, data, 16, 1)
                wait_tags(1 << 1)
                v = buf.array(">u4")
                v[0] += 1
                spu.compute(50)  # a read-modify-write window others could break into
                spu.mfc_put(buf, data, 16, 1)
                wait_tags(1 << 1)
                spans.append((enter, m.cycles, speid))
            spu.compute(30 * speid)

    for s in range(spes):
        m.load(s, prog, argp=lock)
    m.run()
    assert int(lock.array(">u4")[0]) == 0, "the lock is free at the end"
    return m, int(data.array(">u4")[0]), spans


def assert_exclusive(spans: list[tuple[int, int, int]]) -> None:
    spans = sorted(spans)
    for (_, exit_a, a), (enter_b, _, b) in itertools.pairwise(spans):
        assert enter_b >= exit_a, f"SPE {b} entered at {enter_b} while SPE {a} held the lock until {exit_a}"


def test_mutex_gives_mutual_exclusion() -> None:
    _, value, spans = mutex_run(seed=1, spes=8, rounds=12, backoff=100)
    assert value == 96, "no read-modify-write was lost"
    assert len(spans) == 96
    assert_exclusive(spans)


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    spes=st.integers(2, 8),
    rounds=st.integers(1, 6),
    backoff=st.sampled_from([0, 10, 100, 1000]),
)
def test_mutex_property(seed: int, spes: int, rounds: int, backoff: int) -> None:
    _, value, spans = mutex_run(seed, spes, rounds, backoff)
    assert value == spes * rounds
    assert_exclusive(spans)


def test_without_the_mutex_updates_are_lost() -> None:
    """The control: the same read-modify-write without the lock loses updates,
    so the mutex test above is not passing vacuously."""
    m = Machine("qs20", seed=1)
    data = m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> None:
        buf = spu.ls_alloc(16, align=16)
        for _ in range(12):
            spu.mfc_get(buf, data, 16, 1)
            wait_tags(1 << 1)
            buf.array(">u4")[0] += 1
            spu.compute(50)
            spu.mfc_put(buf, data, 16, 1)
            wait_tags(1 << 1)

    for s in range(8):
        m.load(s, prog)
    m.run()
    assert int(data.array(">u4")[0]) < 96


# -- Barrier --------------------------------------------------------------------------


def barrier_run(seed: int, spes: int, rounds: int, work: list[int]) -> dict[tuple[int, int], tuple]:
    """Every SPE computes ``work[(spe + round) % len]`` cycles, then waits at the
    barrier; returns (arrive, leave) per (spe, round)."""
    m = Machine("qs20", seed=seed)
    line = m.alloc(128)
    times: dict[tuple[int, int], tuple[int, int]] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        barrier = Barrier(argp, spes)
        for r in range(rounds):
            spu.compute(work[(speid + r) % len(work)])
            arrive = m.cycles
            barrier.wait()
            times[(speid, r)] = (arrive, m.cycles)

    for s in range(spes):
        m.load(s, prog, argp=line)
    m.run()
    return times


def assert_barrier(times: dict, spes: int, rounds: int) -> None:
    for r in range(rounds):
        last_arrival = max(times[(s, r)][0] for s in range(spes))
        first_leave = min(times[(s, r)][1] for s in range(spes))
        assert first_leave >= last_arrival, f"round {r}: an SPE left at {first_leave} before the last arrived"
        if r + 1 < rounds:
            next_arrival = min(times[(s, r + 1)][0] for s in range(spes))
            assert next_arrival >= first_leave


def test_barrier_holds_everyone_until_the_last_arrives_and_is_reusable() -> None:
    times = barrier_run(seed=1, spes=8, rounds=4, work=[100, 5000, 20_000, 300, 9000])
    assert_barrier(times, 8, 4)
    # The late arrival sets the pace: every SPE left round 0 after the 20 000-cycle worker arrived.
    assert min(times[(s, 0)][1] for s in range(8)) > 20_000


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    spes=st.integers(1, 8),
    rounds=st.integers(1, 4),
    work=st.lists(st.integers(0, 8000), min_size=1, max_size=5),
)
def test_barrier_property(seed: int, spes: int, rounds: int, work: list[int]) -> None:
    assert_barrier(barrier_run(seed, spes, rounds, work), spes, rounds)


def test_a_barrier_for_more_spes_than_arrive_deadlocks() -> None:
    """A barrier for 3 with only 2 participants never opens: the SPEs poll
    forever, so the run ends at its time limit rather than as a deadlock."""
    from cellsim import RunawayError

    m = Machine("qs20", seed=1, time_limit_ns=50_000)
    line = m.alloc(128)
    for s in range(2):
        m.load(s, lambda speid, argp, envp: Barrier(argp, 3).wait(), argp=line)
    with pytest.raises(RunawayError):
        m.run()
