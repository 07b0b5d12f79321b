"""A machine as a value: overrides, including those named for one machine."""

from __future__ import annotations

import pytest

from cellsim.exceptions import UsageError
from cellsim.spec import MachineSpec


def test_an_override_named_for_a_machine_changes_that_machine_only() -> None:
    """``NAME:section.key=value`` (a sweep over several papers' machines that changes one of
    them); a name that is no shipped machine is one error naming it."""
    scoped = ["blade21:mic.reads_per_requester=4", "numa.policy=weighted:300"]
    assert MachineSpec.of("blade21", scoped).setting("mic.reads_per_requester") == 4
    assert MachineSpec.of("qs20", scoped).overrides == ("numa.policy=weighted:300",)
    assert MachineSpec.of(MachineSpec.of("blade21"), scoped).overrides == (
        "mic.reads_per_requester=4",
        "numa.policy=weighted:300",
    )
    with pytest.raises(UsageError, match="'blade' is not a shipped machine"):
        MachineSpec.of("qs20", ["blade:mic.reads_per_requester=4"])
