"""The engine's fast-forward of steady states against its reference path
(``Machine(exact_reference=True)``, ``--exact-reference``): identical results.
The engine's own tests compare the two over random workloads."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

import cellsim
from cellsim.cli import cli
from cellsim.kernels import load_stream


def _streams(exact_reference: bool | None) -> tuple[object, ...]:
    m = cellsim.Machine("qs20-1chip", seed=1, exact_reference=exact_reference)
    for s in range(8):
        # Started together: the steady state the fast-forward jumps over.
        m.local_store(s)[0x20000:0x24000] = np.arange(0x4000, dtype=np.uint32).astype(np.uint8) ^ s
        load_stream(
            m, s, get_ea=m.ls_ea(s ^ 1) + 0x20000, put_ea=m.ls_ea(s ^ 1) + 0x30000, size=16384, pairs=6
        )
    r = m.run()
    stores = b"".join(bytes(m.local_store(s)) for s in range(8))
    return r.cycles, r.stats, stores, m.fast_forward_stats


def test_the_reference_path_and_the_fast_forward_agree() -> None:
    ref = _streams(True)
    fast = _streams(None)
    assert ref[:3] == fast[:3]
    assert ref[3]["jumps"] == 0


def test_exact_reference_on_the_command_line_gives_the_same_output() -> None:
    args = ["run", "dma-latency", "--op", "put", "--target", "ls", "--sizes", "128,16384", "--json", "-"]
    runs = [
        CliRunner().invoke(cli, args + extra, catch_exceptions=False) for extra in ([], ["--exact-reference"])
    ]
    assert all(r.exit_code == 0 for r in runs), [r.output for r in runs]
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)
