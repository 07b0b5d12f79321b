"""Property tests: random DMA mixes move the bytes exactly and never break an EIB invariant."""

from __future__ import annotations

import itertools
from functools import partial

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellsim import Machine
from cellsim.spu import mfc_get, mfc_put, mfc_read_tag_status_all, mfc_write_tag_mask

SIZES = [1, 2, 4, 8, 16, 48, 128, 256, 1024, 4096]

transfer = st.tuples(
    st.sampled_from(["get", "put"]),
    st.sampled_from(SIZES),
    st.booleans(),  # remote is another SPE's local store (else memory)
    st.integers(0, 31),  # tag
    st.booleans(),  # wait after this one
)


def slot(spe: int, i: int) -> int:
    """Offset of SPE ``spe``'s i-th memory slot: disjoint for every (spe, i)."""
    return (spe * 6 + i) * 4096


def program(speid: int, argp: int, envp: int, *, plan: list, region: int) -> None:
    """Each transfer uses its own slot: slot i of this SPE at LS 0x8000 + i*4096,
    remote slot in memory (disjoint per SPE) or in the next SPE's LS (its upper half)."""
    for i, (op, size, to_ls, tag, wait) in enumerate(plan):
        lsa = 0x8000 + i * 4096
        if to_ls:
            remote = Machine.ls_ea((speid + 1) % 8) + 0x20000 + i * 4096
        else:
            remote = region + slot(speid, i)
        (mfc_get if op == "get" else mfc_put)(lsa, remote, size, tag)
        if wait:
            mfc_write_tag_mask(1 << tag)
            mfc_read_tag_status_all()
    mfc_write_tag_mask(0xFFFFFFFF)
    mfc_read_tag_status_all()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plans=st.lists(st.lists(transfer, min_size=1, max_size=6), min_size=1, max_size=8),
    seed=st.integers(0, 2**32),
)
def test_random_mixes_move_bytes_exactly_and_keep_the_invariants(plans: list, seed: int) -> None:
    m = Machine("qs20", seed=seed)
    m.enable_checks()
    rng = np.random.default_rng(seed)
    region = m.alloc(8 * 6 * 4096, align=4096)
    mem = region.array()
    mem[:] = rng.integers(0, 256, mem.size, dtype=np.uint8)
    for s in range(8):
        ls = m.local_store(s)
        ls[:] = rng.integers(0, 256, ls.size, dtype=np.uint8)
    # Expected contents: each transfer copies its own disjoint slot.
    before_mem = mem.copy()
    before_ls = [m.local_store(s).copy() for s in range(8)]
    expect_mem = mem.copy()
    expect_ls = [x.copy() for x in before_ls]
    for s, plan in enumerate(plans):
        for i, (op, size, to_ls, _tag, _wait) in enumerate(plan):
            lsa = 0x8000 + i * 4096
            if to_ls:
                r_arr, r_before, r_off = expect_ls[(s + 1) % 8], before_ls[(s + 1) % 8], 0x20000 + i * 4096
            else:
                r_arr, r_before, r_off = expect_mem, before_mem, slot(s, i)
            if op == "get":
                expect_ls[s][lsa : lsa + size] = r_before[r_off : r_off + size]
            else:
                r_arr[r_off : r_off + size] = before_ls[s][lsa : lsa + size]
        m.load(s, partial(program, plan=plan, region=int(region)))
    r = m.run()
    m.verify()  # no link, port or command-bus slot overbooked
    assert np.array_equal(mem, expect_mem)
    for s in range(8):
        assert np.array_equal(m.local_store(s), expect_ls[s]), f"SPE {s}"
    bus_cycles = max(r.cycles / 2, 1)
    assert r.stats["transfer_bytes"] <= 128 * bus_cycles
    assert max(r.stats["ramp_sent"]) <= 16 * bus_cycles
    assert max(r.stats["ramp_received"]) <= 16 * bus_cycles


def test_the_plan_layout_never_overlaps() -> None:
    """A sanity check of the layout above: memory slots and LS slots are disjoint."""
    mem = sorted(slot(s, i) for s in range(8) for i in range(6))
    assert all(a + 4096 <= b for a, b in itertools.pairwise(mem))
    own = [0x8000 + i * 4096 for i in range(6)]
    remote = [0x20000 + i * 4096 for i in range(6)]
    assert max(own) + 4096 <= min(remote) and max(remote) + 4096 <= 256 * 1024
