"""Benchmark programs, in Python and as native (Rust) kernels.

Each Python program here is the line-by-line twin of a Rust kernel in
``crates/cellsim-programs/src/kernels.rs``: the same SPU calls in the same
order, hence the same simulated timing (the tests check it cycle for cycle).
Experiments run the native kernels by default because they are faster; pass
``native=False`` (``--python`` on the CLI) to run these instead.

Like the papers' benchmarks, they report elapsed decrementer ticks as the
exit value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from .machine import Machine
from .spu import (
    ls_alloc,
    mfc_get,
    mfc_getl,
    mfc_list,
    mfc_put,
    mfc_putl,
    mfc_read_tag_status_all,
    mfc_write_tag_mask,
    spu_read_decrementer,
    spu_write_decrementer,
)

__all__ = [
    "Kernel",
    "dma_bench",
    "load_dma_bench",
    "load_region",
    "load_stream",
    "load_traffic",
    "region",
    "stream",
    "traffic",
]

_MASK64 = (1 << 64) - 1


class Kernel:
    """A native (Rust) SPE program with its parameters, for
    ``spe_program_load(ctx, Kernel("dma_bench", put=False, ea=..., ...))`` or
    ``Machine.start_spe``. The names are in ``cellsim._engine.KERNELS``; the
    parameters are the keywords of the Python twin, typed as there (the
    engine checks them: ``cellsim_programs::program::Program``)."""

    def __init__(self, name: str, **params: Any) -> None:
        from . import _engine

        if name not in _engine.KERNELS:
            from .exceptions import UsageError

            raise UsageError(f"unknown kernel {name!r}: known kernels are {', '.join(_engine.KERNELS)}")
        self.name = name
        self.params = params

    def description(self) -> dict[str, Any]:
        """The program as the engine takes it: ``{"kind": name, **params}``."""
        return {"kind": self.name, **self.params}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"Kernel({self.name!r}, {args})"


def dma_bench(
    speid: int, argp: int, envp: int, *, put: bool, ea: int, size: int, batch: int, count: int
) -> int:
    """Kistler et al. 2006's basic DMA benchmark: ``count`` DMAs of ``size`` bytes to or
    from one buffer at ``ea``, waiting for completion after every ``batch``
    of them (0: only at the end). Returns elapsed decrementer ticks."""
    buf = ls_alloc(max(size, 16), align=128)
    tag = 3
    mfc_write_tag_mask(1 << tag)
    spu_write_decrementer(0xFFFFFFFF)
    start = spu_read_decrementer()
    dma = mfc_put if put else mfc_get
    for i in range(count):
        dma(buf, ea, size, tag)
        if batch and (i + 1) % batch == 0:
            mfc_read_tag_status_all()
    mfc_read_tag_status_all()
    end = spu_read_decrementer()
    return (start - end) & 0xFFFFFFFF


def stream(speid: int, argp: int, envp: int, *, get_ea: int, put_ea: int, size: int, pairs: int) -> int:
    """Streams gets and puts back to back and waits only at the end."""
    a = ls_alloc(size, align=128)
    b = ls_alloc(size, align=128)
    mfc_write_tag_mask(0b11)
    for _ in range(pairs):
        mfc_get(a, get_ea, size, 0)
        mfc_put(b, put_ea, size, 1)
    mfc_read_tag_status_all()
    return 0


def region(
    speid: int,
    argp: int,
    envp: int,
    *,
    op: str,
    span: int,
    total: int,
    size: int,
    get_ea: int = 0,
    put_ea: int = 0,
    wait_every: int = 0,
    list: bool = False,
) -> int:
    """Jiménez-González et al. 2007's SPE bandwidth loop (twin of ``bandwidth.rs``'s ``region``):
    moves ``total`` bytes in each direction between eight 16 KB local-store
    buffers and a remote region of ``span`` bytes at ``get_ea`` / ``put_ea``
    (memory or another local store), ``size`` bytes per DMA, or DMA lists of
    16 KB with ``size``-byte elements; ``op`` "get", "put" or "copy" (get+put pairs);
    waits every ``wait_every`` DMAs (pairs) or only at the end. Returns
    elapsed decrementer ticks."""
    buf = 16384
    bufs = ls_alloc(8 * buf, 128)
    per_cmd = buf if list else size
    elems = max(buf // size, 1)
    lst = ls_alloc(8 * elems * 2, 8)
    steps = -(-total // per_cmd)
    mfc_write_tag_mask(0xFFFFFFFF)
    spu_write_decrementer(0xFFFFFFFF)
    start = spu_read_decrementer()
    dirs = {"get": (False,), "put": (True,), "copy": (False, True)}[op]
    for i in range(steps):
        off = (i * per_cmd) % max(span, per_cmd)
        lsa = bufs + (i % 8) * buf
        tag = i % 32
        for put in dirs:
            ea = (put_ea if put else get_ea) + off
            if list:
                at = lst + (8 * elems if put else 0)
                n = mfc_list(at, [(size, ea + e * size) for e in range(elems)])
                (mfc_putl if put else mfc_getl)(lsa, ea & ~0xFFFFFFFF, at, n, tag)
            else:
                (mfc_put if put else mfc_get)(lsa, ea, size, tag)
        if wait_every > 0 and (i + 1) % wait_every == 0:
            mfc_read_tag_status_all()
    mfc_read_tag_status_all()
    return (start - spu_read_decrementer()) & 0xFFFFFFFF


def traffic(
    speid: int,
    argp: int,
    envp: int,
    *,
    eas: Sequence[int],
    size: int,
    count: int,
    put: bool = False,
    random: bool = False,
    seed: int = 1,
) -> int:
    """Kistler et al. 2006's collective benchmark (twin of ``bandwidth.rs``'s ``traffic``):
    ``count`` nonblocking DMAs of ``size`` bytes to ``eas[0]``, or each to a
    random one of ``eas`` (xorshift64* seeded by ``seed``), one wait at the
    end. Returns elapsed decrementer ticks."""
    ea = [int(e) for e in eas]
    targets = len(ea)
    buf = ls_alloc(max(size, 128), 128)
    x = ((int(seed) * 0x9E3779B97F4A7C15) & _MASK64) | 1
    mfc_write_tag_mask(0xFFFFFFFF)
    spu_write_decrementer(0xFFFFFFFF)
    start = spu_read_decrementer()
    dma = mfc_put if put else mfc_get
    for i in range(count):
        t = 0
        if random and targets > 1:
            x ^= x >> 12
            x ^= (x << 25) & _MASK64
            x ^= x >> 27
            t = (((x * 0x2545F4914F6CDD1D) & _MASK64) >> 33) % targets
        dma(buf, ea[t], size, i % 16)
    mfc_read_tag_status_all()
    return (start - spu_read_decrementer()) & 0xFFFFFFFF


def _load(m: Machine, spe: int, native: bool, name: str, fn: Callable[..., int], **params: Any) -> None:
    if native:
        m.load_kernel(spe, name, **params)
    else:
        m.load(spe, partial(fn, **params))


def load_dma_bench(
    m: Machine, spe: int, *, put: bool, ea: int, size: int, batch: int, count: int, native: bool = True
) -> None:
    """Loads :func:`dma_bench` (native or Python) on logical SPE ``spe``."""
    _load(m, spe, native, "dma_bench", dma_bench, put=put, ea=ea, size=size, batch=batch, count=count)


def load_stream(
    m: Machine, spe: int, *, get_ea: int, put_ea: int, size: int, pairs: int, native: bool = True
) -> None:
    """Loads :func:`stream` (native or Python) on logical SPE ``spe``."""
    _load(m, spe, native, "stream", stream, get_ea=get_ea, put_ea=put_ea, size=size, pairs=pairs)


def load_region(m: Machine, spe: int, *, native: bool = True, **params: Any) -> None:
    """Loads :func:`region` (native or Python) on logical SPE ``spe``; ``params``
    as :func:`region`'s keywords."""
    _load(m, spe, native, "region", region, **params)


def load_traffic(m: Machine, spe: int, *, native: bool = True, **params: Any) -> None:
    """Loads :func:`traffic` (native or Python) on logical SPE ``spe``; ``params``
    as :func:`traffic`'s keywords."""
    _load(m, spe, native, "traffic", traffic, **params)
