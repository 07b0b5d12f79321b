"""The registry of published values: well formed, and only what the text says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cellsim import experiments
from cellsim.experiments._common import compare_row
from cellsim.experiments._mapping_statements import STATEMENTS
from cellsim.published import PUBLISHED, TOLERANCE_PCT, Published, entries, get, matches

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def test_ids_are_unique_and_well_formed() -> None:
    ids = [e.id for e in PUBLISHED]
    assert len(ids) == len(set(ids))
    for e in PUBLISHED:
        assert e.id.startswith(e.paper + "-")
        assert e.kind in ("value", "upper_bound", "lower_bound", "range")
        assert e.unit and e.description and e.figure


def test_every_entry_belongs_to_a_registered_experiment() -> None:
    names = set(experiments.names())
    fields = {
        "dma-latency": {"op", "target", "size"},
        "dma-batch": {"op", "target", "size", "batch"},
        "buffering": {"figure", "kernel", "scheme", "c_scale"},
        "hotspot": {"target", "op", "spes"},
        "collective": {"pattern", "op"},
        "latency-hist": {"op", "spe"},
        "spe-mem": {"op", "spes", "size"},
        "spe-spe": {"size", "wait_every"},
        "couples": {"pairs", "mode", "size"},
        "cycle": {"spes", "mode", "size"},
        "mapping": {"machine", "mode", "packet", "unidirectional"},
        "mpi-pingpong": {"protocol", "pages", "chips"},
        "mpi-matvec": {"protocol", "n", "spes", "pages"},
        "cross-chip": {"path", "spes"},
        "ppe-cache": {"level", "op", "threads", "element"},
        "ppe-mem": {"bank", "op", "threads", "element"},
        "spu-ls": {"op", "element", "dma"},
    }
    contention_quantities = {
        "aggregate_gbs",
        "put_over_get",
        "put_degradation_pct",
        "get_minus_put_gbs",
        "figure_lowest_over",
        "over_figure_highest",
        "increase_ns",
        "mean_max_over_min",
        "mode_ns",
        "max_ns",
        "bandwidth_gbs",
        "max_bandwidth_gbs",
        "bw2_over_bw4",
        "bw8_over_bw4",
        "over_1k",
        "loss_outside_over_inside",
        "mean_gbs",
        "min_over_max_size",
        "spread_gbs",
        "list_over_elem",
        "per_direction_gbs",
        # seed 002's PPE and SPU load/store experiments
        "bw16_over_bw8",
        "bw8_over_bw16",
        "store_over_load",
        "proportionality",
        "one_over_two_threads",
        "l2_over_l1",
        "l2_over_l1l2",
        "mem_over_l2",
    }
    buffering_quantities = {
        "fit_S_ns",
        "fit_D1_ns_per_byte",
        "peak_over_dma_only",
        "t2_over_t1_peak",
        "peak_over_compute_rate",
        "flatness",
        "3b_over_2b",
        "1b_over_2b",
        "kb_over_1b_small",
        "1b_over_2b_large",
        "rank_agreement",
        "overestimate_pct",
        "c_variation_mean_pct",
        "c_variation_max_pct",
    }
    mapping_quantities = {
        "worst_over_best_mean",
        "worst_over_best_single",
        "median_over_mean",
        "mean_of_all_over_best",
        "identity_rank",
        "identity_over_best",
        "intuitive1_rank",
        "intuitive1_over_best",
        "intuitive2_rank",
        "intuitive2_over_best",
        "intuitive1_rank_of_all",
        "intuitive2_rank_of_all",
        "best_run_rank_spread_pct",
        "top_two_worst_run_rank_pct",
        *STATEMENTS,
    }
    for e in PUBLISHED:
        assert e.experiment in names
        assert set(e.where) <= fields[e.experiment], e.id
        if e.experiment == "mapping":
            assert e.quantity in mapping_quantities, e.id
        elif e.experiment.startswith("mpi-"):
            assert e.quantity in ("min_latency_us", "max_bandwidth_gbs", "gflops"), e.id
        elif e.experiment == "buffering":
            assert e.quantity in buffering_quantities, e.id
        elif e.experiment not in ("dma-latency", "dma-batch"):
            assert e.quantity in contention_quantities, e.id
        else:
            assert e.quantity in ("latency_ns", "bandwidth_gbs", "batch_speedup")


def test_held_out_results_have_no_value() -> None:
    for e in PUBLISHED:
        if e.held_out:
            assert e.value is None
        else:
            assert e.value is not None
    with pytest.raises(ValueError, match="withheld"):
        Published(
            "x", "000", "Fig 6b", "d", "dma-latency", {}, "latency_ns", 1.0, "ns", "value", held_out=True
        )
    with pytest.raises(ValueError, match="range"):
        Published("x", "000", "Fig 5", "d", "dma-batch", {}, "batch_speedup", 2.0, "x", "range")


def test_seed_000_values_are_the_published_ones() -> None:
    values = {e.id: e.value for e in entries(paper="000")}
    assert values == {
        "000-t1-spe-put-latency": 90.6,
        "000-f4a-mem-put-91ns": 91.0,
        "000-f4a-ls-get-91ns": 91.0,
        "000-f4a-ls-put-91ns": 91.0,
        "000-f4a-mem-get-under-100ns": 100.0,
        "000-f4b-ls-get-16k": 22.5,
        "000-f4b-ls-put-16k": 22.5,
        "000-f4b-mem-put-16k": 22.5,
        "000-f4b-mem-get-16k": 15.0,
        "000-f5b-mem-put-nonblocking": 25.6,
        "000-f5f-ls-put-nonblocking": 25.6,
        "000-f5-batching-256": (2.0, 3.0),
        "000-f6a-ls-hotspot-asymptote": 25.6,
        "000-f6a-mem-get-saturates": 25.6,
        "000-f6a-get-outperforms-put": 1.0,
        "000-f6a-put-degradation": None,
        "000-f6b-complement": None,
        "000-f6b-pairwise-get-over-put": 1.0,
        "000-f6b-pairwise-gap": None,
        "000-f6b-uniform": None,
        "000-f6b-other-static-above-lowest": 1.0,
        "000-f6b-other-static-below-highest": 1.0,
        "000-f7-fair": 1.0,
        "000-f7-peak": None,
        "000-f7-worst": None,
    }
    assert get("000-f4a-mem-get-under-100ns").kind == "upper_bound"
    assert get("000-f5-batching-256").text() == "2-3 x"
    assert get("000-f4a-mem-get-under-100ns").text() == "< 100 ns"
    with pytest.raises(KeyError):
        get("nope")


def test_filters() -> None:
    assert {e.experiment for e in entries(experiment="dma-batch")} == {"dma-batch"}
    # seed 000's Figures 6-7, seed 002's 8-SPE results, seed 004's Figure 12 numbers
    assert {e.paper for e in entries(held_out=True)} == {"000", "001", "002", "003", "004"}
    assert len(entries(held_out=False)) + len(entries(held_out=True)) == len(PUBLISHED)


def test_matches() -> None:
    where = {"op": "put", "size": (8, 16)}
    assert matches(where, {"op": "put", "size": 16, "target": "ls"})
    assert not matches(where, {"op": "put", "size": 32})
    assert not matches(where, {"op": "get", "size": 8})


@pytest.mark.skipif(not (SHARED / "seeds").is_dir(), reason="the seed papers are not next to the repository")
def test_quotes_are_in_the_paper() -> None:
    """Every quoted sentence (except the Table 1 transcription) is in seed 000's text."""
    (paper,) = (SHARED / "seeds").glob("000_*.txt")
    text = " ".join(paper.read_text().split())
    for e in entries(paper="000"):
        if e.figure == "Table 1":
            assert "Total 290 90.61" in text
            continue
        for piece in re.split(r"\s*\[page break\]\s*", e.quote):
            assert " ".join(piece.split()) in text, e.id


@pytest.mark.skipif(
    not (SHARED / "spec").is_dir(), reason="the calibration spec is not next to the repository"
)
def test_values_appear_in_calibration_md() -> None:
    text = (SHARED / "spec" / "calibration.md").read_text()
    for e in entries(held_out=False):
        nums = e.value if isinstance(e.value, tuple) else (e.value,)
        for v in nums:
            assert re.search(rf"(?<![\d.]){v:g}(?![\d])", text), (e.id, v)


def _entry(kind: str, value: object, held_out: bool = False) -> Published:
    return Published("t", "000", "Fig", "d", "dma-latency", {}, "latency_ns", value, "ns", kind, held_out)  # type: ignore[arg-type]


def test_compare_row_value() -> None:
    row = compare_row(_entry("value", 100.0), "p", 109.0)
    assert row["error_pct"] == pytest.approx(9.0) and row["within"] is True
    assert compare_row(_entry("value", 100.0), "p", 100 - TOLERANCE_PCT - 1)["within"] is False


def test_compare_row_upper_bound() -> None:
    assert compare_row(_entry("upper_bound", 100.0), "p", 99.0)["within"] is True
    row = compare_row(_entry("upper_bound", 100.0), "p", 101.0)
    assert row["within"] is False and row["error_pct"] == pytest.approx(1.0)


def test_compare_row_range() -> None:
    e = _entry("range", (2.0, 3.0))
    assert compare_row(e, "p", 2.5)["error_pct"] == 0.0
    assert compare_row(e, "p", 1.9)["within"] is True  # 5% under the range
    row = compare_row(e, "p", 6.0)
    assert row["within"] is False and row["error_pct"] == pytest.approx(100.0)
    assert row["published"] == [2.0, 3.0]


def test_compare_row_held_out() -> None:
    row = compare_row(_entry("value", None, held_out=True), "p", 12.0)
    assert row["published"] is None and row["error_pct"] is None and row["within"] is None
    assert row["simulated"] == 12.0 and row["published_text"] == "reference value withheld"


def test_the_visible_results_are_split_in_two_declared_halves() -> None:
    """Every experiment with two or more visible results has some in each half, and every role
    (calibration values, statements) is in both."""
    from collections import Counter

    from cellsim.published import entries

    visible = entries(held_out=False)
    per = Counter((e.experiment, e.half) for e in visible)
    for exp in {e.experiment for e in visible}:
        if per[(exp, "fit")] + per[(exp, "check")] >= 2:
            assert per[(exp, "fit")] and per[(exp, "check")], exp
    assert {(e.role, e.half) for e in visible} == {
        (r, h) for r in ("calibration", "statement") for h in ("fit", "check")
    }


def test_the_data_file_is_checked_against_its_schema() -> None:
    """A result with a bad kind, an unknown key or a missing quote is refused by name."""
    import pytest

    from cellsim.published import PAPERS, DataError, _result

    good = {
        "id": "x-1",
        "paper": "000",
        "figure": "Fig 1",
        "description": "d",
        "experiment": "dma-latency",
        "quantity": "latency_ns",
        "value": 1.0,
        "unit": "ns",
        "kind": "value",
        "half": "fit",
        "where": {"size": [8, 16]},
    }
    assert _result(good, {}, PAPERS).where == {"size": (8, 16)}
    for bad, words in (
        ({**good, "half": "train"}, "half is fit or check"),
        ({k: v for k, v in good.items() if k != "half"}, "half is fit or check"),
        ({**good, "kind": "about"}, "kind 'about'"),
        ({**good, "colour": "red"}, "unknown ['colour']"),
        ({**good, "quote": "nope"}, "no quote 'nope'"),
        ({**good, "paper": "999"}, "no paper '999'"),
        ({**good, "value": "91"}, "value = '91' has the wrong type"),
    ):
        with pytest.raises(DataError, match=words.replace("[", r"\[").replace("]", r"\]")):
            _result(bad, {}, PAPERS)
