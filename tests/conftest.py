"""Shared fixtures: a fresh machine per test."""

from __future__ import annotations

import pytest

from cellsim import Machine


@pytest.fixture
def m() -> Machine:
    """One Cell chip (qs20-1chip) with the identity placement (logical SPE n on
    physical SPE n): the API's behaviour, timed as on seed 000's board."""
    return Machine("qs20-1chip", seed=1, overrides={"placement": "identity"})
