"""Benchmark programs, in Python and as native (Rust) kernels.

Each Python program here is the line-by-line twin of a Rust kernel in
``crates/cellsim-engine/src/kernels.rs``: the same SPU calls in the same
order, hence the same simulated timing (the tests check it cycle for cycle).
Experiments run the native kernels by default because they are faster; pass
``native=False`` (``--python`` on the CLI) to run these instead.

Like the papers' benchmarks, they report elapsed decrementer ticks as the
exit value.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from .machine import Machine
from .spu import (
    ls_alloc,
    mfc_get,
    mfc_put,
    mfc_read_tag_status_all,
    mfc_write_tag_mask,
    spu_read_decrementer,
    spu_write_decrementer,
)

__all__ = ["Kernel", "dma_bench", "load_dma_bench", "load_stream", "stream"]


class Kernel:
    """A native (Rust) SPE program with its parameters, for
    ``spe_program_load(ctx, Kernel("dma_bench", put=0, ea=..., ...))`` or
    ``Machine.start_spe``. The names are in ``cellsim._engine.KERNELS``."""

    def __init__(self, name: str, **params: float) -> None:
        from . import _engine

        if name not in _engine.KERNELS:
            from .exceptions import UsageError

            raise UsageError(f"unknown kernel {name!r}: known kernels are {', '.join(_engine.KERNELS)}")
        self.name = name
        self.params = params

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"Kernel({self.name!r}, {args})"


def dma_bench(
    speid: int, argp: int, envp: int, *, put: bool, ea: int, size: int, batch: int, count: int
) -> int:
    """Seed 000's basic DMA benchmark: ``count`` DMAs of ``size`` bytes to or
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


def _load(m: Machine, spe: int, native: bool, name: str, fn: Callable[..., int], **params: Any) -> None:
    if native:
        m.load_kernel(spe, name, **{k: float(v) for k, v in params.items()})
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
