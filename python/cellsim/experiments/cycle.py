"""``cycle``: 2, 4 or 8 SPEs, each active towards its neighbour (Jiménez-González et al. 2007, Figs 15-17).

Every logical SPE ``i`` of ``spes`` runs the ``spe-spe`` loop (get+put pairs
waiting only at the end) with SPE ``(i + 1) % spes``, DMA-elem or DMA-list,
so each SPE also serves its other neighbour's DMAs. The bandwidth of a run is
the sum over SPEs of their bytes (both directions) over their own elapsed
time; the peak is 16.8 GB/s per SPE on blade21 (33.6 for 2 SPEs, 134.4 for
8). Every point runs on ``placements`` seeded placements (default 10) and
reports min, max, median and mean with the best and worst placement, as
``couples``; the same default of :data:`DEFAULT_MB` MB per SPE and direction.

``compare`` holds Figures 16-17 of Jiménez-González et al. 2007 against the records: the 33.6 GB/s
peak with 2 SPEs (DMA-elem from 1 KB, DMA-list at every size; one row per
point), DMA-list constant over element sizes, DMA-elem's drop below 1 KB, and
the withheld 4- and 8-SPE means and 8-SPE spread (simulated only).

>>> from cellsim.experiments import cycle
>>> r = cycle.run(spes=[2], modes=["list"], sizes=[4096], placements=1, mb_per_spe=1)[0]
>>> r["links"], round(r["mean_gbs"])
([[0, 1], [1, 0]], 34)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Unpack

from ._links import DEFAULT_MB, DEFAULT_PLACEMENTS, MODES, Links, LinksSettings

__all__ = ["DEFAULT_MB", "DEFAULT_PLACEMENTS", "EXPERIMENT", "FIELDS", "LINKS", "MODES", "run"]

LINKS = Links(
    __name__,
    links=lambda n: [(i, (i + 1) % n) for i in range(n)],
    peak_ports=lambda n: n,
    key="spes",
    key_help="SPEs in the cycle, comma-separated",
    noun="SPE",
    values=(2, 4, 8),
    figure_avg="Figure 16",
    figure_spread="Figure 17",
)
FIELDS = LINKS.fields


def run(*, spes: Iterable[int] = (), **settings: Unpack[LinksSettings]) -> list[dict[str, Any]]:
    """Measures cycles of SPEs; one record per (spes, mode, size) over the placements."""
    return LINKS.run(EXPERIMENT.settings(settings), spes, settings)


EXPERIMENT = LINKS.experiment()
