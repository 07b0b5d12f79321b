"""A record of each run, as gem5's ``m5out`` is for architects: ``--out DIR``
on ``cellsim run``, ``cellsim exec`` and ``cellsim mpirun`` writes

``DIR/run.json``
    the command line, the seed, the machine (its name and any overrides),
    cellsim's version and git commit, the host, when it ran;
``DIR/machine.toml``
    the machine as it ran: its file with ``base =`` resolved and the
    overrides applied, every parameter written out (the engine's resolution,
    :class:`cellsim.spec.MachineSpec`), and the model variants it ran in run.json;
``DIR/stats.json`` and ``DIR/stats.txt``
    the run's counters, each with its unit and what it counts (``stats.txt``
    one per line, as gem5's ``stats.txt``); for an experiment, its measured
    points (``records.json``) too;

and ``cellsim diff RUN_A RUN_B`` says what changed between two such folders:
the command, the seed, the machine's parameters, the stats.

>>> described({"transfers": 12})["transfers"]["unit"]
'transfers'
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "STATS",
    "command_line",
    "described",
    "diff_runs",
    "record_option",
    "resolved_machine",
    "toml_text",
    "write_record",
]

FC = TypeVar("FC", bound=Callable[..., Any])

_INVOKED: list[list[str]] = []
"""The arguments ``cellsim`` was called with (set by the command line)."""


def command_line() -> list[str]:
    """The ``cellsim`` command being run, as its user typed it."""
    import sys

    return ["cellsim", *(_INVOKED[-1] if _INVOKED else sys.argv[1:])]


def record_option(*, sentence: bool = False) -> Callable[[FC], FC]:
    """``--out DIR``, into ``record_dir``: the record of a program's run (``cellsim exec``,
    ``cellsim mpirun``: its stats and result, :func:`write_record`). ``sentence``: the
    help as a sentence, for a command whose help is written in sentences."""
    import click

    text = (
        "write a record of the run into DIR: run.json, machine.toml (as it ran), stats.json and "
        "stats.txt (each counter with its unit); `cellsim diff` compares two"
    )
    return click.option(
        "--out",
        "record_dir",
        type=click.Path(file_okay=False),
        help=f"{text[0].upper()}{text[1:]}." if sentence else text,
    )


STATS: dict[str, tuple[str, str]] = {
    "cycles": ("SPU cycles", "simulated time, in cycles of the SPU clock"),
    "ns": ("ns", "simulated time"),
    "events": ("events", "events the engine handled"),
    "dma_commands": ("commands", "MFC commands (DMAs) issued"),
    "get_bytes": ("B", "bytes moved by gets (into local stores)"),
    "put_bytes": ("B", "bytes moved by puts (out of local stores)"),
    "bus_requests": ("requests", "bus requests of at most 128 B the MFCs made"),
    "bus_completed": ("requests", "bus requests completed"),
    "transfers": ("transfers", "EIB data transfers over every chip"),
    "transfer_bytes": ("B", "bytes of the EIB data transfers"),
    "ramp_sent": ("B per ramp", "bytes each EIB ramp sent (chip 0's ramps first)"),
    "ramp_received": ("B per ramp", "bytes each EIB ramp received (chip 0's ramps first)"),
    "segment_busy": ("bus cycles per segment", "busy cycles of each ring segment, a row per ring"),
    "bif_bytes": ("B per direction", "bytes over the BIF between the chips, each direction"),
    "bif_busy_cycles": ("bus cycles per direction", "busy cycles of the BIF, each direction"),
    "mic_reads": ("accesses", "DRAM reads over every memory"),
    "mic_writes": ("accesses", "DRAM writes over every memory"),
    "bank_read_bytes": ("B per bank", "bytes read from each memory bank"),
    "bank_write_bytes": ("B per bank", "bytes written to each memory bank"),
    "arbiter_rounds": ("rounds", "data-arbiter rounds"),
    "arbiter_attempts": ("attempts", "data-arbiter grant attempts"),
}
"""Each counter of ``Machine.stats()``: its unit and what it counts."""


def described(stats: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``Machine.stats()`` with each counter's unit and description:
    ``{name: {"value", "unit", "description"}}``."""
    out = {}
    for name, value in stats.items():
        unit, what = STATS.get(name, ("", ""))
        out[name] = {"value": value, "unit": unit, "description": what}
    return out


# -- the machine as it ran ---------------------------------------------------------------------


def _override_items(overrides: Mapping[str, Any] | Iterable[Any]) -> list[tuple[str, Any]]:
    if isinstance(overrides, Mapping):
        return list(overrides.items())
    items = []
    for o in overrides:
        if isinstance(o, tuple):
            items.append(o)
            continue
        key, _, value = str(o).partition("=")
        items.append((key.strip(), tomllib.loads(f"v = {value.strip()}")["v"]))
    return items


def _spec(name_or_path: str, overrides: Mapping[str, Any] | Iterable[Any]) -> Any:
    from ..spec import MachineSpec

    return MachineSpec.of(name_or_path, [f"{k}={_value(v)}" for k, v in _override_items(overrides)])


def resolved_machine(name_or_path: str, overrides: Mapping[str, Any] | Iterable[Any] = ()) -> dict[str, Any]:
    """The machine's parameters as a run uses them: its file over its ``base``
    (recursively), then ``overrides`` (``{"eib.command_phase_bus_cycles": 40}``
    or ``["eib.command_phase_bus_cycles=40"]``), as the engine resolves them."""
    table: dict[str, Any] = tomllib.loads(_spec(name_or_path, overrides).toml)
    return table


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + "}"
    return repr(v)


def toml_text(table: Mapping[str, Any], header: str = "") -> str:
    """A TOML document of ``table`` (scalars first, then each sub-table)."""
    lines = [f"# {ln}" for ln in header.splitlines()]

    def emit(t: Mapping[str, Any], prefix: str) -> None:
        scalars = [(k, v) for k, v in t.items() if not isinstance(v, dict)]
        tables = [(k, v) for k, v in t.items() if isinstance(v, dict)]
        if prefix and (scalars or not tables):
            lines.extend(["", f"[{prefix}]"])
        lines.extend(f"{k} = {_value(v)}" for k, v in scalars)
        for k, v in tables:
            emit(v, f"{prefix}.{k}" if prefix else k)

    emit(table, "")
    return "\n".join(lines).lstrip("\n") + "\n"


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            out.update(_flatten(v, key))
        else:
            out[key] = v
    return out


# -- writing a record ------------------------------------------------------------------------


def write_record(
    out: str | Path,
    *,
    command: Iterable[str] | None = None,
    machine: str,
    seed: int,
    overrides: Mapping[str, Any] | Iterable[str] = (),
    stats: Mapping[str, Any] | None = None,
    records: list[dict[str, Any]] | None = None,
    result: Mapping[str, Any] | None = None,
) -> Path:
    """Writes a run's record into directory ``out`` (made if needed): see the
    module's docstring. ``command``: the command line (default: the ``cellsim``
    command being run, :func:`command_line`). ``result``: what the command
    reports of the run (exit status, simulated time...), kept in run.json."""
    from .. import __version__
    from .report import _git_commit

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ov = _override_items(overrides)
    run = {
        "command": command_line() if command is None else list(command),
        "cwd": os.getcwd(),
        "machine": machine,
        "overrides": {k: v for k, v in ov},
        "seed": seed,
        "cellsim": __version__,
        "commit": _git_commit(),
        "host": f"{platform.node()} ({platform.platform()}, {os.cpu_count()} CPUs)",
        "python": platform.python_version(),
        "finished": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "result": dict(result or {}),
    }
    (out / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    header = f"machine {machine} as it ran: its file with base resolved"
    header += f", overrides {', '.join(f'{k}={_value(v)}' for k, v in ov)}" if ov else ", no overrides"
    spec = _spec(machine, ov)
    (out / "machine.toml").write_text("\n".join(f"# {h}" for h in header.splitlines()) + "\n" + spec.toml)
    run["variants"] = {v.name: v.value for v in spec.variants}
    (out / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    if stats is not None:
        d = described(stats)
        (out / "stats.json").write_text(json.dumps(d, indent=1) + "\n")
        width = max(len(k) for k in d) if d else 0
        lines = [
            f"{k:<{width}}  {json.dumps(v['value'])}  # {v['description']} ({v['unit']})"
            for k, v in d.items()
        ]
        (out / "stats.txt").write_text("\n".join(lines) + "\n")
    if records is not None:
        (out / "records.json").write_text(json.dumps(records, indent=1) + "\n")
    return out


# -- diff ------------------------------------------------------------------------------------


def _load(run: Path) -> dict[str, Any]:
    from ..exceptions import UsageError

    if not (run / "run.json").is_file():
        raise UsageError(f"{run}: not a run record (no run.json; write one with --out DIR)")
    doc: dict[str, Any] = {"run": json.loads((run / "run.json").read_text())}
    for name in ("stats.json", "records.json"):
        if (run / name).is_file():
            doc[name] = json.loads((run / name).read_text())
    if (run / "machine.toml").is_file():
        doc["machine"] = _flatten(tomllib.loads((run / "machine.toml").read_text()))
    return doc


def _num(a: Any, b: Any) -> str:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        pct = f" ({100 * (b - a) / a:+.1f}%)" if a else ""
        return f"{a:g} -> {b:g}{pct}"
    return f"{json.dumps(a)} -> {json.dumps(b)}"


def _total(v: Any) -> Any:
    """A list's sum (a per-ramp counter compared as its total), else the value."""
    if isinstance(v, list):
        return sum(_total(x) for x in v)
    return v


def _names_point(n: str, x: Mapping[str, Any], y: Mapping[str, Any], changed: str) -> bool:
    """Whether field ``n`` helps name a point: a string or integer setting both runs share."""
    v = x[n]
    return isinstance(v, (str, int)) and not isinstance(v, bool) and y.get(n) == v and n != changed


def diff_runs(a: str | Path, b: str | Path) -> list[str]:
    """What changed from run record ``a`` to ``b``, one line each (empty: nothing)."""
    ra, rb = _load(Path(a)), _load(Path(b))
    lines: list[str] = []
    for key in ("command", "machine", "overrides", "variants", "seed", "cellsim", "commit"):
        va, vb = ra["run"].get(key), rb["run"].get(key)
        if va != vb:
            show = " ".join(va) if key == "command" and va else va
            showb = " ".join(vb) if key == "command" and vb else vb
            lines.append(f"{key}: {show} -> {showb}")
    res_a, res_b = ra["run"].get("result", {}), rb["run"].get("result", {})
    for k in [*res_a, *(k for k in res_b if k not in res_a)]:
        if res_a.get(k) != res_b.get(k):
            lines.append(f"result {k}: {_num(res_a.get(k), res_b.get(k))}")
    ma, mb = ra.get("machine", {}), rb.get("machine", {})
    for k in sorted(set(ma) | set(mb)):
        if ma.get(k) != mb.get(k):
            if k not in ma:
                lines.append(f"machine {k}: added, {json.dumps(mb[k])}")
            elif k not in mb:
                lines.append(f"machine {k}: removed (was {json.dumps(ma[k])})")
            else:
                lines.append(f"machine {k}: {_num(ma[k], mb[k])}")
    sa, sb = ra.get("stats.json", {}), rb.get("stats.json", {})
    for k in [*sa, *(k for k in sb if k not in sa)]:
        raw_a, raw_b = sa.get(k, {}).get("value"), sb.get(k, {}).get("value")
        va, vb = _total(raw_a), _total(raw_b)
        if va != vb:
            unit = (sa.get(k) or sb.get(k))["unit"]
            total = " (total)" if isinstance(raw_a, list) or isinstance(raw_b, list) else ""
            if total:
                unit = unit.split(" per ")[0]
            lines.append(f"stat {k}{total}: {_num(va, vb)} {unit}".rstrip())
    pa, pb = ra.get("records.json"), rb.get("records.json")
    if pa is not None or pb is not None:
        pa, pb = pa or [], pb or []
        if len(pa) != len(pb):
            lines.append(f"points: {len(pa)} -> {len(pb)}")
        for i, (x, y) in enumerate(zip(pa, pb, strict=False)):
            for k in sorted(set(x) | set(y)):
                if x.get(k) != y.get(k) and not isinstance(x.get(k), (list, dict)):
                    where = ", ".join(f"{n}={x[n]}" for n in x if _names_point(n, x, y, k))
                    lines.append(f"point {i} ({where}) {k}: {_num(x.get(k), y.get(k))}")
    return lines
