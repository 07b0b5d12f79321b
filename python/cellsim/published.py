"""Published measurements that the experiments are compared against.

The results and the papers are data (``data/published.toml``, its schema in
its header), read and checked here once. Every entry is a number (or a bound,
or a range) that a paper's *text* states, as transcribed in
``shared/spec/calibration.md``; nothing here is read off a plot or made up.
Each entry says which experiment and which measured points it describes
(``experiment`` and ``where``), which record field it is compared with
(``quantity``) and how (``kind``):

``value``
    the simulated value should be within :data:`TOLERANCE_PCT` of it;
``upper_bound``
    the simulated value must not exceed it;
``lower_bound``
    the simulated value must exceed it (a statement such as "not among the
    top 10": rank above 10);
``range``
    ``value`` is ``(low, high)``; the simulated value should lie inside, give
    or take :data:`TOLERANCE_PCT`.

Results withheld to judge the model are its test set: they may appear here
with ``held_out=True`` so that reports can show the simulated value beside
them, but never with a value.

Examples:
    >>> from cellsim.published import entries
    >>> [e.id for e in entries(experiment="dma-latency")][:2]
    ['000-t1-spe-put-latency', '000-f4a-mem-put-91ns']
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "DATA",
    "PAPERS",
    "PHYSICAL_UNITS",
    "PUBLISHED",
    "TOLERANCE_PCT",
    "WITHHELD",
    "WITHHELD_NOTE",
    "DataError",
    "Paper",
    "Published",
    "cite",
    "entries",
    "get",
    "matches",
    "plain",
    "readable_id",
]

TOLERANCE_PCT = 10.0
"""How far (in %) a simulated value may be from a published one and still agree."""

Kind = Literal["value", "upper_bound", "lower_bound", "range"]
Half = Literal["fit", "check"]
Role = Literal["calibration", "statement"]

PHYSICAL_UNITS = ("GB/s", "ns", "ns/B")
"""Units of the measured values a calibration is made on (see :attr:`Published.role`)."""

WITHHELD = "reference value withheld"
"""What a reader sees for a result whose number the paper's text does not give
us (the project keeps it back to validate against): it is simulated only."""

WITHHELD_NOTE = (
    "'reference value withheld': the paper states this result, but its number is not in the part of "
    "the paper's text cellsim is reproduced from (it is kept back to validate the model, never fitted "
    "to); the simulated value is shown alone and counts neither for nor against agreement"
)
"""The one explanation of :data:`WITHHELD`, printed once where such rows appear."""


@dataclass(frozen=True)
class Paper:
    """A paper whose measurements cellsim reproduces (``id`` is the project's own key)."""

    id: str
    authors: str
    """Every author, as the paper lists them."""
    short: str
    """How a figure title or a table names it: ``Kistler et al.``."""
    title: str
    venue: str
    year: int

    def citation(self) -> str:
        """The full reference: authors, "title", venue, year."""
        return f'{self.authors}, "{self.title}", {self.venue}, {self.year}'

    def __str__(self) -> str:
        return f"{self.short} {self.year}"


def plain(text: str) -> str:
    """``text`` with the project's keys for the papers (the word seed and the paper's
    three-digit number) replaced by the papers' names ("Kistler et al. 2006's board"), for text
    written for developers (machine files) that a user reads."""
    return re.sub(
        r"\b[Ss]eed (00\d)\b", lambda m: cite(m.group(1)) if m.group(1) in PAPERS else m.group(0), text
    )


def readable_id(rid: str) -> str:
    """A result's id as a reader wants it: its paper by name, then the figure
    and what it is (``000-f4a-mem-put-91ns`` -> ``Kistler 2006 · f4a · mem-put-91ns``;
    the id itself is the key of ``data/published.toml``)."""
    key, _, rest = rid.partition("-")
    if key not in PAPERS or not rest:
        return rid
    p = PAPERS[key]
    author = p.short.split()[0].removesuffix(",")
    where, _, what = rest.partition("-")
    return f"{author} {p.year} · {where} · {what}" if what else f"{author} {p.year} · {where}"


def cite(paper: str, full: bool = False) -> str:
    """How users see a paper: ``Kistler et al. 2006``, or (``full``) its whole reference."""
    p = PAPERS[paper]
    return p.citation() if full else str(p)


@dataclass(frozen=True)
class Published:
    """One published result.

    Attributes:
        id: stable identifier, ``<paper>-<figure>-<what>``.
        paper: seed number (``"000"``).
        figure: where in the paper (``"Table 1"``, ``"Fig 4a"``...).
        description: what was measured, in words.
        experiment: the cellsim experiment that measures it.
        where: which records it describes: field -> value, or a tuple of
            accepted values (``{"op": "put", "size": (8, 16)}``).
        quantity: the record field compared (``latency_ns``, ``bandwidth_gbs``),
            or ``batch_speedup`` (bandwidth of a batched point divided by the
            blocking bandwidth at the same size, op and target).
        value: the number; ``(low, high)`` for a range; ``None`` if withheld.
        unit: unit of ``value``.
        kind: ``value`` | ``upper_bound`` | ``lower_bound`` | ``range``.
        held_out: the seed hides this result; it is never fitted to.
        quote: the sentence of the paper it comes from (``[page break]`` where a
            figure interrupts it in the text).
    """

    id: str
    paper: str
    figure: str
    description: str
    experiment: str
    where: Mapping[str, Any]
    quantity: str
    value: float | tuple[float, float] | None
    unit: str
    kind: Kind
    held_out: bool = False
    quote: str = field(default="", repr=False)
    half: Half | None = None
    """The declared half of the visible results it belongs to: a fitted parameter
    is fitted on ``fit`` and reported on ``check`` (``None`` when withheld)."""

    def __post_init__(self) -> None:
        if self.held_out and self.value is not None:
            raise ValueError(f"{self.id}: a withheld result must not have a value")
        if self.held_out and self.half is not None:
            raise ValueError(f"{self.id}: a withheld result is in neither half")
        if not self.held_out:
            if self.kind == "range":
                if not (isinstance(self.value, tuple) and len(self.value) == 2):
                    raise ValueError(f"{self.id}: a range needs (low, high)")
            elif not isinstance(self.value, (int, float)):
                raise ValueError(f"{self.id}: a {self.kind} needs a number")

    @property
    def role(self) -> Role:
        """``calibration``: a measured value in a physical unit (GB/s, ns), the kind of number
        the model's parameters are calibrated on; ``statement``: a bound, a range or a ratio,
        the papers' claims about how the hardware behaves."""
        return "calibration" if self.kind == "value" and self.unit in PHYSICAL_UNITS else "statement"

    def quote_text(self) -> str:
        """The quote as a reader sees it: a number the project keeps back is "[value withheld]"."""
        return " ".join(self.quote.replace("[held out for validation]", "[value withheld]").split())

    def text(self) -> str:
        """The published statement as a short string: ``91 ns``, ``< 100 ns``, ``2-3 x``."""
        if self.held_out or self.value is None:
            return WITHHELD
        if self.kind == "range":
            lo, hi = self.value  # type: ignore[misc]
            return f"{lo:g}-{hi:g} {self.unit}"
        prefix = {"upper_bound": "< ", "lower_bound": "> "}.get(self.kind, "")
        return f"{prefix}{self.value:g} {self.unit}"


def matches(where: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    """Whether ``record`` is one of the points that ``where`` selects."""
    for key, want in where.items():
        have = record.get(key)
        if isinstance(want, tuple):
            if have not in want:
                return False
        elif have != want:
            return False
    return True


DATA = Path(__file__).resolve().parent / "data" / "published.toml"
"""The data file the published results and the papers are read from."""

_RESULT_KEYS: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "paper": str,
    "figure": str,
    "description": str,
    "experiment": str,
    "quantity": str,
    "value": (int, float, list),
    "unit": str,
    "kind": str,
    "withheld": bool,
    "half": str,
    "quote": str,
    "where": dict,
}
_REQUIRED = {"id", "paper", "figure", "description", "experiment", "quantity", "unit", "kind", "where"}


class DataError(ValueError):
    """The published-results file breaks its schema (a bug in cellsim's data, not the user's)."""


def _result(raw: dict[str, Any], quotes: Mapping[str, str], papers: Mapping[str, Paper]) -> Published:
    """One ``[[result]]`` of the data file, checked against the schema."""
    rid = raw.get("id", "?")
    missing = _REQUIRED - raw.keys()
    unknown = raw.keys() - _RESULT_KEYS.keys()
    if missing or unknown:
        raise DataError(f"{DATA.name}: result {rid!r}: missing {sorted(missing)}, unknown {sorted(unknown)}")
    for key, types in _RESULT_KEYS.items():
        if key in raw and not isinstance(raw[key], types):
            raise DataError(f"{DATA.name}: result {rid!r}: {key} = {raw[key]!r} has the wrong type")
    if raw["paper"] not in papers:
        raise DataError(f"{DATA.name}: result {rid!r}: no paper {raw['paper']!r}")
    if raw["kind"] not in ("value", "upper_bound", "lower_bound", "range"):
        raise DataError(
            f"{DATA.name}: result {rid!r}: kind {raw['kind']!r} is not value, upper_bound, lower_bound "
            "or range"
        )
    half = raw.get("half")
    if half not in (None, "fit", "check") or (half is None) != raw.get("withheld", False):
        raise DataError(
            f"{DATA.name}: result {rid!r}: a visible result's half is fit or check (not {half!r})"
        )
    quote = raw.get("quote")
    if quote is not None and quote not in quotes:
        raise DataError(f"{DATA.name}: result {rid!r}: no quote {quote!r}")
    value = raw.get("value")
    return Published(
        id=rid,
        paper=raw["paper"],
        figure=raw["figure"],
        description=raw["description"],
        experiment=raw["experiment"],
        where={k: tuple(v) if isinstance(v, list) else v for k, v in raw["where"].items()},
        quantity=raw["quantity"],
        value=tuple(value) if isinstance(value, list) else value,  # type: ignore[arg-type]
        unit=raw["unit"],
        kind=raw["kind"],
        held_out=raw.get("withheld", False),
        quote="" if quote is None else quotes[quote],
        half=half,
    )


def _load() -> tuple[dict[str, Paper], tuple[Published, ...]]:
    with DATA.open("rb") as f:
        doc = tomllib.load(f)
    papers = {key: Paper(key, **fields) for key, fields in doc["papers"].items()}
    results = tuple(_result(r, doc["quotes"], papers) for r in doc["result"])
    ids = [r.id for r in results]
    if len(set(ids)) != len(ids):
        raise DataError(f"{DATA.name}: result ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    return papers, results


PAPERS, PUBLISHED = _load()
"""The papers by the project's key (``Published.paper``, ``Experiment.paper``),
and every published result, in the order of the papers' figures."""


def entries(
    *, paper: str | None = None, experiment: str | None = None, held_out: bool | None = None
) -> list[Published]:
    """The published results, optionally only those of one paper / experiment,
    or only the withheld (``True``) or visible (``False``) ones."""
    return [
        e
        for e in PUBLISHED
        if (paper is None or e.paper == paper)
        and (experiment is None or e.experiment == experiment)
        and (held_out is None or e.held_out == held_out)
    ]


def get(id: str) -> Published:
    """The published result called ``id``; ``KeyError`` if there is none."""
    for e in PUBLISHED:
        if e.id == id:
            return e
    raise KeyError(f"no published result {id!r}")
