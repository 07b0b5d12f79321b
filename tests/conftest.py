"""Shared fixtures: a fresh machine per test."""

from __future__ import annotations

import pytest

from cellsim import Machine


@pytest.fixture
def m() -> Machine:
    """A qs20 with the identity placement (logical SPE n on physical SPE n)."""
    return Machine("qs20", seed=1, overrides={"placement": "identity"})
