"""``cellsim validate``: the model against every visible published value.

Every experiment with a visible value in ``data/published.toml`` runs at the
smallest sizes where it still measures what its paper measured (its
``[NAME.validate]`` profile in ``data/experiments.toml``; ``full=True`` runs
``cellsim reproduce``'s defaults), and each visible compare row becomes a
line of the scoreboard: simulated, published, whether it holds, the row's
role (a ``calibration`` value or a ``statement``), its declared half (``fit``
or ``check``) and the model variants that claim to explain it.

Several *settings* (sets of machine overrides: a variant's choice, a
parameter's value) are scored side by side as one sweep (local worker
processes or a Dask cluster, resumable): :func:`validate` returns a
:class:`Scoreboard` per setting and :func:`ranking` orders them by statements
held, then by calibration error. Withheld values are never used: their rows
carry no verdict and are left out.

>>> from cellsim.validate import Setting, grid_settings
>>> [s.label for s in grid_settings({"axes": {"eib.recv_switch_bus_cycles": [0, 1]}})]
['default', 'eib.recv_switch_bus_cycles=0', 'eib.recv_switch_bus_cycles=1']
"""

from __future__ import annotations

import itertools
import math
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import published as pub
from .exceptions import ConfigError, UsageError
from .experiments import Experiment, all_experiments
from .experiments import get as get_experiment
from .spec import MachineSpec, override_strings
from .sweep import run_sweep

__all__ = [
    "GRIDS_DIR",
    "Fit",
    "Grid",
    "Row",
    "Scoreboard",
    "Setting",
    "fit_on_half",
    "grid_settings",
    "load_grid",
    "plan",
    "ranking",
    "read_grid",
    "run_point",
    "select",
    "shipped_grids",
    "validate",
    "withheld",
]


@dataclass(frozen=True)
class Setting:
    """One set of machine overrides to score (``default``: none)."""

    label: str
    overrides: tuple[str, ...] = ()

    @classmethod
    def of(cls, overrides: Iterable[str]) -> Setting:
        ov = override_strings(overrides)
        return cls(" ".join(ov) if ov else "default", ov)


DEFAULT = Setting("default")


def grid_settings(grid: Mapping[str, Any]) -> list[Setting]:
    """The settings of a grid: ``default`` first, then every combination of
    ``axes`` (``{key: [values]}``) and every ``[[setting]]`` (``overrides =
    [...]``, optional ``label``), in that order, repeats dropped. A grid's
    ``about`` and ``only`` (see :class:`Grid`) are not settings."""
    unknown = sorted(set(grid) - {"axes", "setting", "about", "only"})
    if unknown:
        raise UsageError(
            f"grid: unknown keys {unknown}; a grid has [axes] and/or [[setting]], and may say "
            'about = "..." and only = [...]'
        )
    out = [DEFAULT]
    axes = grid.get("axes", {})
    if not isinstance(axes, dict) or not all(isinstance(v, list) and v for v in axes.values()):
        raise UsageError("grid: [axes] maps each machine setting to a non-empty list of its values")
    keys = list(axes)
    for values in itertools.product(*(axes[k] for k in keys)):
        out.append(Setting.of(dict(zip(keys, values, strict=True))))
    for i, s in enumerate(grid.get("setting", [])):
        if not isinstance(s, dict) or not isinstance(s.get("overrides"), list):
            raise UsageError(f'grid: [[setting]] {i + 1} needs overrides = ["section.key=value", ...]')
        ov = override_strings(s["overrides"])
        out.append(Setting(str(s.get("label") or (" ".join(ov) or "default")), ov))
    seen: set[tuple[str, ...]] = set()
    unique = []
    for s in out:
        if s.overrides not in seen:
            seen.add(s.overrides)
            unique.append(s)
    return unique


@dataclass(frozen=True)
class Grid:
    """A grid file: its settings, what hypothesis it scores (``about``) and which values it
    was scored on (``only``: tokens of ``--only``; empty: every visible value)."""

    name: str
    about: str
    only: tuple[str, ...]
    settings: tuple[Setting, ...]

    @classmethod
    def parse(cls, name: str, grid: Mapping[str, Any]) -> Grid:
        about, only = grid.get("about", ""), grid.get("only", [])
        if not isinstance(about, str):
            raise UsageError(f"grid {name!r}: about must be a string, not {about!r}")
        if not isinstance(only, list) or not all(isinstance(o, str) for o in only):
            raise UsageError(f"grid {name!r}: only must be a list of --only tokens, not {only!r}")
        return cls(name, about, tuple(only), tuple(grid_settings(grid)))


#: The hypothesis grids cellsim ships: the settings behind the tables of docs/contention.md
#: and docs/messaging.md, so that anyone can score them again (``--grid NAME``).
GRIDS_DIR = Path(__file__).parent / "data" / "grids"


def shipped_grids() -> dict[str, Grid]:
    """The shipped grids by name (their file names without ``.toml``), sorted."""
    return {p.stem: _load(p, p.stem) for p in sorted(GRIDS_DIR.glob("*.toml"))}


def load_grid(path_or_name: str | Path) -> Grid:
    """A grid file, or a shipped grid by name (a file of that path comes first)."""
    path = Path(path_or_name)
    if path.exists() or path.suffix == ".toml" or len(path.parts) > 1:
        return _load(path, path.stem)
    shipped = GRIDS_DIR / f"{path_or_name}.toml"
    if shipped.is_file():
        return _load(shipped, str(path_or_name))
    names = ", ".join(shipped_grids())
    raise UsageError(f"--grid {str(path_or_name)!r}: no such file, and not a shipped grid ({names})")


def _load(path: Path, name: str) -> Grid:
    try:
        with open(path, "rb") as f:
            grid = tomllib.load(f)
    except OSError as e:
        raise UsageError(f"--grid {str(path)!r}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"--grid {str(path)!r} is not TOML: {e}") from None
    return Grid.parse(name, grid)


def read_grid(path: str | Path) -> list[Setting]:
    """The settings of a grid file or shipped grid (see :func:`grid_settings`)."""
    return list(load_grid(path).settings)


# -- which experiments and rows --------------------------------------------------------------


def _visible(exp: Experiment) -> list[pub.Published]:
    return [e for e in pub.entries(experiment=exp.name, held_out=False)]


def _paper_of(token: str) -> str | None:
    t = token.lower()
    for key, paper in pub.PAPERS.items():
        if t in (key, paper.short.lower(), paper.short.lower().split()[0], str(paper).lower()):
            return key
    return None


def select(only: Sequence[str] = ()) -> tuple[list[Experiment], Callable[[pub.Published], bool]]:
    """The experiments ``only`` asks for and a filter of their published entries.

    Each token is a paper (``000``, ``Kistler``), an experiment (``hotspot``)
    or a statement's id (``000-f6b-pairwise-get-over-put``, or a prefix of
    ids such as ``002-f9``)."""
    runnable = [e for e in all_experiments() if e.validate is not None and _visible(e)]
    if not only:
        return runnable, lambda e: True
    papers, experiments, ids = set(), set(), []
    for token in only:
        paper = _paper_of(token)
        if paper is not None:
            papers.add(paper)
        elif any(e.name == token for e in runnable):
            experiments.add(token)
        elif any(e.id.startswith(token) for x in runnable for e in _visible(x)):
            ids.append(token)
        else:
            known = ", ".join(
                [f"{k} ({p.short})" for k, p in pub.PAPERS.items()] + [e.name for e in runnable]
            )
            raise UsageError(
                f"--only {token!r} is no paper, experiment or visible statement id (papers and "
                f"experiments: {known}; statement ids: cellsim validate --list)"
            )

    def keep(e: pub.Published) -> bool:
        return e.paper in papers or e.experiment in experiments or any(e.id.startswith(i) for i in ids)

    chosen = [x for x in runnable if any(keep(e) for e in _visible(x))]
    return chosen, keep


def withheld(only: Sequence[str] = ()) -> dict[str, int]:
    """How many published values of each paper ``only`` selects are withheld:
    kept to judge the model, so counted here and never run against."""
    _, keep = select(only)
    counts = Counter(e.paper for e in pub.entries(held_out=True) if keep(e))
    return dict(sorted(counts.items()))


# -- the sweep's points ----------------------------------------------------------------------


def plan(
    settings: Sequence[Setting], experiments: Sequence[Experiment], *, full: bool = False, seed: int = 0
) -> list[dict[str, Any]]:
    """The sweep's points: one per setting, experiment and shard."""
    points = []
    for s in settings:
        for exp in experiments:
            prof = exp.validate
            assert prof is not None
            options: dict[str, Any] = {} if full else dict(prof.options)
            shards: tuple[Any, ...] = (None,)
            if prof.shard_option is not None and prof.shards:
                shards = prof.shards
            for i, value in enumerate(shards):
                opts = dict(options)
                if value is not None:
                    opts[str(prof.shard_option)] = value
                points.append(
                    {
                        "setting": s.label,
                        "overrides": list(s.overrides),
                        "experiment": exp.name,
                        "shard": i,
                        "options": opts,
                        "seed": seed,
                        "full": full,
                    }
                )
    return points


def point_key(p: dict[str, Any]) -> str:
    return f"{p['setting']}|{p['experiment']}|{p['shard']}"


def point_cost(p: dict[str, Any]) -> float:
    """A point's estimated host seconds (its experiment's measured ``seconds``, or
    ``full_seconds`` at ``cellsim reproduce``'s sizes): the sweep runs the longest
    first and counts its progress in them."""
    prof = get_experiment(p["experiment"]).validate
    assert prof is not None
    return prof.cost(int(p["shard"]), full=bool(p.get("full")))


def run_point(point: dict[str, Any]) -> dict[str, Any]:
    """Runs one point: an experiment (or a shard of it) under a setting's overrides."""
    exp = get_experiment(point["experiment"])
    opts = dict(point["options"])
    names = {o.name for o in exp.options}
    # a sweep worker runs its experiment in itself, writing nothing besides the sweep's results
    if "workers" in names:
        opts["workers"] = 1
    if "out" in names:
        opts["out"] = None
    t0 = time.perf_counter()
    records = exp.run(overrides=tuple(point["overrides"]), seed=int(point["seed"]), **opts)
    return {"records": records, "seconds": time.perf_counter() - t0}


# -- the scoreboard --------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One visible published value against its simulated value under one setting."""

    setting: str
    experiment: str
    id: str
    paper: str
    figure: str
    description: str
    point: str
    simulated: float
    published: str
    holds: bool
    error_pct: float | None
    role: str
    half: str
    mechanisms: tuple[str, ...]
    """The model variants whose choices claim to explain it."""


@dataclass
class Scoreboard:
    """The rows of one setting, and its totals."""

    setting: Setting
    rows: list[Row] = field(default_factory=list)
    seconds: float = 0.0
    """Host seconds its experiments took (summed over workers)."""

    def held(self, role: str | None = None, half: str | None = None) -> tuple[int, int]:
        """(holding, judged) rows, of one role and/or half."""
        rs = [r for r in self.rows if (role is None or r.role == role) and (half is None or r.half == half)]
        return sum(r.holds for r in rs), len(rs)

    def calibration_error(self, half: str | None = None) -> float:
        """Mean absolute error (%) of the calibration values."""
        errs = [
            abs(r.error_pct)
            for r in self.rows
            if r.role == "calibration" and r.error_pct is not None and (half is None or r.half == half)
        ]
        return sum(errs) / len(errs) if errs else math.nan

    def summary(self) -> dict[str, Any]:
        held, judged = self.held()
        out: dict[str, Any] = {"setting": self.setting.label, "held": held, "judged": judged}
        for role in ("statement", "calibration"):
            out[f"{role}s_held"], out[f"{role}s"] = self.held(role)
        for half in ("fit", "check"):
            out[f"{half}_held"], out[f"{half}"] = self.held(half=half)
        out["calibration_error_pct"] = self.calibration_error()
        out["seconds"] = self.seconds
        return out


def _mechanisms(experiments: Iterable[Experiment]) -> dict[str, tuple[str, ...]]:
    """Statement id -> the variants (``name=choice``) that claim to explain it, over the
    machines the experiments run on."""
    out: dict[str, set[str]] = {}
    for machine in sorted({e.machine for e in experiments} | {m for e in experiments for m in e.measured_on}):
        for v in MachineSpec.of(machine).variants:
            for c in v.choices:
                for sid in c.explains:
                    out.setdefault(sid, set()).add(f"{v.name}={c.name}")
    return {k: tuple(sorted(v)) for k, v in out.items()}


def score(
    setting: Setting,
    experiments: Sequence[Experiment],
    results: Mapping[str, list[dict[str, Any]]],
    keep: Callable[[pub.Published], bool],
    seconds: float = 0.0,
) -> Scoreboard:
    """The scoreboard of one setting from each experiment's records."""
    mechanisms = _mechanisms(experiments)
    board = Scoreboard(setting, seconds=seconds)
    for exp in experiments:
        records = results.get(exp.name, [])
        for r in exp.compare(records):
            if r["within"] is None:
                continue  # withheld: no verdict, and never looked at
            entry = pub.get(r["id"])
            if not keep(entry):
                continue
            board.rows.append(
                Row(
                    setting=setting.label,
                    experiment=exp.name,
                    id=entry.id,
                    paper=entry.paper,
                    figure=entry.figure,
                    description=entry.description,
                    point=str(r["point"]),
                    simulated=float(r["simulated"]),
                    published=entry.text(),
                    holds=bool(r["within"]),
                    error_pct=None if r["error_pct"] is None else float(r["error_pct"]),
                    role=entry.role,
                    half=str(entry.half),
                    mechanisms=mechanisms.get(entry.id, ()),
                )
            )
    return board


def validate(
    settings: Sequence[Setting] = (DEFAULT,),
    *,
    only: Sequence[str] = (),
    full: bool = False,
    seed: int = 0,
    workers: int | None = None,
    cluster: Any = None,
    out: str | Path | None = None,
    resume: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> list[Scoreboard]:
    """Scores every setting on every visible value that ``only`` selects (see
    :func:`select`): one :class:`Scoreboard` per setting, in order."""
    if not settings:
        raise UsageError("no settings to validate")
    experiments, keep = select(only)
    for s in settings:  # a bad override fails here, naming it, before anything runs
        for machine in sorted({e.machine for e in experiments}):
            try:
                MachineSpec.of(machine, s.overrides).toml  # noqa: B018
            except ConfigError as e:
                raise UsageError(f"setting {s.label!r} on {machine} (an experiment's machine): {e}") from None
    points = plan(settings, experiments, full=full, seed=seed)
    results = run_sweep(
        run_point,
        points,
        key=point_key,
        out=out,
        resume=resume,
        workers=workers,
        cluster=cluster,
        progress=progress,
        settings={"full": full, "seed": seed, "validate": 1},
        cost=point_cost,
    )
    boards = []
    for s in settings:
        per_exp: dict[str, list[dict[str, Any]]] = {}
        secs = 0.0
        for p, r in zip(points, results, strict=True):
            if p["setting"] == s.label:
                per_exp.setdefault(p["experiment"], []).extend(r["records"])
                secs += float(r["seconds"])
        boards.append(score(s, experiments, per_exp, keep, secs))
    return boards


@dataclass(frozen=True)
class Fit:
    """A setting chosen on the fit half alone, and what the check half then says."""

    chosen: Scoreboard
    default: Scoreboard

    def check(self, board: Scoreboard | None = None) -> tuple[int, int]:
        """(holding, judged) values of the check half, of the chosen setting or ``board``."""
        return (self.chosen if board is None else board).held(half="check")

    @property
    def confirmed(self) -> bool:
        """Whether the check half holds more with the chosen setting than with the default."""
        return self.check()[0] > self.check(self.default)[0]

    def summary(self) -> dict[str, Any]:
        fit, check = self.chosen.held(half="fit"), self.check()
        return {
            "setting": self.chosen.setting.label,
            "fit_held": fit[0],
            "fit": fit[1],
            "check_held": check[0],
            "check": check[1],
            "default_fit_held": self.default.held(half="fit")[0],
            "default_check_held": self.check(self.default)[0],
            "confirmed": self.confirmed,
        }


def fit_on_half(boards: Sequence[Scoreboard]) -> Fit:
    """The method of docs/contention.md in one step: the setting that holds the most values of
    the ``fit`` half (then the smallest calibration error on that half; a tie keeps the one
    listed first, the default before any variant), read against the ``check`` half, which the
    choice never saw. ``boards`` must include the default's."""
    default = next((b for b in boards if b.setting == DEFAULT), None)
    if default is None:
        raise UsageError("fitting needs the default's scoreboard beside the settings")

    def key(b: Scoreboard) -> tuple[float, float]:
        err = b.calibration_error(half="fit")
        return (-b.held(half="fit")[0], err if not math.isnan(err) else math.inf)

    return Fit(min(boards, key=key), default)


def ranking(boards: Sequence[Scoreboard]) -> list[dict[str, Any]]:
    """The settings' summaries, best first: most statements held, then most
    calibration values held, then the smallest calibration error."""

    def key(b: Scoreboard) -> tuple[float, float, float]:
        err = b.calibration_error()
        return (-b.held("statement")[0], -b.held("calibration")[0], err if not math.isnan(err) else math.inf)

    out = []
    for rank, b in enumerate(sorted(boards, key=key), 1):
        out.append({"rank": rank, **b.summary()})
    return out
