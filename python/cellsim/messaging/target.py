"""The machine a pattern is mapped onto, resolved once from its name.

Every layer of ``cellsim map`` (the command, the optimizer, the explorer,
the link-load model, one simulated run) needs a few facts of the machine
file: the physical SPEs Linux sees, the chips, the ramps of the rings. They
are read here, once per machine (a look at the resolved machine file, not a
run), into a :class:`Target` that the layers pass down; each simulated run
still builds its own :class:`~cellsim.Machine` from ``Target.spec``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from ..spec import MachineLike, MachineSpec

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["SPES_PER_CHIP", "Target", "Topology", "resolve"]

SPES_PER_CHIP = 8


@dataclass(frozen=True)
class Topology:
    """What the link-load model knows of a machine: each chip's ramps, its
    MIC and IOIF0 (the BIF's end), and how much slower the BIF is than both
    rings of one direction (16 B per bus cycle each)."""

    ramps: tuple[str, ...]
    mic: int
    ioif0: int
    chips: int
    bif_weight: float

    def where(self, physical: int) -> tuple[int, int]:
        """(chip, ramp) of a physical SPE."""
        return physical // SPES_PER_CHIP, self.ramps.index(f"SPE{physical % SPES_PER_CHIP}")


@dataclass(frozen=True)
class Target:
    """A machine as the messaging layers need it."""

    spec: MachineSpec
    """The machine, with its overrides (what each run builds)."""
    spes: tuple[int, ...]
    """The physical SPEs Linux sees (the machine's ``spes`` list, sorted)."""
    topology: Topology

    @property
    def name(self) -> str:
        """The machine name or TOML path, as given (what seeds and records carry: a variant of a
        machine draws the same placements as the machine)."""
        return self.spec.source

    @property
    def chips(self) -> int:
        """Cell chips of the machine."""
        return self.topology.chips

    def visible(self, override: Sequence[int] | None) -> tuple[int, ...]:
        """The SPEs a run may use: ``override`` (a ``Variation.visible``) or :attr:`spes`."""
        return tuple(override) if override is not None else self.spes


def resolve(machine: MachineLike | Target) -> Target:
    """The :class:`Target` of a machine name, TOML path or spec (a ``Target`` as it is)."""
    if isinstance(machine, Target):
        return machine
    spec = MachineSpec.of(machine)
    target = _read(spec)
    # the cache keys on the machine alone: the run's options are this spec's
    return target if target.spec.run == spec.run else replace(target, spec=spec)


@lru_cache(maxsize=16)
def _read(spec: MachineSpec) -> Target:
    facts = spec.facts
    weight = 1.0
    if facts.chips > 1 and facts.bif_link_gbs:
        ring_gbs = 2 * 16 * facts.core_hz / 2 / 1e9  # two rings of a direction
        weight = ring_gbs / facts.bif_link_gbs
    ramps = facts.ramps
    topo = Topology(ramps, ramps.index("MIC"), ramps.index("IOIF0"), facts.chips, weight)
    return Target(spec, facts.physical_spes, topo)
