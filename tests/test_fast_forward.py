"""The engine's fast-forward of steady states against its reference path
(``Machine(exact_reference=True)``, ``--exact-reference``): identical results.
The engine's own tests compare the two over random workloads."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

import cellsim
from cellsim.experiments import all_experiments, get
from cellsim.tools.cli import cli


def test_the_reference_path_and_the_fast_forward_agree(pairwise) -> None:
    ref = pairwise(True)
    fast = pairwise(None)
    assert ref[:3] == fast[:3]
    assert ref[3]["jumps"] == 0


def test_exact_reference_on_the_command_line_gives_the_same_output() -> None:
    args = ["run", "dma-latency", "--op", "put", "--target", "ls", "--sizes", "128,16384", "--json", "-"]
    runs = [
        CliRunner().invoke(cli, args + extra, catch_exceptions=False) for extra in ([], ["--exact-reference"])
    ]
    assert all(r.exit_code == 0 for r in runs), [r.output for r in runs]
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)


# Every experiment at a small size: the same records with and without the
# fast-forward (the "identical on every experiment"). The options keep
# each run to a fraction of a second while still streaming long enough for
# steady states to form where the experiment has them.
SMALL: dict[str, dict[str, Any]] = {
    "dma-latency": {"sizes": [128, 16384], "count": 64},
    "dma-batch": {"ops": ["get"], "sizes": [128, 4096], "batches": [1, 0], "count": 64},
    "hotspot": {"spes": [2, 8], "count": 32},
    "collective": {"patterns": ["complement"], "numberings": ["physical"], "count": 32},
    "latency-hist": {"count": 32},
    "ppe-cache": {"levels": ["l1"], "ops": ["load"], "threads": [1], "elements": [16]},
    "ppe-mem": {"banks": ["local"], "ops": ["copy"], "threads": [1], "elements": [16]},
    "spe-mem": {"spes": [1, 8], "sizes": [128, 16384], "mb_per_spe": 1},
    "spu-ls": {"ops": ["copy"], "elements": [16]},
    "spe-spe": {"sizes": [128, 16384], "waits": [1, 0], "mb": 1},
    "couples": {"pairs": [2], "sizes": [16384], "placements": 2, "mb_per_spe": 1},
    "cycle": {"spes": [4], "sizes": [16384], "placements": 2, "mb_per_spe": 1},
    "ppe-spe-mem": {"spes": [2], "ppe_kb": 64, "mb_per_spe": 1},
    "cross-chip": {"paths": ["memory", "spe"], "spes": [1], "mb_per_spe": 1},
    "buffering": {"kernels": ["t1"], "figures": ["10"], "blocks": 16},
    "ring": {"transmissions": 200},
    "mapping": {"mode": "pinned", "mappings": 3, "runs": 1, "transmissions": 100, "workers": 1, "out": None},
    "mpi-pingpong": {"sizes": [0, 4096, 65536], "reps": 4},
    "mpi-matvec": {"protocols": ["kumar"], "sizes": [512], "products": 1, "spes": [8]},
    "mpi-collectives": {"ops": ["Bcast", "Allreduce"], "spes": [4], "sizes": [512], "reps": 2},
}


# Those whose small runs reach a steady state: the comparison is not vacuous. (spe-spe and
# couples did too before the puts waited for their receivers' credits: a credit-bound put
# stream beside a port-bound get stream has no short common period for the fast-forward to
# find, so they now run event by event, about 30% longer; tests/test_variants.py checks the
# fast-forward with credits where it does jump.)
MUST_JUMP = {"dma-latency", "hotspot", "cross-chip", "ppe-spe-mem"}


def test_every_experiment_has_a_small_setting() -> None:
    assert set(SMALL) == {e.name for e in all_experiments()}


def _records_and_jumps(name: str, exact: bool) -> tuple[list[dict[str, Any]], int]:
    jumps = [0]
    run = cellsim.Machine.run

    def counted(self: cellsim.Machine, *args: Any, **kwargs: Any) -> Any:
        result = run(self, *args, **kwargs)
        jumps[0] += int(self.fast_forward_stats["jumps"])
        return result

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cellsim.Machine, "run", counted)
        records = get(name).run(**SMALL[name], exact_reference=exact)
    return records, jumps[0]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_experiment_gives_the_same_records_with_and_without_fast_forward(name: str) -> None:
    reference, none = _records_and_jumps(name, exact=True)
    fast, jumps = _records_and_jumps(name, exact=False)
    assert none == 0 and (jumps > 0 or name not in MUST_JUMP)
    assert json.dumps(fast, sort_keys=True, default=str) == json.dumps(reference, sort_keys=True, default=str)
