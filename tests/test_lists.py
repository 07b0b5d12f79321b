"""DMA lists: a list moves exactly what its elements say (the same bytes as
the transfers issued one by one), stall-and-notify holds it until
acknowledged, and bad lists are rejected naming the element."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cellsim import Machine, MfcError, spu

REGION = 16384  # each element gets its own region of the remote buffer
BUF = 0x8000  # local-store buffer of the list's data
LIST = 0x4000  # local-store address of the list


@st.composite
def dma_lists(draw) -> list[tuple[int, int, int]]:
    """Valid lists as (size, offset in the element's region, region) triples.

    Elements move to or from consecutive local-store addresses, so an
    element's alignment depends on the sizes before it: small elements pad the
    cursor back to a 16-byte boundary when a big one follows."""
    n = draw(st.integers(1, 12))
    out: list[tuple[int, int, int]] = []
    cursor = BUF
    for i in range(n):
        big = draw(st.booleans())
        if big:
            while cursor % 16:  # pad with the largest small size the cursor allows
                size = next(s for s in (8, 4, 2, 1) if cursor % s == 0 and s <= 16 - cursor % 16)
                out.append((size, 64 + cursor % 16, len(out)))
                cursor += size
            size = 16 * draw(st.sampled_from([1, 2, 3, 8, 9, 64, 256, 1024]))
            off = 16 * draw(st.integers(0, (REGION - size) // 16))
        else:
            size = draw(st.sampled_from([s for s in (1, 2, 4, 8) if cursor % s == 0]))
            off = 16 * draw(st.integers(0, 8)) + cursor % 16
        out.append((size, off, len(out)))
        cursor += size
        if len(out) > 40 or i == n - 1:
            break
    return out


def run_transfers(elements, *, put: bool, as_list: bool, remote_ls: bool) -> tuple[np.ndarray, np.ndarray]:
    """SPE 0 moves every element between its LS buffer and a remote buffer
    (main memory, or SPE 1's local store) as one list or one DMA each; returns
    (SPE 0's local store, the remote buffer) afterwards."""
    m = Machine("qs20", seed=1, overrides={"placement": "identity"})
    rng = np.random.default_rng(7)
    n_regions = len(elements)
    if remote_ls:
        remote_ea = Machine.ls_ea(1) + 0x10000
        remote = m.local_store(1)[0x10000 : 0x10000 + 8 * REGION]
    else:
        buf = m.alloc(n_regions * REGION)
        remote_ea, remote = int(buf), buf.array()
    remote[:] = rng.integers(0, 256, remote.size, dtype=np.uint8)
    m.local_store(0)[BUF : BUF + 0x30000] = rng.integers(0, 256, 0x30000, dtype=np.uint8)
    eas = [remote_ea + (region % 8 if remote_ls else region) * REGION + off for _, off, region in elements]

    def prog(speid: int, argp: int, envp: int) -> None:
        if as_list:
            n = spu.mfc_list(
                LIST, [(size, ea & 0xFFFFFFFF) for (size, _, _), ea in zip(elements, eas, strict=True)]
            )
            (spu.mfc_putl if put else spu.mfc_getl)(BUF, remote_ea & ~0xFFFFFFFF, LIST, n, 3)
        else:
            lsa = BUF
            for (size, _, _), ea in zip(elements, eas, strict=True):
                (spu.mfc_put if put else spu.mfc_get)(lsa, ea, size, 3)
                lsa += size
        spu.mfc_write_tag_mask(1 << 3)
        spu.mfc_read_tag_status_all()

    m.load(0, prog)
    m.run()
    return m.local_store(0)[BUF:].copy(), np.array(remote)


def distinct_regions(elements, remote_ls: bool) -> list:
    """Elements in SPE 1's local store share 8 regions: keep one element per region for puts."""
    if not remote_ls:
        return elements
    return elements[:8]


@settings(max_examples=25, deadline=None)
@given(elements=dma_lists(), put=st.booleans(), remote_ls=st.booleans())
def test_a_list_moves_the_same_bytes_as_its_elements_one_by_one(elements, put: bool, remote_ls: bool) -> None:
    elements = distinct_regions(elements, remote_ls)
    ls_a, remote_a = run_transfers(elements, put=put, as_list=True, remote_ls=remote_ls)
    ls_b, remote_b = run_transfers(elements, put=put, as_list=False, remote_ls=remote_ls)
    assert np.array_equal(ls_a, ls_b)
    assert np.array_equal(remote_a, remote_b)


def test_a_list_really_moves_bytes() -> None:
    """The control: the list changes the destination (the equality above is not vacuous)."""
    elements = [(128, 0, 0), (4096, 256, 1), (16, 32, 2), (4, 0, 3)]
    before, _ = run_transfers([(16, 0, 0)], put=False, as_list=True, remote_ls=False)
    after, remote = run_transfers(elements, put=False, as_list=True, remote_ls=False)
    assert np.array_equal(after[:128], remote[:128])
    assert np.array_equal(after[128 : 128 + 4096], remote[REGION + 256 : REGION + 256 + 4096])
    assert not np.array_equal(before[16 : 16 + 4096], after[16 : 16 + 4096])


def test_a_2048_element_list_is_allowed() -> None:
    m = Machine("qs20", seed=1)
    src = m.alloc(2048 * 16)
    src.array()[:] = np.arange(2048 * 16) % 253

    def prog(speid: int, argp: int, envp: int) -> None:
        n = spu.mfc_list(LIST, [(16, argp + 16 * (2047 - i)) for i in range(2048)])  # reversed
        spu.mfc_getl(BUF, 0, LIST, n, 0)
        spu.mfc_write_tag_mask(1)
        spu.mfc_read_tag_status_all()

    m.load(0, prog, argp=src)
    m.run()
    got = m.local_store(0)[BUF : BUF + 2048 * 16].reshape(2048, 16)
    assert np.array_equal(got, src.array().reshape(2048, 16)[::-1])


# -- stall-and-notify ---------------------------------------------------------------------


def test_stall_and_notify_holds_the_list_until_acknowledged(m: Machine) -> None:
    src = m.alloc(4 * 128)
    src.array()[:] = np.repeat(np.arange(1, 5, dtype=np.uint8), 128)
    log: dict[str, object] = {}

    def landed(ls: np.ndarray) -> list[bool]:
        return [bool((ls[BUF + 128 * i : BUF + 128 * (i + 1)] == i + 1).all()) for i in range(4)]

    def prog(speid: int, argp: int, envp: int) -> None:
        ls = spu.spu_ls()
        n = spu.mfc_list(
            LIST, [(128, argp), (128, argp + 128, True), (128, argp + 256, True), (128, argp + 384)]
        )
        spu.mfc_getl(BUF, 0, LIST, n, 5)
        spu.mfc_write_tag_mask(1 << 5)
        log["stall1"] = spu.mfc_read_list_stall_status()
        spu.compute(5000)
        log["held"] = landed(ls), spu.mfc_read_tag_status_immediate()
        spu.mfc_write_list_stall_ack(5)
        log["stall2"] = spu.mfc_read_list_stall_status()
        log["last_held"] = landed(ls)
        spu.mfc_write_list_stall_ack(5)
        spu.mfc_read_tag_status_all()
        log["done"] = landed(ls)

    m.load(0, prog, argp=src)
    m.run()
    assert log["stall1"] == 1 << 5
    assert log["held"] == ([True, True, False, False], 0), "elements after the stall wait; the tag is busy"
    assert log["stall2"] == 1 << 5
    assert log["last_held"] == [True, True, True, False]
    assert log["done"] == [True] * 4


def test_stall_status_names_every_stalled_tag_and_ack_releases_one(m: Machine) -> None:
    src = m.alloc(1024)
    log: dict[str, object] = {}

    def prog(speid: int, argp: int, envp: int) -> None:
        for tag, base in ((2, 0), (9, 512)):
            lst = LIST + 64 * tag
            n = spu.mfc_list(lst, [(128, argp + base, True), (128, argp + base + 128)])
            spu.mfc_getl(BUF + 4 * base, 0, lst, n, tag)
        spu.compute(3000)
        log["both"] = spu.mfc_read_list_stall_status()
        spu.mfc_write_list_stall_ack(9)
        spu.mfc_write_tag_mask(1 << 9)
        spu.mfc_read_tag_status_all()
        spu.mfc_write_tag_mask(1 << 2)
        log["other_still_busy"] = spu.mfc_read_tag_status_immediate()
        spu.mfc_write_list_stall_ack(2)
        spu.mfc_read_tag_status_all()

    m.load(0, prog, argp=src)
    m.run()
    assert log["both"] == 1 << 2 | 1 << 9
    assert log["other_still_busy"] == 0


# -- bad lists ----------------------------------------------------------------------------


def issue_list(m: Machine, elements, *, lst: int = LIST, size: int | None = None, put: bool = False) -> None:
    def prog(speid: int, argp: int, envp: int) -> None:
        n = spu.mfc_list(lst, [(s, argp + off) for s, off in elements])
        (spu.mfc_putl if put else spu.mfc_getl)(BUF, 0, lst, n if size is None else size, 1)
        spu.mfc_write_tag_mask(2)
        spu.mfc_read_tag_status_all()

    m.load(0, prog, argp=m.alloc(1 << 20))
    m.run()


@pytest.mark.parametrize(
    ("elements", "kind", "words"),
    [
        ([(128, 0), (24, 256)], "list", ["list element 1", "size 24"]),
        ([(128, 0), (128, 128), (16400, 4096)], "list", ["list element 2", "16400"]),
        ([(128, 0), (128, 256), (128, 264)], "alignment", ["list element 2", "16-byte aligned"]),
        ([(16, 0), (4, 6)], "alignment", ["list element 1", "naturally aligned"]),
        ([(4, 0), (4, 8)], "alignment", ["list element 1", "same low 4 bits"]),
        ([(16384, 0), (16384, 16384), (16384, 32768)] * 5 + [(16384, 0)], "ls_range", ["list element 14"]),
    ],
    ids=["size-24", "size-16400", "misaligned-ea", "small-misaligned", "low-bits", "past-ls-end"],
)
@pytest.mark.parametrize("put", [False, True], ids=["getl", "putl"])
def test_a_bad_element_is_named(m: Machine, elements, kind: str, words: list[str], put: bool) -> None:
    with pytest.raises(MfcError) as e:
        issue_list(m, elements, put=put)
    assert e.value.kind == kind, str(e.value)
    assert e.value.spe == 0
    assert ("mfc_putl" if put else "mfc_getl") in e.value.command
    for w in words:
        assert w in str(e.value), str(e.value)


def test_more_than_2048_elements(m: Machine) -> None:
    with pytest.raises(MfcError, match="2048") as e:
        issue_list(m, [(16, 16 * i) for i in range(2049)])
    assert e.value.kind == "list"


def test_a_list_not_8_byte_aligned(m: Machine) -> None:
    with pytest.raises(MfcError, match="8-byte aligned") as e:
        issue_list(m, [(128, 0)], lst=LIST + 4)
    assert e.value.kind == "list"


@pytest.mark.parametrize("size", [0, 12])
def test_a_list_size_that_is_not_whole_elements(m: Machine, size: int) -> None:
    with pytest.raises(MfcError, match=f"list size {size}") as e:
        issue_list(m, [(128, 0), (128, 128)], size=size)
    assert e.value.kind == "list"


def test_a_list_running_off_the_local_store(m: Machine) -> None:
    with pytest.raises(MfcError, match="inside the local store") as e:
        issue_list(m, [(16, 0)], lst=0x40000 - 8, size=16)
    assert e.value.kind == "list"


def test_an_unmapped_element_is_an_error(m: Machine) -> None:
    src = m.alloc(128)
    src.array()[:] = 0x5A
    got: list[int] = []

    def prog(speid: int, argp: int, envp: int) -> None:
        spu.mfc_get(BUF, argp, 128, 1)  # leaves 0x5A in a staging buffer
        spu.mfc_write_tag_mask(2)
        spu.mfc_read_tag_status_all()
        n = spu.mfc_list(LIST, [(128, 0xFFFF_FF00)])  # past the 512 MB of main memory
        spu.spu_ls()[BUF + 4096 : BUF + 4096 + 128] = 0xAA
        spu.mfc_getl(BUF + 4096, 0, LIST, n, 1)
        spu.mfc_read_tag_status_all()
        got.append(int(spu.spu_ls()[BUF + 4096]))

    m.load(0, prog, argp=src)
    with pytest.raises(MfcError) as e:
        m.run()
    assert e.value.kind == "unmapped", f"no error; the LS now holds 0x{got[0]:x}"
    assert "list element 0" in str(e.value)
