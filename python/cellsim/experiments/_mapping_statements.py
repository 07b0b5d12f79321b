"""Keller and Varbanescu's statements that compare their figures with each other.

Each is a number computed from the summaries of two panels of the ``mapping``
experiment (:data:`cellsim.experiments.mapping.PAPER_PANELS`, by label), named
like a record field so that ``data/published.toml`` can hold the statement as a
bound on it. A statement whose panels were not run is left out.

"Mapping dependence" is the worst over the best average runtime, less one: how
much slower the worst mapping is. Its ratio between two panels says where the
mapping matters more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["STATEMENTS", "cross_quantities"]

Summary = Mapping[str, Any]


def _dependence(s: Summary) -> float:
    return float(s["worst_over_best_mean"]) - 1.0


def _tail_dependence(s: Summary) -> float:
    """Dependence without the few worst mappings: the 90th percentile over the best, less one."""
    return float(s["p90_over_best"]) - 1.0


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def _ratio_of(f: Callable[[Summary], float]) -> Callable[[Summary, Summary], float]:
    """``f`` of the first panel over ``f`` of the second."""
    return lambda a, b: _ratio(f(a), f(b))


def _field(name: str) -> Callable[[Summary], float]:
    return lambda s: float(s[name])


STATEMENTS: dict[str, tuple[tuple[str, ...], Callable[..., float]]] = {
    # Fig 3: "The individual curves are now closer to the average" (than Fig 2's).
    "stray_pinned_over_default": (
        ("fig3-1024", "fig2-1024"),
        _ratio_of(_field("stray_pct")),
    ),
    # Fig 3: "the identity permutation has gone down to rank ..." (from its Fig 2 rank).
    "identity_rank_pinned_over_default": (
        ("fig3-1024", "fig2-1024"),
        _ratio_of(_field("identity_rank")),
    ),
    # "We repeated the PS3 experiment with packet sizes of 2 kbyte and 0.5 kbyte, but did not
    # see significant changes".
    "dependence_2048_over_1024": (
        ("fig3-2048", "fig3-1024"),
        _ratio_of(_dependence),
    ),
    "dependence_512_over_1024": (
        ("fig3-512", "fig3-1024"),
        _ratio_of(_dependence),
    ),
    # "the traffic from the hypervisor SPE in the PS3 setting had no notable influence".
    "runtime_with_over_without_hypervisor": (
        ("fig3-1024", "fig3-1024-nohv"),
        _ratio_of(_field("mean_of_means_ns")),
    ),
    # Fig 4: "with more traffic (the ring now has 16 links), dependence on the mapping grows".
    "dependence_qs22_over_ps3": (
        ("fig4-1024", "fig3-1024"),
        _ratio_of(_dependence),
    ),
    # Fig 4: the ratios "for 2, 1, and 0.5 kbyte packets, respectively" grow as packets shrink.
    "dependence_512_over_2048": (
        ("fig4-512", "fig4-2048"),
        _ratio_of(_dependence),
    ),
    # Fig 5: "the mapping has a much smaller influence, except for a small number of mappings".
    "uni_over_bi_1024": (
        ("fig5-1024-uni", "fig4-1024"),
        _ratio_of(_tail_dependence),
    ),
    "uni_over_bi_512": (
        ("fig5-512-uni", "fig4-512"),
        _ratio_of(_tail_dependence),
    ),
}
"""Quantity -> (the panels it needs, how it is computed from their summaries)."""


def cross_quantities(summaries: Mapping[str, Summary]) -> dict[str, tuple[float, str]]:
    """Every statement whose panels are in ``summaries`` (panel label ->
    :func:`cellsim.messaging.explorer.summary`): quantity -> (value, the panels)."""
    out = {}
    for quantity, (panels, f) in STATEMENTS.items():
        if all(p in summaries for p in panels):
            out[quantity] = (f(*(summaries[p] for p in panels)), " vs ".join(panels))
    return out
