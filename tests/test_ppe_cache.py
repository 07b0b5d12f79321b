"""The PPE's caches and the SPU's local-store loops from Python (issue 7): the
loop API, its bad-input errors, single accesses timed like the loop, and an SPE
put taking the PPE's copy. That lwarx/stwcx stay atomic against the SPEs' lock-line
commands through the caches is test_sync's test_ppe_and_spe_atomics_share_a_counter."""

from __future__ import annotations

import pytest

from cellsim import Machine, UsageError, ppe, spu

GHZ = 2.1


@pytest.fixture
def blade() -> Machine:
    return Machine("blade21", seed=0, overrides={"numa.policy": "node0"})


def test_l1_loads_reach_seed_002s_numbers(blade: Machine) -> None:
    buf = blade.alloc(16384)

    def main() -> list[float]:
        ppe.access_loop("load", buf, 16384, 16)
        return [16384 / ppe.access_loop("load", buf, 16384, e) * GHZ for e in (1, 2, 4, 8, 16)]

    got = blade.run(main).value
    assert got == pytest.approx([2.1, 4.2, 8.4, 16.8, 16.8], rel=0.01)


def test_a_level_that_holds_the_buffer_serves_it_without_misses(blade: Machine) -> None:
    small, big = blade.alloc(16384), blade.alloc(256 * 1024)
    counts: dict[str, dict[str, int]] = {}

    def main() -> None:
        for name, buf, n in (("l1", small, 16384), ("l2", big, 256 * 1024)):
            ppe.access_loop("load", buf, n, 16)
            before = blade.ppe_cache_stats()
            ppe.access_loop("load", buf, n, 4, 2)
            after = blade.ppe_cache_stats()
            counts[name] = {k: after[k] - before[k] for k in after}

    blade.run(main)
    assert counts["l1"]["l1_misses"] == 0 and counts["l1"]["l2_misses"] == 0
    assert counts["l2"]["l2_misses"] == 0 and counts["l2"]["prefetches"] == 0
    assert counts["l2"]["l1_misses"] > 0


@pytest.mark.parametrize("op", ["load", "store", "copy"])
def test_no_loop_passes_16_bytes_per_cycle(blade: Machine, op: str) -> None:
    a, b = blade.alloc(65536), blade.alloc(65536)

    def main() -> list[float]:
        ppe.access_loop("load", a, 16384, 16)
        out = []
        for e in (1, 4, 16):
            for t in (1, 2):
                for n in (8192, 65536):
                    c = ppe.access_loop(op, a, n, e, t, dst=b)
                    out.append(n * (2 if op == "copy" else 1) / c)
        return out

    assert max(blade.run(main).value) <= 16.0


def test_two_threads_never_lose_to_one_on_loads() -> None:
    for n in (16384, 192 * 1024, 1 << 20):
        for e in (1, 8, 16):
            cycles = []
            for t in (1, 2):
                m = Machine("blade21", seed=0)
                buf = m.alloc(n)

                def main(buf: int = buf, t: int = t, e: int = e, n: int = n) -> int:
                    if n <= 192 * 1024:
                        ppe.access_loop("load", buf, n, 16)
                    return ppe.access_loop("load", buf, min(n, 65536 * e), e, t)

                cycles.append(m.run(main).value)
            assert cycles[1] <= cycles[0], (n, e, cycles)


def test_a_dependent_loop_is_timed_like_single_loads_and_a_store_loop_like_single_stores() -> None:
    def looped() -> tuple[int, int]:
        m = Machine("blade21", seed=0)
        a, b = m.alloc(64 * 136), m.alloc(4096)

        def main() -> tuple[int, int]:
            t0 = m.cycles
            ppe.access_loop("load", a, 64 * 8, 8, stride=136, dependent=True)
            t1 = m.cycles
            ppe.access_loop("store", b, 1024, 4, fill=0x5A)
            return t1 - t0, m.cycles - t1

        return m.run(main).value

    def singles() -> tuple[int, int]:
        m = Machine("blade21", seed=0)
        a, b = m.alloc(64 * 136), m.alloc(4096)

        def main() -> tuple[int, int]:
            t0 = m.cycles
            for i in range(64):
                ppe.load(a + 136 * i, 8)
            t1 = m.cycles
            for i in range(256):
                ppe.store(b + 4 * i, 0x5A5A5A5A, 4)
            return t1 - t0, m.cycles - t1

        return m.run(main).value

    assert looped() == singles()


def test_loops_move_real_bytes(blade: Machine) -> None:
    a, b = blade.alloc(4096), blade.alloc(4096)
    a.array()[:] = [i % 251 for i in range(4096)]

    def main() -> None:
        ppe.access_loop("copy", a, 4096, 8, 2, dst=b)
        ppe.access_loop("store", a, 128, 16, fill=7)

    blade.run(main)
    assert list(b.array()) == [i % 251 for i in range(4096)]
    assert set(a.array()[:128]) == {7} and a.array()[128] == 128 % 251


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda b: ppe.access_loop("load", b + 8, 64, 16), ["0x", "VMX", "16-byte aligned"]),
        (lambda b: ppe.access_loop("load", 0x7FFF_FF00, 4096, 8), ["0x7fffff00", "outside main memory"]),
        (lambda b: ppe.access_loop("load", b, 64, 8, 3), ["threads=3"]),
        (lambda b: ppe.access_loop("load", b, 0, 8), ["bytes=0"]),
        (lambda b: ppe.access_loop("load", b, 64, 3), ["3 B"]),
        (lambda b: ppe.access_loop("copy", b, 64, 8), ["dst"]),
        (lambda b: ppe.access_loop("move", b, 64, 8), ["'move'"]),
        (lambda b: ppe.access_loop("load", Machine.ls_ea(0), 64, 8), ["local store"]),
    ],
)
def test_bad_loops_are_errors_naming_the_value(blade: Machine, call, words: list[str]) -> None:
    buf = blade.alloc(4096)
    with pytest.raises(UsageError) as e:
        blade.run(lambda: call(int(buf)))
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_an_spe_put_takes_the_ppes_copy(blade: Machine) -> None:
    flag = blade.alloc(128)
    seen: dict[str, object] = {}

    def spe(speid: int, argp: int, envp: int) -> None:
        spu.compute(4000)
        ls = spu.ls_alloc(128)
        ls.array(">u4")[0] = 42
        spu.mfc_put(ls, argp, 128, 0)
        spu.mfc_write_tag_mask(1)
        spu.mfc_read_tag_status_all()

    def main() -> None:
        seen["first"] = ppe.load(flag)
        seen["cached"] = blade.ppe_cache_holds(flag)
        ppe.compute(20000)
        seen["after put"] = blade.ppe_cache_holds(flag)
        seen["second"] = ppe.load(flag)

    blade.load(0, spe, argp=int(flag))
    blade.run(main)
    assert seen == {"first": 0, "cached": (True, True), "after put": (False, False), "second": 42}
    assert blade.ppe_cache_stats()["snoop_invalidations"] == 1


def test_spu_local_store_loops(blade: Machine) -> None:
    cycles: list[int] = []

    def prog(speid: int, argp: int, envp: int) -> None:
        ls = spu.ls_alloc(8192, 16)
        cycles.append(spu.ls_access_loop("load", ls, 4096, 16))
        cycles.append(spu.ls_access_loop("store", ls, 4096, 4, fill=9))
        cycles.append(spu.ls_access_loop("copy", ls, 4096, 8, dst=int(ls) + 4096))
        assert set(ls.array()[4096:]) == {9}

    blade.load(0, prog)
    blade.run()
    assert cycles[0] == 256 + 5, "16 B per cycle and the last load's 6-cycle latency"
    assert cycles[1] == 1024 * 4, "a narrow store is a read-modify-write: 4 issue slots"
    assert cycles[2] == 512 * (2 + 4), "narrow load (2 slots) and store (4) per element"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("load", 0x10008, 64, 16), ["0x10008", "aligned"]),
        (("load", 0x3FFF0, 64, 16), ["0x3fff0", "end"]),
        (("load", 0x10000, 0, 16), ["bytes=0"]),
        (("copy", 0x10000, 64, 16), ["dst"]),
    ],
)
def test_bad_spu_loops_are_errors(blade: Machine, args: tuple, words: list[str]) -> None:
    blade.load(0, lambda speid, argp, envp: spu.ls_access_loop(*args))
    with pytest.raises(UsageError) as e:
        blade.run()
    for w in words:
        assert w in str(e.value), (w, str(e.value))
