"""Chen et al. 2006's analytical model of a DMA-buffered streaming loop (Chen et al.).

A loop of ``N`` iterations is blocked by a factor ``bf``: each block moves
``bf`` elements of every stream with one set of DMAs and then runs ``bf``
iterations of the inner loop. With

``S``
    the set-up time of the DMAs of one block (ns),
``D = D1 * b``
    the transfer time per inner iteration (ns), ``b`` bytes per iteration,
``C = C_inner + C_outer / bf``
    the computation time per inner iteration (ns); ``C_outer`` is the cost of
    issuing the DMAs of a block, amortised over ``bf`` iterations,

the latency of the whole loop is (Section 2 of the paper)

=========  ======================================================  =========================
buffers    condition                                               latency
=========  ======================================================  =========================
1          always (no overlap)                                     ``(S/bf + D + C) * N``
k >= 2     DMA-bound: ``D >= max(C, (C + S/bf) / (k - 1))``        ``D * N``
k >= 2     computation-bound: ``D <= min(C, (k - 1) C - S/bf)``    ``C * N``
k >= 2     incomplete overlap otherwise                            ``(S/bf + C + D) * N / k``
=========  ======================================================  =========================

Unlike the paper, which approximated ``C`` by ``C_inner``, ``C_outer`` stays
in every formula; the paper names its omission as the reason why one buffer
beat two at small block factors (Figure 11). The three cases of ``k >= 2``
are one expression, ``max(D, C, (S/bf + C + D) / k)`` per iteration, which
for ``k = 1`` is the single-buffer formula (:func:`time_per_iteration_ns`).

What the paper's three constants leave out of a chip (the DMAC's time per
command, the buffer switching, the local store's port shared with DMA) are
:class:`ChipTerms`, derived from the machine the model plans for
(:mod:`.terms`); left at zero, the model is the paper's. With them the time per
iteration of ``k >= 2`` buffers is ``max(D, C, F, (S/bf + C + D)/k)``: ``F`` is
the block's DMA commands times the DMAC's time per command over ``bf``
(``command-bound``: the DMAC cannot start the block's commands faster), and
``C`` grows by the switching per block and the port cycles DMA takes from it.

>>> from cellsim.buffering.model import PAPER, Costs, predict
>>> t1 = Costs(c_inner_ns=0.51, c_outer_ns=300.0, bytes_per_iter=24)
>>> p = predict(t1, k=2, bf=1024, constants=PAPER)
>>> p.regime, round(p.time_per_iter_ns, 3)
('dma-bound', 2.105)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..exceptions import UsageError

__all__ = [
    "PAPER",
    "PAPER_CHIP",
    "REGIMES",
    "ChipTerms",
    "Constants",
    "Costs",
    "Prediction",
    "double_buffer_latency_ns",
    "k_buffer_latency_ns",
    "latency_ns",
    "predict",
    "regime",
    "single_buffer_latency_ns",
    "terms",
    "throughput_mbs",
    "time_per_iteration_ns",
]

REGIMES: tuple[str, ...] = ("serial", "dma-bound", "computation-bound", "incomplete overlap", "command-bound")
"""Regime names: ``serial`` is the single buffer (no overlap at all); ``command-bound``: the
DMAC's time per command, not the bytes, bounds the DMAs (:class:`ChipTerms`)."""


def _positive(name: str, value: float, unit: str) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise UsageError(f"{name} must be a positive number of {unit}, not {value!r}")


def _non_negative(name: str, value: float, unit: str) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
        raise UsageError(f"{name} must be a non-negative number of {unit}, not {value!r}")


def _check_kb(k: int, bf: float) -> None:
    if not (isinstance(k, int) and k >= 1):
        raise UsageError(f"the number of buffers k must be an integer >= 1, not {k!r}")
    if not (bf > 0):
        raise UsageError(f"the block factor must be positive, not {bf!r}")


@dataclass(frozen=True)
class ChipTerms:
    """What a chip adds to the paper's model for a loop's streams; all zero is the paper's model.

    Made from a machine by :func:`cellsim.buffering.terms.chip_terms`.
    """

    command_ns: float = 0.0
    """The DMAC starts at most one command per this time: a block's commands take at least their
    count times it, however well they overlap."""
    max_dma_bytes: int = 16384
    """A stream's block larger than this takes several commands."""
    line_bytes: int = 0
    """The bus moves memory a line (or a part of one) per request, and a request takes as long
    as a whole line's: a block that starts or ends within a line pays for all of it (0: bytes only,
    the paper's model)."""
    streams: tuple[int, ...] = ()
    """Element sizes of the loop's streams, inputs and outputs (one command each per block)."""
    switch_ns: float = 0.0
    """Buffer switching per block with two or more buffers (single-buffered code has none)."""
    port_ns_per_byte: float = 0.0
    """Local-store port time one DMA byte takes, which delays a computation that wants the port
    in every cycle (the port's cycles per line over the line)."""
    port_uses_per_iter: float = 0.0
    """Local-store accesses of one inner iteration."""
    cycle_ns: float = 0.0
    """The SPU's cycle: how many of a computation's cycles could want the port."""

    def __post_init__(self) -> None:
        for name in ("command_ns", "switch_ns", "port_ns_per_byte", "port_uses_per_iter", "cycle_ns"):
            _non_negative(name, getattr(self, name), "units")
        _positive("the largest DMA", self.max_dma_bytes, "bytes")

    def commands(self, bf: float) -> int:
        """DMA commands of a block of ``bf`` elements (0 when the streams are not known)."""
        return sum(math.ceil(bf * e / self.max_dma_bytes) for e in self.streams)

    def transfer_bytes(self, bf: float, bytes_per_iter: float) -> float:
        """Bytes a block of ``bf`` elements costs the memory path: every line its streams touch,
        whole. Blocks follow each other in each stream from a line-aligned start, so a block of
        ``L`` bytes touches ``L/line`` lines and one more for each of its boundaries within a line
        (all but ``gcd(L, line)/line`` of them)."""
        if self.line_bytes == 0 or not self.streams:
            return bf * bytes_per_iter
        line = self.line_bytes
        lines = sum(bf * e / line + 1 - math.gcd(int(bf) * e, line) / line for e in self.streams)
        return max(bf * bytes_per_iter, lines * line)

    def block_unit(self, granularity: int) -> int:
        """The block factors whose blocks are whole lines in every stream are the multiples of
        this (a multiple of ``granularity``; ``granularity`` itself when lines are not counted)."""
        unit = granularity
        for e in self.streams if self.line_bytes else ():
            unit = math.lcm(unit, self.line_bytes // math.gcd(self.line_bytes, e))
        return unit

    def port_stall_ns(self, c_inner_ns: float, bytes_per_iter: float) -> float:
        """Delay of one inner iteration by the block's DMA on the local store's port, when the two
        overlap: each DMA port cycle delays it with the probability that it wanted the port then
        (its port uses over its cycles, at most one)."""
        if self.port_ns_per_byte == 0 or self.cycle_ns == 0:
            return 0.0
        share = min(1.0, self.port_uses_per_iter * self.cycle_ns / c_inner_ns)
        return bytes_per_iter * self.port_ns_per_byte * share


PAPER_CHIP = ChipTerms()
"""No chip terms: the paper's model."""


@dataclass(frozen=True)
class Constants:
    """The machine's DMA constants: ``S`` (ns per block) and ``D1`` (ns per byte),
    and the chip's own terms (:class:`ChipTerms`; none: the paper's model).

    ``source`` says where they come from (``paper``, ``fit qs20``, ``given``).
    """

    S_ns: float
    D1_ns_per_byte: float
    source: str = "given"
    chip: ChipTerms = PAPER_CHIP

    def __post_init__(self) -> None:
        _positive("S", self.S_ns, "ns")
        _positive("D1", self.D1_ns_per_byte, "ns per byte")


PAPER = Constants(S_ns=130.0, D1_ns_per_byte=0.0877, source="paper")
"""Chen et al. 2006's constants, measured on a 3.2 GHz Cell blade."""


@dataclass(frozen=True)
class Costs:
    """What the model needs to know about a loop: ``C_inner`` and ``C_outer``
    (ns) and the bytes that all its streams move per inner iteration."""

    c_inner_ns: float
    c_outer_ns: float
    bytes_per_iter: float

    def __post_init__(self) -> None:
        _positive("C_inner", self.c_inner_ns, "ns")
        _non_negative("C_outer", self.c_outer_ns, "ns")
        _positive("bytes per iteration", self.bytes_per_iter, "B")

    def scaled(self, factor: float) -> Costs:
        """The same loop with ``C_inner`` and ``C_outer`` times ``factor``
        (Figure 12's C +-10%)."""
        return Costs(self.c_inner_ns * factor, self.c_outer_ns * factor, self.bytes_per_iter)


@dataclass(frozen=True)
class Prediction:
    """The model's verdict on one (k, bf)."""

    k: int
    bf: int
    regime: str
    time_per_iter_ns: float
    """Latency of the loop divided by ``N``."""
    throughput_mbs: float
    """Bytes of all streams moved per microsecond (MB/s, 10^6 bytes)."""
    space_bytes: int
    """Local store taken by the buffers: ``k * bf * bytes_per_iter``."""
    S_ns: float
    D_ns: float
    C_ns: float
    F_ns: float = 0.0
    """The DMAC's bound per iteration: the block's commands times its time per command, over ``bf``."""


# -- the paper's closed forms, case by case ---------------------------------------------


def single_buffer_latency_ns(n: float, bf: float, S: float, D: float, C: float) -> float:
    """Section 2.3: ``(S/bf + D + C) * N``."""
    return (S / bf + D + C) * n


def double_buffer_latency_ns(n: float, bf: float, S: float, D: float, C: float) -> float:
    """Section 2.4: ``D*N`` if ``D >= C + S/bf`` (DMA-bound), ``C*N`` if
    ``D <= C - S/bf`` (computation-bound), else ``(S/bf + D + C) * N/2``."""
    if D >= C + S / bf:  # noqa: SIM300 (the paper's notation)
        return D * n
    if D <= C - S / bf:  # noqa: SIM300 (the paper's notation)
        return C * n
    return (S / bf + D + C) * n / 2


def k_buffer_latency_ns(n: float, k: int, bf: float, S: float, D: float, C: float) -> float:
    """Section 2.5 (``k >= 2``): ``D*N`` if ``D >= max(C, (C + S/bf)/(k-1))``,
    ``C*N`` if ``D <= min(C, (k-1)*C - S/bf)``, else ``(S/bf + C + D) * N/k``."""
    if k < 2:
        raise UsageError(f"k_buffer_latency_ns is for k >= 2 buffers, not {k}")
    if D >= max(C, (C + S / bf) / (k - 1)):  # noqa: SIM300 (the paper's notation)
        return D * n
    if D <= min(C, (k - 1) * C - S / bf):  # noqa: SIM300 (the paper's notation)
        return C * n
    return (S / bf + C + D) * n / k


def regime(k: int, bf: float, S: float, D: float, C: float, F: float = 0.0) -> str:
    """``serial`` (k = 1), ``dma-bound``, ``computation-bound``, ``incomplete overlap`` or
    ``command-bound`` (``F``, the DMAC's bound per iteration, above all of the paper's terms).

    Where both bounds hold (``D == C`` with enough buffers), the loop is called DMA-bound.
    """
    _check_kb(k, bf)
    if k == 1:
        return "serial"
    if max(D, C, (S / bf + C + D) / k) < F:
        return "command-bound"
    if D >= max(C, (C + S / bf) / (k - 1)):  # noqa: SIM300 (the paper's notation)
        return "dma-bound"
    if D <= min(C, (k - 1) * C - S / bf):  # noqa: SIM300 (the paper's notation)
        return "computation-bound"
    return "incomplete overlap"


def latency_ns(n: float, k: int, bf: float, S: float, D: float, C: float) -> float:
    """Latency of ``n`` iterations with ``k`` buffers of ``bf`` elements
    (the paper's closed form for the regime the loop is in)."""
    _check_kb(k, bf)
    if k == 1:
        return single_buffer_latency_ns(n, bf, S, D, C)
    if k == 2:
        return double_buffer_latency_ns(n, bf, S, D, C)
    return k_buffer_latency_ns(n, k, bf, S, D, C)


def time_per_iteration_ns(k: int, bf: float, S: float, D: float, C: float, F: float = 0.0) -> float:
    """``max(D, C, (S/bf + C + D)/k)``: the same as :func:`latency_ns` over ``N``
    in every regime and for every ``k`` (the three cases are the three terms);
    with the DMAC's bound ``F`` (:class:`ChipTerms`) a fourth term for ``k >= 2``."""
    _check_kb(k, bf)
    return max(D, C, F, (S / bf + C + D) / k) if k > 1 else S / bf + C + D


def terms(costs: Costs, k: int, bf: float, constants: Constants) -> tuple[float, float, float, float]:
    """``(S, D, C, F)`` of ``costs`` with ``k`` buffers of ``bf`` on the chip of ``constants``:
    ``C`` with the buffer switching and the port's delay when DMA overlaps the computation
    (two or more buffers), ``F`` the DMAC's bound (0 for the paper's model)."""
    chip = constants.chip
    D = constants.D1_ns_per_byte * chip.transfer_bytes(bf, costs.bytes_per_iter) / bf
    C = costs.c_inner_ns + costs.c_outer_ns / bf
    if k > 1:
        C += chip.switch_ns / bf + chip.port_stall_ns(costs.c_inner_ns, costs.bytes_per_iter)
    F = chip.commands(bf) * chip.command_ns / bf
    return constants.S_ns, D, C, F


# -- the model applied to a loop ---------------------------------------------------------


def predict(costs: Costs, k: int, bf: int, constants: Constants) -> Prediction:
    """The model's latency, throughput and regime for ``costs`` with ``k``
    buffers of ``bf`` elements."""
    _check_kb(k, bf)
    S, D, C, F = terms(costs, k, bf, constants)
    t = time_per_iteration_ns(k, bf, S, D, C, F)
    return Prediction(
        k=k,
        bf=int(bf),
        regime=regime(k, bf, S, D, C, F),
        time_per_iter_ns=t,
        throughput_mbs=throughput_mbs(costs.bytes_per_iter, t),
        space_bytes=int(k * bf * costs.bytes_per_iter),
        S_ns=S,
        D_ns=D,
        C_ns=C,
        F_ns=F,
    )


def throughput_mbs(bytes_per_iter: float, time_per_iter_ns: float) -> float:
    """Bytes per iteration over time per iteration, in MB/s (10^6 bytes per second)."""
    return 1000.0 * bytes_per_iter / time_per_iter_ns
