"""Shared fixtures: a fresh machine per test."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from cellsim import Machine
from cellsim.kernels import load_stream

if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest-xdist's workers are started with COLUMNS=80 and LINES=24; the commands' tables are
    # wide off a terminal only when no COLUMNS is set (tools/console.py), as in a plain run.
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


@pytest.fixture
def m() -> Machine:
    """One Cell chip (qs20-1chip) with the identity placement (logical SPE n on
    physical SPE n): the API's behaviour, timed as on seed 000's board."""
    return Machine("qs20-1chip", seed=1, overrides={"placement": "identity"})


def pairwise_streams(exact_reference: bool | None, overrides: Sequence[str] = ()) -> tuple[object, ...]:
    """Eight SPEs started together, each streaming gets from and puts to its partner's local
    store (i ^ 1): the steady state the fast-forward jumps over. Returns the run's cycles,
    stats, every local store's bytes and the fast-forward's stats."""
    m = Machine("qs20-1chip", seed=1, overrides=list(overrides), exact_reference=exact_reference)
    for s in range(8):
        m.local_store(s)[0x20000:0x24000] = np.arange(0x4000, dtype=np.uint32).astype(np.uint8) ^ s
        load_stream(
            m, s, get_ea=m.ls_ea(s ^ 1) + 0x20000, put_ea=m.ls_ea(s ^ 1) + 0x30000, size=16384, pairs=6
        )
    r = m.run()
    stores = b"".join(bytes(m.local_store(s)) for s in range(8))
    return r.cycles, r.stats, stores, m.fast_forward_stats


@pytest.fixture
def pairwise() -> Callable[..., tuple[object, ...]]:
    """:func:`pairwise_streams`, for tests that compare its runs."""
    return pairwise_streams
