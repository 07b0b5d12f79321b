"""Fixtures of the MPI tests."""

from __future__ import annotations

import pytest
from mpi_helpers import PROTOCOLS


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> str:
    """Both protocols."""
    return str(request.param)
