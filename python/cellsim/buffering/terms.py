"""The model's terms for the machine it plans for.

Chen et al. derived their model's constants from the machine: ``S`` and ``D``
by a regression over DMA-only runs, ``C`` by profiling (:mod:`.fitting`,
:mod:`.profile`). A chip has costs their three constants leave out, and a
planner that ignores them picks schemes the chip does not run as the model
says. :func:`chip_terms` reads them from the machine's resolved file
(:class:`~cellsim.spec.MachineSpec`), so a changed machine file changes the
plan, and :func:`planner_constants` joins them to the fitted ``S`` and ``D1``
(measured once per machine and stream shape, remembered):

=========================  ====================================  ======================================
term                       from                                  what it bounds
=========================  ====================================  ======================================
``command_ns``             ``mfc.command_cycles``                the DMAC starts one command per this:
                                                                 many small DMAs are command-bound
``max_dma_bytes``          the MFC's largest transfer (16 KB)    commands per stream and block
``switch_ns``              :data:`~.profile.SWITCH_INSTRUCTIONS`  buffer switching, k >= 2, per block
``port_ns_per_byte``       ``spu.dma_ls_cycles`` per 128-B line  the local store's one port, which DMA
                                                                 takes first from the computation
``port_uses_per_iter``     the generated loop's loads, stores    how often the computation wants it
=========================  ====================================  ======================================

>>> from cellsim.buffering.terms import chip_terms
>>> t = chip_terms("qs20", (8, 8), (8,))
>>> round(t.command_ns, 1), t.commands(64), t.port_uses_per_iter
(30.0, 3, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ..spec import MachineLike, MachineSpec
from .fitting import fitted_constants
from .loop import LINE_BYTES, MAX_DMA, ls_uses_per_iteration
from .model import ChipTerms, Constants
from .profile import switch_cycles

__all__ = ["chip_terms", "planner_constants"]


@lru_cache(maxsize=64)
def _terms(
    spec: MachineSpec, fingerprint: str, inputs: tuple[int, ...], outputs: tuple[int, ...]
) -> ChipTerms:
    cycle_ns = 1e9 / spec.facts.core_hz
    streams = (*inputs, *outputs)
    return ChipTerms(
        command_ns=float(spec.setting("mfc.command_cycles")) * cycle_ns,
        max_dma_bytes=MAX_DMA,
        line_bytes=LINE_BYTES,
        streams=streams,
        # any k >= 2 switches the same instructions (switch_cycles(2, ...) == switch_cycles(4, ...))
        switch_ns=switch_cycles(2, len(streams)) * cycle_ns,
        port_ns_per_byte=float(spec.setting("spu.dma_ls_cycles")) * cycle_ns / LINE_BYTES,
        port_uses_per_iter=ls_uses_per_iteration(inputs, outputs),
        cycle_ns=cycle_ns,
    )


def chip_terms(machine: MachineLike, inputs: Sequence[int], outputs: Sequence[int]) -> ChipTerms:
    """The chip's terms of :class:`~cellsim.buffering.model.ChipTerms` on ``machine`` for a loop
    with these streams (element sizes), read from the machine's resolved file."""
    spec = MachineSpec.of(machine)
    return _terms(spec, spec.fingerprint, tuple(inputs), tuple(outputs))


def planner_constants(
    machine: MachineLike = "qs20",
    inputs: Sequence[int] = (8, 8),
    outputs: Sequence[int] = (8,),
    *,
    S: float | None = None,
    D1: float | None = None,
) -> Constants:
    """What the planner uses on ``machine``: ``S`` and ``D1`` fitted on it for these streams (or
    given), and the chip's terms (:func:`chip_terms`)."""
    chip = chip_terms(machine, inputs, outputs)
    if S is not None and D1 is not None:
        return Constants(S, D1, source="given", chip=chip)
    f = fitted_constants(machine, inputs, outputs)
    given = "" if S is None and D1 is None else f", {'S' if S is not None else 'D1'} given"
    return Constants(
        f.S_ns if S is None else S,
        f.D1_ns_per_byte if D1 is None else D1,
        source=f"fit {f.machine}{given}",
        chip=chip,
    )
