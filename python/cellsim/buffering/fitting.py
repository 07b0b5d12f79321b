"""Measuring ``S`` and ``D1`` on a simulated machine, as Chen et al. 2006 did on hardware.

The paper "ran code that only performs a large number of DMA operations, and
inferred the values of D and S using linear regression analysis". Here that
code is the generated loop itself with one buffer and no computation: each
block gets every input stream, waits for them (and for the previous block's
puts, which share the tag), and puts every output stream. Its time per block
is ``S + D1 * b`` for ``b`` bytes per block; a least-squares line through the
points over block sizes gives the set-up time ``S`` (the intercept) and the
transfer time per byte ``D1`` (the slope).

Each point is a steady-state time per block: the difference between a run
of ``blocks[1]`` blocks and one of ``blocks[0]`` blocks, divided by the
difference, so the prologue and epilogue cancel exactly.

>>> from cellsim.buffering.fitting import fit
>>> f = fit("qs20")
>>> 100 < f.S_ns < 160 and 0.05 < f.D1_ns_per_byte < 0.12
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..exceptions import UsageError
from ..machine import Machine
from ..spec import MachineLike, MachineSpec
from .loop import Loop, free_local_store, generate, max_fitting_block
from .model import PAPER, Constants

__all__ = ["FIT_BLOCK_FACTORS", "Fit", "fit", "fitted_constants", "linear_fit", "steady_block_ns"]

FIT_BLOCK_FACTORS: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048)
"""Block factors of the DMA-only runs: with 8-byte elements, DMAs of 128 bytes to 16 KB."""


@dataclass(frozen=True)
class Fit:
    """The result of :func:`fit`."""

    S_ns: float
    D1_ns_per_byte: float
    r2: float
    """Coefficient of determination of the line."""
    bytes_per_block: list[int]
    ns_per_block: list[float]
    machine: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    @property
    def constants(self) -> Constants:
        """The fitted constants, for the model."""
        return Constants(self.S_ns, self.D1_ns_per_byte, source=f"fit {self.machine}")

    def as_dict(self) -> dict[str, object]:
        """A JSON-serialisable summary, with the paper's constants beside the fitted ones."""
        return {
            "machine": self.machine,
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "S_ns": self.S_ns,
            "D1_ns_per_byte": self.D1_ns_per_byte,
            "r2": self.r2,
            "paper_S_ns": PAPER.S_ns,
            "paper_D1_ns_per_byte": PAPER.D1_ns_per_byte,
            "points": [
                {"bytes_per_block": b, "ns_per_block": t}
                for b, t in zip(self.bytes_per_block, self.ns_per_block, strict=True)
            ],
        }


def linear_fit(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares ``y = a + b x``: returns ``(a, b, r2)``.

    Raises ``UsageError`` with fewer than two distinct ``x``.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if xs.shape != ys.shape or len(np.unique(xs)) < 2:
        raise UsageError("a linear fit needs at least two points with different sizes")
    b, a = np.polyfit(xs, ys, 1)
    resid = ys - (a + b * xs)
    ss = float(((ys - ys.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / ss if ss > 0 else 1.0
    return float(a), float(b), r2


def steady_block_ns(
    loop: Loop,
    k: int,
    bf: int,
    *,
    machine: MachineLike = "qs20",
    seed: int = 0,
    native: bool = True,
    blocks: tuple[int, int] = (32, 96),
    c_cycles: tuple[float, float] | None = None,
    overrides: dict[str, Any] | None = None,
) -> float:
    """Steady-state time of one block (ns) of ``loop`` blocked by ``bf`` with
    ``k`` buffers: ``(T(blocks[1]) - T(blocks[0])) / (blocks[1] - blocks[0])``.

    ``c_cycles`` overrides the loop's ``(C_inner, C_outer)`` in cycles (``(0, 0)``:
    DMA only). The data is not checked here (see :func:`~cellsim.buffering.loop.run_loop`).
    ``overrides`` change the machine's parameters (``{"mic.reads_per_requester": 5}``).
    """
    lo, hi = blocks
    if not (0 < lo < hi):
        raise UsageError(f"blocks must be two increasing positive counts, not {blocks!r}")
    times = []
    for nb in (lo, hi):
        lp = loop.with_n(nb * bf)
        m = Machine(machine, seed=seed, overrides=overrides or {})
        prog = generate(lp, k, bf, m)
        if c_cycles is not None:
            prog = dataclasses.replace(prog, c_inner_cycles=c_cycles[0], c_outer_cycles=c_cycles[1])
        ins = [m.alloc(lp.n * e) for e in lp.inputs]
        outs = [m.alloc(lp.n * e) for e in lp.outputs]
        tid = prog.load(m, 0, ins, outs, native=native)
        r = m.run()
        end = next(p.end_cycle for p in r.programs if p.thread == tid)
        if end is None:
            raise UsageError(f"the DMA-only loop (bf = {bf}) did not finish")
        times.append(m.cycles_to_ns(end))
    return (times[1] - times[0]) / (hi - lo)


def fit(
    machine: MachineLike = "qs20",
    *,
    inputs: Sequence[int] = (8, 8),
    outputs: Sequence[int] = (8,),
    block_factors: Sequence[int] = FIT_BLOCK_FACTORS,
    seed: int = 0,
    native: bool = True,
    overrides: dict[str, Any] | None = None,
) -> Fit:
    """Fits ``S`` and ``D1`` on ``machine`` for a loop with these streams
    (element sizes; default Chen et al. 2006's two 8-byte reads and one 8-byte write).

    Block factors are rounded up to blocks of whole lines in every stream
    (:attr:`~cellsim.buffering.loop.Loop.line_unit`: the paper's 8-byte elements
    give whole lines at every block factor it used), so that ``S`` and ``D1`` are
    the costs of whole lines; what a block that ends within a line adds is the
    chip's (:mod:`.terms`). Those that do not fit in the local store are skipped.
    ``overrides`` change the machine's parameters, to see which one sets ``S`` or ``D1``.
    """
    probe = Loop(n=4096, c_inner=1.0, c_outer=0.0, inputs=tuple(inputs), outputs=tuple(outputs))
    g = probe.line_unit
    bfs = sorted({-(-int(bf) // g) * g for bf in block_factors})
    m = Machine(machine, seed=seed)
    top = max_fitting_block(probe, 1, free_local_store(m))
    bfs = [bf for bf in bfs if bf <= top]
    if len(bfs) < 2:
        raise UsageError(f"a fit needs at least two block factors that fit, not {bfs}")
    x, y = [], []
    for bf in bfs:
        x.append(bf * probe.bytes_per_iter)
        y.append(
            steady_block_ns(
                probe,
                1,
                bf,
                machine=machine,
                seed=seed,
                native=native,
                c_cycles=(0.0, 0.0),
                overrides=overrides,
            )
        )
    S, D1, r2 = linear_fit(x, y)
    if S <= 0 or D1 <= 0:
        raise UsageError(f"the fit on {m.name} gave S = {S:.3g} ns and D1 = {D1:.3g} ns/B; both must be > 0")
    return Fit(S, D1, r2, x, y, m.name, tuple(inputs), tuple(outputs))


@lru_cache(maxsize=64)
def _cached(
    spec: MachineSpec, fingerprint: str, inputs: tuple[int, ...], outputs: tuple[int, ...], seed: int
) -> Fit:
    # the fingerprint (the resolved contents) is in the key: an edited machine file is fitted again
    return fit(spec, inputs=inputs, outputs=outputs, seed=seed)


def fitted_constants(
    machine: MachineLike = "qs20",
    inputs: Sequence[int] = (8, 8),
    outputs: Sequence[int] = (8,),
    seed: int = 0,
) -> Fit:
    """:func:`fit` with native kernels, remembered per machine (its resolved contents) and
    stream shape: the simulation is deterministic, so the fit is measured once."""
    spec = MachineSpec.of(machine)
    return _cached(spec, spec.fingerprint, tuple(inputs), tuple(outputs), seed)
