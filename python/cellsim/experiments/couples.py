"""``couples``: 1, 2 or 4 couples of SPEs, one active, one passive (Jiménez-González et al. 2007, Figs 12-14).

Logical SPEs ``2k`` (active) and ``2k + 1`` (passive) form couple ``k``; each
active SPE runs the ``spe-spe`` loop (get+put pairs waiting only at the end)
with its partner, DMA-elem (``size``-byte DMAs) or DMA-list (16 KB lists of
``size``-byte elements), all couples at once. The bandwidth of a run is the
sum over active SPEs of their bytes (both directions) over their own elapsed
time; the peak is 33.6 GB/s per couple on blade21. Every point runs on
``placements`` seeded logical-to-physical placements (default 10, as the
paper: placement ``k`` is the one ``Machine(machine, seed=seed + k)`` draws)
and reports min, max, median and mean, with the best and worst placement.

The paper moved 32 MB per SPE; the default here is :data:`DEFAULT_MB` MB per
active SPE and direction, which reaches the same steady state at a
sixteenth of the cost (local stores have no pages to sample, and the DMAs
settle into their rate within microseconds). With 4 couples on 3
placements, 16 KB elements give 133.6, 134.2 and 117.4 GB/s with 2 MB
against 134.3, 134.4 and 117.6 with 32 MB; every 4-couple point is within
0.6% of 32 MB but 1 KB DMA-elem, where some placements settle late (mean
125.7 against 129.3 GB/s). The 8-SPE cycle agrees within 0.6% from 2 MB to
8 MB. ``--mb-per-spe 32`` runs the paper's size (the whole suite then takes
about four times longer).

``compare`` holds Figures 13-14 of Jiménez-González et al. 2007 against the records: 1 and 2
couples near their peaks (DMA-elem from 1 KB, DMA-list at every size; one row
per point), DMA-list constant over element sizes (smallest over largest mean),
DMA-list slightly below DMA-elem over 512 B with 4 couples (list over elem),
and the withheld 4-couple mean and spread (simulated only).

>>> from cellsim.experiments import couples
>>> r = couples.run(pairs=[1], modes=["list"], sizes=[4096], placements=2, mb_per_spe=1)[0]
>>> r["min_gbs"] <= r["median_gbs"] <= r["max_gbs"], len(r["best_placement"])
(True, 8)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Unpack

from ._links import DEFAULT_MB, DEFAULT_PLACEMENTS, MODES, Links, LinksSettings

__all__ = ["DEFAULT_MB", "DEFAULT_PLACEMENTS", "EXPERIMENT", "FIELDS", "LINKS", "MODES", "run"]

LINKS = Links(
    __name__,
    links=lambda n: [(2 * k, 2 * k + 1) for k in range(n)],
    peak_ports=lambda n: 2 * n,
    key="pairs",
    key_help="couples, comma-separated",
    noun="couple",
    values=(1, 2, 4),
    figure_avg="Figure 13",
    figure_spread="Figure 14",
)
FIELDS = LINKS.fields


def run(*, pairs: Iterable[int] = (), **settings: Unpack[LinksSettings]) -> list[dict[str, Any]]:
    """Measures couples of SPEs; one record per (pairs, mode, size) over the placements."""
    return LINKS.run(EXPERIMENT.settings(settings), pairs, settings)


EXPERIMENT = LINKS.experiment()
