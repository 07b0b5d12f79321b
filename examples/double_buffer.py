"""Double-buffered streaming from memory on 8 SPEs.

Each SPE squares its share of a big-endian float array in main memory: while
it works on one 16 KB buffer, the MFC fetches the next into the other. This
is the Cell SDK's classic pattern, line for line: the SPE first fetches its
control block (argp points to it), the next get is a barrier get (mfc_getb)
so it cannot overtake the put still draining that buffer, and each buffer
has its own tag group.

Run: python examples/double_buffer.py
"""

import numpy as np

from cellsim import Machine
from cellsim.spu import (
    compute,
    ls_alloc,
    mfc_get,
    mfc_getb,
    mfc_put,
    mfc_read_tag_status_all,
    mfc_write_tag_mask,
)

SPES = 8
CHUNK = 16384  # bytes per DMA (the largest single transfer)
CHUNKS_PER_SPE = 16
FLOATS = SPES * CHUNKS_PER_SPE * CHUNK // 4
CYCLES_PER_CHUNK = CHUNK // 16 * 2  # one 4-wide multiply per 16 bytes, dual-issued loads/stores
CONTROL = np.dtype([("src", ">u8"), ("dst", ">u8"), ("chunks", ">u4"), ("pad", ">u4", 3)])  # 32 bytes


def wait(tag: int) -> None:
    mfc_write_tag_mask(1 << tag)
    mfc_read_tag_status_all()


def spe_main(speid: int, argp: int, envp: int) -> int:
    ctl = ls_alloc(CONTROL.itemsize, align=128)
    mfc_get(ctl, argp, CONTROL.itemsize, 0)
    wait(0)
    c = ctl.array(CONTROL)[0]
    src, dst, chunks = int(c["src"]), int(c["dst"]), int(c["chunks"])

    buf = [ls_alloc(CHUNK, align=128), ls_alloc(CHUNK, align=128)]
    mfc_get(buf[0], src, CHUNK, 0)
    for i in range(chunks):
        cur, nxt = i % 2, (i + 1) % 2
        if i + 1 < chunks:  # start the next fetch; the barrier keeps it behind buf[nxt]'s put
            mfc_getb(buf[nxt], src + (i + 1) * CHUNK, CHUNK, nxt)
        wait(cur)
        x = buf[cur].array(">f4")
        x *= x
        compute(CYCLES_PER_CHUNK)
        mfc_put(buf[cur], dst + i * CHUNK, CHUNK, cur)
    mfc_write_tag_mask(0b11)
    mfc_read_tag_status_all()
    return 0


def main() -> None:
    m = Machine("qs20", seed=1)
    data = m.alloc(FLOATS * 4)
    out = m.alloc(FLOATS * 4)
    data.array(">f4")[:] = np.arange(FLOATS, dtype=np.float32) % 1000
    share = CHUNKS_PER_SPE * CHUNK
    for spe in range(SPES):
        ctl = m.alloc(CONTROL.itemsize)
        ctl.array(CONTROL)[0] = (int(data) + spe * share, int(out) + spe * share, CHUNKS_PER_SPE, 0)
        m.load(spe, spe_main, argp=ctl)
    r = m.run()

    assert np.array_equal(out.array(">f4"), data.array(">f4") ** 2), "wrong results"
    moved = 2 * FLOATS * 4
    mb = moved / 2**20
    print(f"{SPES} SPEs squared {FLOATS:,} floats ({mb:.0f} MB moved) in {r.ns / 1000:.1f} us simulated")
    print(f"memory bandwidth used: {moved / r.ns:.1f} GB/s (the XDR peak is 25.6 GB/s)")
    for p in r.programs:
        print(f"  SPE {p.spe} (physical {p.physical}) finished at {p.ended_ns / 1000:.1f} us")


if __name__ == "__main__":
    main()
