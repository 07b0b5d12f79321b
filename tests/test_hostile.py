"""Hostile input (issue 22): no panics, no silent wrong data, no endless runs.

Each case ends in one clear ``CellsimError`` naming the value and the rule,
raised where it happened: never a ``PanicException`` (which ``except
Exception`` would not catch), a raw ``OverflowError``, a hang or wrong bytes.
"""

from __future__ import annotations

import math
import os
import subprocess
import time
from typing import Any

import numpy as np
import pytest
from greenlet import GreenletExit, getcurrent

from cellsim import ConfigError, Machine, MfcError, RunawayError, UsageError
from cellsim.spu import (
    MFC_TAG_UPDATE_ALL,
    compute,
    library_wait_tags,
    ls_alloc,
    mfc_get,
    mfc_getl,
    mfc_list,
    mfc_put,
    mfc_read_tag_mask,
    mfc_read_tag_status_all,
    mfc_write_tag_mask,
    spu_stat_in_mbox,
    spu_write_out_mbox,
)


def run_one(m: Machine, body: Any, **run_kw: Any) -> Any:
    out: dict[str, Any] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        out["value"] = body()

    m.load(0, prog)
    m.run(**run_kw)
    return out.get("value")


# -- DMA-list elements changed after issue ------------------------------------------------------


def _rewritten_list(m: Machine, size: int, eal: int | None) -> np.ndarray:
    """A 4-element get list whose element 2 is rewritten right after the issue."""
    src = m.alloc(4096)
    src.array()[:] = np.arange(4096) % 251

    def body() -> np.ndarray:
        lst = ls_alloc(32, 8)
        if size == 16384:  # the data ends at the top of the local store
            ls_alloc(256 * 1024 - 512 - (int(lst) + 128))
        buf = ls_alloc(512, 128)
        n = mfc_list(lst, [(128, int(src) + 128 * i) for i in range(4)])
        mfc_getl(buf, int(src), lst, n, 3)
        low = int(src) + 1024 if eal is None else eal
        mfc_list(lst + 16, [(size, low)])  # the MFC has not fetched element 2 yet
        mfc_write_tag_mask(1 << 3)
        mfc_read_tag_status_all()
        return buf.array().copy()

    return run_one(m, body)


@pytest.mark.parametrize(
    ("size", "eal", "kind", "words"),
    [
        (24, None, "list", ["size 24"]),
        (128, 0xF000_0000, "unmapped", ["not mapped"]),
        (128, 8, "alignment", ["16-byte aligned"]),
        (16384, None, "ls_range", ["past the end"]),
    ],
)
def test_a_list_element_rewritten_after_issue_is_checked_when_fetched(
    m: Machine, size: int, eal: int | None, kind: str, words: list[str]
) -> None:
    with pytest.raises(MfcError) as e:
        _rewritten_list(m, size, eal)
    err = e.value
    assert err.kind == kind, err
    assert err.spe == 0 and "mfc_getl" in err.command
    for w in ["list element 2", "fetched by the MFC", "rewritten", *words]:
        assert w in str(err), str(err)


def test_a_valid_rewrite_moves_what_the_element_says_when_fetched(m: Machine) -> None:
    got = _rewritten_list(m, 128, None)
    want = np.arange(4096) % 251
    assert (got[256:384] == want[1024:1152]).all()  # element 2 as rewritten
    assert (got[:256] == want[:256]).all() and (got[384:] == want[384:512]).all()


def test_a_list_element_must_reach_a_register_with_four_bytes(m: Machine) -> None:
    mbox = _ps_register(m, 1, "SPU_IN_MBOX")

    def body() -> None:
        lst = ls_alloc(8, 8)
        buf = ls_alloc(32, 16)
        n = mfc_list(lst, [(2, mbox)])
        mfc_getl(buf + (mbox & 0xF), mbox & ~0xFFFFFFFF, lst, n, 0)

    with pytest.raises(MfcError, match="4 bytes at a time") as e:
        run_one(m, body)
    assert e.value.kind == "size"


def _ps_register(m: Machine, spe: int, name: str) -> int:
    from cellsim import _engine

    offsets = {"SPU_IN_MBOX": 0x400C}
    return int(_engine.ps_ea(spe)) + offsets[name]


# -- simulated time is checked arithmetic -------------------------------------------------------


@pytest.mark.parametrize("warmup", [0, 1000])
def test_compute_past_the_end_of_time_is_an_error(m: Machine, warmup: int) -> None:
    def body() -> None:
        compute(warmup)
        compute(2**64 - 1)

    with pytest.raises(UsageError, match=r"compute\(18446744073709551615\).*past the last cycle"):
        run_one(m, body)


# -- integers from Python: one place, one clear error -------------------------------------------


@pytest.mark.parametrize(
    ("args", "kind", "name"),
    [
        ((0x4000, 0x10000, 16, -1), "tag", "tag"),
        ((0x4000, 0x10000, 16, 2**40), "tag", "tag"),
        ((-16, 0x10000, 16, 0), "ls_range", "ls"),
        ((2**32, 0x10000, 16, 0), "ls_range", "ls"),
        ((0x4000, -128, 16, 0), "unmapped", "ea"),
        ((0x4000, 2**64, 16, 0), "unmapped", "ea"),
        ((0x4000, 0x10000, -16, 0), "size", "size"),
        ((0x4000, 0x10000, 2**33, 0), "size", "size"),
    ],
)
def test_mfc_arguments_out_of_any_register_are_mfc_errors(
    m: Machine, args: tuple[int, ...], kind: str, name: str
) -> None:
    with pytest.raises(MfcError) as e:
        run_one(m, lambda: mfc_get(*args))
    assert e.value.kind == kind
    assert f"{name} {args[('ls', 'ea', 'size', 'tag').index(name)]}" in str(e.value)


@pytest.mark.parametrize("bad", [1.5, "16", None, True, math.nan])
def test_non_integer_mfc_arguments_are_usage_errors(m: Machine, bad: Any) -> None:
    with pytest.raises(UsageError, match="must be an integer"):
        run_one(m, lambda: mfc_put(0x4000, 0x10000, bad, 0))


def test_numpy_integers_are_integers(m: Machine) -> None:
    ea = m.alloc(128)
    run_one(m, lambda: mfc_get(np.uint32(0x4000), np.int64(int(ea)), np.uint16(128), np.int8(3)))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: spu_write_out_mbox(2**40), "spu_write_out_mbox: value"),
        (lambda: mfc_write_tag_mask(-1), "mfc_write_tag_mask: mask -1"),
        (lambda: compute(-5), "compute: cycles -5"),
        (lambda: compute(2.5), "must be an integer"),
        (lambda: ls_alloc(-4096), "ls_alloc: size -4096"),
        (lambda: ls_alloc(1.5), "must be an integer"),
        (lambda: ls_alloc(128, align=3), "not a power of two"),
        (lambda: mfc_list(0x4000, [(2**15, 0x10000)]), "element 0 size"),
    ],
)
def test_bad_values_in_programs_are_usage_errors(m: Machine, call: Any, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        run_one(m, call)


def test_a_negative_ls_alloc_does_not_move_the_allocator_backwards(m: Machine) -> None:
    def body() -> tuple[int, int]:
        a = ls_alloc(256, 128)
        with pytest.raises(UsageError):
            ls_alloc(-256)
        b = ls_alloc(256, 128)
        return int(a), int(b)

    a, b = run_one(m, body)
    assert b >= a + 256  # no aliasing


@pytest.mark.parametrize("spe", ["0", 1.5, -1, 2**40, None])
def test_load_refuses_spe_numbers_that_are_not_integers(m: Machine, spe: Any) -> None:
    with pytest.raises(UsageError):
        m.load(spe, lambda speid, argp, envp: None)


def _with_program() -> Machine:
    m = Machine("qs20")
    m.load(0, lambda speid, argp, envp: None)
    return m


def test_synthetic_traffic_run_twice_is_one_longer_run() -> None:
    once, twice = Machine("qs20", seed=3), Machine("qs20", seed=3)
    once.run_synthetic(0.05, 40_000)
    twice.run_synthetic(0.05, 15_000)
    twice.run_synthetic(0.05, 25_000)
    assert once.stats()["transfers"] > 0
    assert once.stats() == twice.stats()


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Machine("qs20", seed=-1), "seed -1"),
        (lambda: Machine("qs20", seed=2**64), "seed"),
        (lambda: Machine("qs20", seed=1.5), "seed must be an integer"),
        (lambda: Machine("qs20", time_limit_ns=math.nan), "time_limit_ns"),
        (lambda: Machine("qs20", time_limit_ns=math.inf), "time_limit_ns"),
        (lambda: Machine("qs20", time_limit_ns=-5), "time_limit_ns"),
        (lambda: Machine("qs20", time_limit_ns=1e40), "time_limit_ns"),
        (lambda: Machine("qs20").alloc(-1), "alloc: size -1"),
        (lambda: Machine("qs20").memory(-1, 4), "memory: ea -1"),
        (lambda: Machine("qs22").memory_node(-1), "memory_node: ea .* -1 is out of range"),
        (lambda: Machine("qs22").memory_node(2**40), "memory_node: ea .* 1099511627776 is out of range"),
        (lambda: Machine("qs20").local_store("0"), "SPE number"),
        (lambda: Machine("qs20").run(wall_limit_s=math.nan), "wall_limit_s"),
        (lambda: Machine("qs20").run(time_limit_ns=0), "time_limit_ns"),
        (lambda: Machine("qs20").run_synthetic(0.01, -5), "run_synthetic: cycles -5"),
        (lambda: Machine("qs20").run_synthetic(0.01, 0), "run_synthetic: cycles 0"),
        (lambda: Machine("qs20").run_synthetic(0.01, 1.5), "cycles must be an integer"),
        (lambda: _with_program().run_synthetic(0.01, 100), "without programs, and 1 program"),
        (lambda: Machine("qs20").run_synthetic("0.1", 100), "run_synthetic: rate must be a number"),
        (lambda: Machine("qs20").run_synthetic(1.5, 100), r"injection rate 1.5 must be in \(0, 1\]"),
    ],
)
def test_machine_arguments_are_checked(make: Any, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        make()


def test_a_memory_size_the_host_cannot_allocate_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot allocate 68719476736 bytes") as e:
        Machine("qs20", overrides={"memory_mb": 65536})
    assert e.value.key == "memory_mb"


# -- library hygiene: the tag mask --------------------------------------------------------------


def test_mfc_read_tag_mask_reads_the_mask_back(m: Machine) -> None:
    def body() -> int:
        mfc_write_tag_mask(0x8000_0005)
        return mfc_read_tag_mask()

    assert run_one(m, body) == 0x8000_0005


def test_a_library_wait_leaves_the_program_its_own_tag_mask(m: Machine) -> None:
    """The program waits on its own group after a library's wait: its data is there."""
    src = m.alloc(16384)
    src.array()[:] = 7

    def body() -> tuple[int, int]:
        buf = ls_alloc(16384, 128)
        mfc_write_tag_mask(1 << 5)
        mfc_get(buf, src, 16384, 5)
        library_wait_tags(1 << 30, MFC_TAG_UPDATE_ALL)  # the library's own (idle) group
        mask = mfc_read_tag_mask()
        mfc_read_tag_status_all()
        return mask, int(buf.array()[16383])

    assert run_one(m, body) == (1 << 5, 7)


def test_library_waits_cost_what_they_cost_before(m: Machine) -> None:
    """A program that writes its own mask before it waits (every shipped one)
    takes the same cycles as when the libraries wrote the mask by hand."""

    def by_hand(speid: int, argp: int, envp: int) -> None:
        mfc_write_tag_mask(1 << 30)
        mfc_read_tag_status_all()
        mfc_write_tag_mask(1)
        mfc_read_tag_status_all()

    def through_the_library(speid: int, argp: int, envp: int) -> None:
        library_wait_tags(1 << 30)
        mfc_write_tag_mask(1)
        mfc_read_tag_status_all()

    cycles = []
    for prog in (by_hand, through_the_library):
        mm = Machine("qs20", seed=1)
        mm.load(0, prog)
        cycles.append(mm.run().cycles)
    assert cycles[0] == cycles[1]


# -- greenlet misuse ----------------------------------------------------------------------------


def test_a_program_raising_greenlet_exit_is_a_usage_error(m: Machine) -> None:
    def body() -> None:
        compute(10)
        raise GreenletExit

    with pytest.raises(UsageError, match="raised GreenletExit"):
        run_one(m, body)


def test_a_program_switching_to_the_driver_by_hand_is_a_usage_error(m: Machine) -> None:
    def body() -> None:
        compute(10)
        getcurrent().parent.switch(42)

    with pytest.raises(UsageError, match="switched to the driver by hand"):
        run_one(m, body)


# -- runs that never end ------------------------------------------------------------------------


def _poll_forever() -> None:
    while spu_stat_in_mbox() == 0:
        pass


def test_a_polling_program_is_stopped_by_the_wall_limit_with_a_livelock_report(m: Machine) -> None:
    t0 = time.monotonic()
    with pytest.raises(RunawayError, match="host-time limit") as e:
        run_one(m, _poll_forever, wall_limit_s=0.5)
    assert time.monotonic() - t0 < 10
    (who, doing), *_ = e.value.activity
    assert who.startswith("SPE 0")
    assert doing.startswith("polling spu_readchcnt(spu_read_in_mbox)")
    assert "polling spu_readchcnt(spu_read_in_mbox)" in str(e.value)


def test_a_polling_program_is_stopped_by_run_s_time_limit(m: Machine) -> None:
    with pytest.raises(RunawayError, match="simulated-time limit") as e:
        run_one(m, _poll_forever, time_limit_ns=20_000)
    assert e.value.limit_cycles == 64_000
    assert e.value.activity[0][1].startswith("polling")


def test_ctrl_c_stops_a_native_run() -> None:
    """The engine checks signals while it runs native programs (it holds the
    GIL, so the SIGINT comes from another process, as a terminal's does)."""
    m = Machine("qs20", seed=1)
    src = m.alloc(16384)
    m.load_kernel(0, "stream", get_ea=int(src), put_ea=int(src), size=16384, pairs=10**9)
    killer = subprocess.Popen(["sh", "-c", f"sleep 0.5; kill -INT {os.getpid()}"])
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            m.run()
    finally:
        killer.wait()
    assert time.monotonic() - t0 < 10
