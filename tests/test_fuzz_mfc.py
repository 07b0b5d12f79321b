"""The MFC fuzzer (issue 22): random SPE programs checked against a shadow
copy of every byte they can touch.

Each program is a random sequence of DMAs (gets and puts between the local
store and main memory or another SPE's local store, of random sizes,
alignments and tags, some hostile: negative, huge, not integers), DMA lists
(some elements rewritten after the list was issued, as a program may do
while the MFC works on it) and channel misuse. Every command that the MFC
accepts updates the shadow copy; a run must either end with every byte equal
to the shadow, or raise a ``CellsimError`` that names what was wrong. A
``PanicException``, an ``OverflowError``, any other exception or a wrong
byte fails the test.

CI runs a few dozen programs; ``make fuzz`` runs many more
(``CELLSIM_FUZZ_EXAMPLES``) and writes the outcome counts to
``CELLSIM_FUZZ_REPORT``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellsim import CellsimError, Machine, MfcError
from cellsim.spu import (
    compute,
    ls_alloc,
    mfc_get,
    mfc_getl,
    mfc_list,
    mfc_put,
    mfc_putl,
    mfc_read_atomic_status,
    mfc_read_tag_mask,
    mfc_read_tag_status_all,
    mfc_write_list_stall_ack,
    mfc_write_tag_mask,
    spu_stat_in_mbox,
    spu_write_out_mbox,
)

EXAMPLES = int(os.environ.get("CELLSIM_FUZZ_EXAMPLES", "40"))
REPORT = os.environ.get("CELLSIM_FUZZ_REPORT")
OUTCOMES: Counter[str] = Counter()

MEM_BYTES = 96 * 1024  # the main-memory window the programs use
LS_BYTES = 256 * 1024
LIST_LSA = 0x4000  # the program's list area (first LS allocation)
SIZES = [1, 2, 4, 8, 16, 32, 48, 128, 256, 1024, 4096, 16384]

# -- the random programs ----------------------------------------------------------------------------


def _hostile() -> st.SearchStrategy[Any]:
    """Values no register holds, or that are not integers."""
    return st.sampled_from([-1, -16, 2**32, 2**64, 2**70, 1.5, "16", None, float("nan")])


def _offset(limit: int) -> st.SearchStrategy[Any]:
    aligned = st.integers(0, limit // 16 - 1).map(lambda x: 16 * x)
    return st.one_of(aligned, aligned, aligned, aligned, st.integers(0, limit - 1), _hostile())


def _size() -> st.SearchStrategy[Any]:
    common = st.sampled_from(SIZES)
    return st.one_of(common, common, common, common, st.integers(0, 20000), _hostile())


def _tag() -> st.SearchStrategy[Any]:
    valid = st.integers(0, 31)
    return st.one_of(valid, valid, valid, valid, valid, st.integers(32, 2**32 - 1), _hostile())


_dma = st.tuples(
    st.just("dma"),
    st.booleans(),  # put
    st.sampled_from(["memory", "memory", "ls"]),  # remote end
    _offset(0x20000),  # LS offset above the list area
    _offset(MEM_BYTES - 16384),  # remote offset
    _size(),
    _tag(),
)
_element = st.tuples(
    st.one_of(*[st.sampled_from([0, 16, 128, 1024, 4096])] * 4, st.integers(0, 0x7FFF)),
    st.one_of(
        st.integers(0, (MEM_BYTES - 16384) // 16 - 1).map(lambda x: 16 * x),  # in the window
        st.integers(0, MEM_BYTES - 16384),  # misaligned
        st.integers(0x8000_0000, 0xF000_0000),  # unmapped
    ),
    st.just(False),  # no stall-and-notify: a stalled list needs an acknowledgement first
)
_list = st.tuples(
    st.just("list"),
    st.booleans(),
    _offset(0x20000),
    st.lists(_element, min_size=1, max_size=6),
    st.one_of(st.none(), st.tuples(st.integers(1, 5), _element)),  # a rewrite after issue
    st.integers(0, 31),
)
_misuse = st.tuples(
    st.just("misuse"),
    st.sampled_from(
        ["empty_mask", "atomic_status", "stall_ack", "stat", "out_mbox_twice", "tag_mask", "compute"]
    ),
    st.one_of(st.integers(0, 10_000), st.just(2**64 - 1), _hostile()),
)
_aligned_ls = st.integers(0, 0x1C000 // 16).map(lambda x: 16 * x)
_aligned_remote = st.integers(0, (MEM_BYTES - 16384) // 16 - 1).map(lambda x: 16 * x)
_good_size = st.sampled_from([16, 32, 48, 128, 256, 1024, 4096, 16384])
_good_element = st.tuples(st.sampled_from([0, 16, 128, 1024, 4096]), _aligned_remote, st.just(False))
_valid_dma = st.tuples(
    st.just("dma"),
    st.booleans(),
    st.sampled_from(["memory", "ls"]),
    _aligned_ls,
    _aligned_remote,
    _good_size,
    st.integers(0, 31),
)
_valid_list = st.tuples(
    st.just("list"),
    st.booleans(),
    _aligned_ls,
    st.lists(_good_element, min_size=1, max_size=6),
    st.one_of(st.none(), st.tuples(st.integers(1, 5), _good_element)),
    st.integers(0, 31),
)
PROGRAMS = st.one_of(
    st.lists(st.one_of(_valid_dma, _valid_dma, _valid_list), min_size=1, max_size=8),  # legal, rewrites too
    st.lists(st.one_of(_dma, _dma, _dma, _list, _misuse), min_size=1, max_size=8),  # hostile
)

# -- the shadow copy --------------------------------------------------------------------------------


@dataclass
class Shadow:
    """What every byte must be: SPE 0's and SPE 1's local stores and the memory window."""

    ls0: np.ndarray
    ls1: np.ndarray
    mem: np.ndarray
    mem_base: int
    ls1_base: int
    done: list[str] = field(default_factory=list)

    def remote(self, ea: int, n: int) -> np.ndarray | None:
        """The shadow bytes of ``[ea, ea + n)``, or None outside the shadowed windows."""
        for base, arr in ((self.mem_base, self.mem), (self.ls1_base, self.ls1)):
            if base <= ea and ea + n <= base + len(arr):
                return arr[ea - base : ea - base + n]
        return None

    def move(self, put: bool, lsa: int, ea: int, n: int) -> None:
        far = self.remote(ea, n)
        assert far is not None, f"an accepted transfer left the shadowed windows: ea 0x{ea:x}"
        if put:
            far[:] = self.ls0[lsa : lsa + n]
        else:
            self.ls0[lsa : lsa + n] = far


def _program(ops: list[Any], shadow: Shadow) -> Callable[[int, int, int], None]:
    """The SPE program running ``ops``, updating ``shadow`` as each one is accepted."""

    def prog(speid: int, argp: int, envp: int) -> None:
        ls_alloc(0x8000 - 0x4000, 128)  # the list area: DMAs go above it
        for op in ops:
            _run_op(op, shadow)
            shadow.done.append(op[0])

    return prog


def _remote_ea(shadow: Shadow, where: str, off: Any) -> Any:
    """The EA of window offset ``off``; a hostile value goes to the MFC as it is."""
    base = shadow.mem_base if where == "memory" else shadow.ls1_base
    return base + off if _offset_ok(off) else off


def _lsa(off: Any) -> Any:
    """The local-store address of offset ``off`` above the list area (hostile values as they are)."""
    return 0x8000 + off if _offset_ok(off) else off


def _offset_ok(off: Any) -> bool:
    return isinstance(off, int) and not isinstance(off, bool) and 0 <= off < 2**32


def _run_op(op: tuple[Any, ...], shadow: Shadow) -> None:
    kind = op[0]
    if kind == "dma":
        _, put, where, ls_off, off, size, tag = op
        lsa = _lsa(ls_off)
        ea = _remote_ea(shadow, where, off)
        (mfc_put if put else mfc_get)(lsa, ea, size, tag)
        shadow.move(put, lsa, ea, size)  # accepted: it will move exactly these bytes
        mfc_write_tag_mask(1 << tag)
        mfc_read_tag_status_all()
    elif kind == "list":
        _, put, ls_off, elements, rewrite, tag = op
        lsa = _lsa(ls_off)
        n = mfc_list(LIST_LSA, [(s, shadow.mem_base + e, stall) for s, e, stall in elements])
        (mfc_putl if put else mfc_getl)(lsa, shadow.mem_base & ~0xFFFFFFFF, LIST_LSA, n, tag)
        final = list(elements)
        if rewrite is not None and rewrite[0] < len(elements):
            i, (s, e, stall) = rewrite
            mfc_list(LIST_LSA + 8 * i, [(s, shadow.mem_base + e, stall)])
            final[i] = (s, e, stall)
        mfc_write_tag_mask(1 << tag)
        mfc_read_tag_status_all()
        cursor = lsa
        for s, e, _ in final:  # the whole list was accepted, as fetched
            shadow.move(put, cursor, (shadow.mem_base + e) & 0xFFFFFFFF | shadow.mem_base & ~0xFFFFFFFF, s)
            cursor += s
    else:
        _, what, value = op
        _misuse_op(what, value)


def _misuse_op(what: str, value: Any) -> None:
    if what == "empty_mask":
        mfc_write_tag_mask(0)
        mfc_read_tag_status_all()
    elif what == "atomic_status":
        mfc_read_atomic_status()
    elif what == "stall_ack":
        mfc_write_list_stall_ack(value)
    elif what == "stat":
        spu_stat_in_mbox()
    elif what == "out_mbox_twice":
        spu_write_out_mbox(value)
        spu_write_out_mbox(value)  # nobody reads: a deadlock
    elif what == "tag_mask":
        mfc_write_tag_mask(value)
        assert mfc_read_tag_mask() == value
    else:
        compute(value)


# -- one fuzz case ----------------------------------------------------------------------------------


def _check(ops: list[Any], seed: int) -> str:
    m = Machine("qs20", seed=seed, time_limit_ns=2e6)
    mem = m.alloc(MEM_BYTES)
    rng = np.random.default_rng(seed)
    mem.array()[:] = rng.integers(0, 256, MEM_BYTES, dtype=np.uint8)
    m.local_store(1)[:] = rng.integers(0, 256, LS_BYTES, dtype=np.uint8)
    shadow = Shadow(
        ls0=m.local_store(0).copy(),
        ls1=m.local_store(1).copy(),
        mem=mem.array().copy(),
        mem_base=int(mem),
        ls1_base=Machine.ls_ea(1),
    )
    m.load(0, _program(ops, shadow))
    try:
        m.run()
    except CellsimError as e:
        assert str(e), "an error must say what was wrong"
        outcome = type(e).__name__ + (f":{e.kind}" if isinstance(e, MfcError) else "")
        if len(shadow.done) < len(ops) and ops[len(shadow.done)][0] == "list":
            return outcome  # a list stopped at a bad element has moved its earlier ones
    else:
        outcome = "ok"
    _compare(m, shadow, mem)
    return outcome


def _compare(m: Machine, shadow: Shadow, mem: Any) -> None:
    ls0 = m.local_store(0)
    bad = np.flatnonzero(ls0[0x8000:] != shadow.ls0[0x8000:])
    assert not bad.size, f"SPE 0's local store differs from the shadow at 0x{0x8000 + bad[0]:x}"
    bad = np.flatnonzero(mem.array() != shadow.mem)
    assert not bad.size, f"main memory differs from the shadow at offset 0x{bad[0]:x}"
    bad = np.flatnonzero(m.local_store(1) != shadow.ls1)
    assert not bad.size, f"SPE 1's local store differs from the shadow at 0x{bad[0]:x}"


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=EXAMPLES <= 100,  # CI: the same programs every run
)
@given(ops=PROGRAMS, seed=st.integers(0, 2**16))
def test_random_mfc_programs_match_the_shadow_or_fail_cleanly(ops: list[Any], seed: int) -> None:
    OUTCOMES[_check(ops, seed)] += 1


@pytest.fixture(scope="module", autouse=True)
def _report() -> Any:
    yield
    if REPORT:
        report = {"programs": sum(OUTCOMES.values()), "outcomes": dict(OUTCOMES.most_common())}
        with open(REPORT, "w") as f:
            json.dump(report, f, indent=1)
