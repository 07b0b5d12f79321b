"""Bad input gets a clear error naming what was wrong, raised where it happened."""

from __future__ import annotations

import pytest

from cellsim import ConfigError, Machine, MfcError, RunawayError, UsageError
from cellsim.spu import compute, ls_alloc, mfc_get, mfc_put, mfc_read_tag_status_all, mfc_write_tag_mask


def run_one(m: Machine, body) -> None:
    m.load(0, lambda speid, argp, envp: body())
    m.run()


@pytest.mark.parametrize(
    ("lsa", "ea_off", "size", "tag", "kind", "words"),
    [
        (0x4000, 0, 24, 0, "size", ["size 24", "multiple of 16"]),
        (0x4000, 0, 16400, 0, "size", ["16400"]),
        (0x4000, 8, 16, 0, "alignment", ["16-byte aligned"]),
        (0x4004, 0x8, 8, 0, "alignment", ["naturally aligned"]),
        (0x4008, 0x10, 8, 0, "alignment", ["low 4 bits"]),
        (0x3FFF0, 0, 32, 0, "ls_range", ["past the end", "256 KB"]),
        (0x4000, 0, 16, 32, "tag", ["tag 32", "0-31"]),
    ],
)
def test_bad_dma_raises_mfc_error_at_the_call(
    m: Machine, lsa: int, ea_off: int, size: int, tag: int, kind: str, words: list[str]
) -> None:
    ea = m.alloc(32768)
    with pytest.raises(MfcError) as e:
        run_one(m, lambda: mfc_get(lsa, int(ea) + ea_off, size, tag))
    err = e.value
    assert err.kind == kind
    assert err.spe == 0
    assert "mfc_get" in err.command
    for w in words:
        assert w in str(err), str(err)


def test_unmapped_effective_address(m: Machine) -> None:
    with pytest.raises(MfcError) as e:
        run_one(m, lambda: mfc_put(0x4000, 0x7000_0000_0000, 128, 0))
    assert e.value.kind == "unmapped"
    assert "not mapped" in str(e.value)


def test_ls_overflow(m: Machine) -> None:
    with pytest.raises(MfcError) as e:
        run_one(m, lambda: ls_alloc(300 * 1024))
    assert e.value.kind == "ls_overflow"


def test_blocking_read_with_an_empty_tag_mask(m: Machine) -> None:
    def body() -> None:
        mfc_write_tag_mask(0)
        mfc_read_tag_status_all()

    with pytest.raises(MfcError) as e:
        run_one(m, body)
    assert e.value.kind == "channel"
    assert "empty" in str(e.value)


def test_the_traceback_shows_the_program_line(m: Machine) -> None:
    def prog(speid: int, argp: int, envp: int) -> None:
        mfc_get(0x4000, 8, 16, 0)  # the offending line

    m.load(0, prog)
    with pytest.raises(MfcError) as e:
        m.run()
    assert any(entry.name == "prog" for entry in e.traceback)


def test_a_program_exception_stops_the_run_and_names_the_spe(m: Machine) -> None:
    def bad(speid: int, argp: int, envp: int) -> None:
        compute(100)
        raise KeyError("boom")

    def good(speid: int, argp: int, envp: int) -> None:
        compute(1_000_000)

    m.load(0, good)
    m.load(4, bad)
    with pytest.raises(KeyError) as e:
        m.run()
    assert any("SPE 4" in n for n in getattr(e.value, "__notes__", []))


def test_runaway_program_hits_the_time_limit() -> None:
    m = Machine("qs20", time_limit_ns=50_000)

    def forever(speid: int, argp: int, envp: int) -> None:
        while True:
            compute(10_000)

    m.load(0, forever)
    with pytest.raises(RunawayError, match="simulated-time limit"):
        m.run()


def test_bad_machine_and_override_names() -> None:
    with pytest.raises(ConfigError, match="qs20"):
        Machine("cray1")
    with pytest.raises(ConfigError) as e:
        Machine("qs20", overrides={"eib.no_such_knob": 1})
    assert "eib.no_such_knob" in str(e.value)
    with pytest.raises(ValueError):  # ConfigError is a ValueError too
        Machine("qs20", overrides={"mfc.queue_depth": 0})


def test_bad_spe_numbers_and_reuse(m: Machine) -> None:
    with pytest.raises(UsageError, match="SPE 16 does not exist"):
        m.load(16, lambda speid, argp, envp: None)
    m.load(0, lambda speid, argp, envp: None)
    with pytest.raises(UsageError, match="already running"):
        m.load(0, lambda speid, argp, envp: None)
    m.run()
    with pytest.raises(UsageError, match="already run"):
        m.run()


def test_bad_exit_values(m: Machine) -> None:
    m.load(0, lambda speid, argp, envp: "done")
    with pytest.raises(UsageError, match="returned 'done'"):
        m.run()


def test_bad_placement() -> None:
    with pytest.raises(UsageError, match="permutation"):
        Machine("qs20", placement=[0, 0, 1, 2, 3, 4, 5, 6])


def test_memory_exhaustion(m: Machine) -> None:
    with pytest.raises(UsageError, match="main memory exhausted"):
        m.alloc(2**40)


@pytest.mark.parametrize(
    ("params", "rule"),
    [
        ({"get_ea": 0, "put_ea": 0, "size": 128}, "missing field `pairs`"),
        ({"get_ea": 0, "put_ea": 0, "size": 128, "pairs": 1, "burst": 2}, "unknown field `burst`"),
        ({"get_ea": -1, "put_ea": 0, "size": 128, "pairs": 1}, "integer `-1`, expected u64"),
        ({"get_ea": 0.5, "put_ea": 0, "size": 128, "pairs": 1}, "floating point `0.5`, expected u64"),
        ({"get_ea": 0, "put_ea": 0, "size": "big", "pairs": 1}, 'string "big", expected u32'),
    ],
)
def test_a_bad_native_program_names_the_value_and_the_rule(
    m: Machine, params: dict[str, object], rule: str
) -> None:
    with pytest.raises(UsageError, match="bad program") as e:
        m.load_kernel(0, "stream", **params)
    assert rule in str(e.value)
    assert '"kind":"stream"' in str(e.value)


def test_a_native_program_of_an_unknown_kind_or_mode(m: Machine) -> None:
    with pytest.raises(UsageError, match="unknown variant `nope`, expected one of `dma_bench`"):
        m.load_kernel(0, "nope")
    with pytest.raises(UsageError, match="unknown variant `both`, expected one of `get`, `put`, `copy`"):
        m.load_kernel(0, "region", op="both", span=16384, total=16384, size=128)
    with pytest.raises(UsageError, match="size 100 must divide 16384"):
        m.load_kernel(0, "region", op="get", span=16384, total=16384, size=100)
