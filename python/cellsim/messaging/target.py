"""The machine a pattern is mapped onto, resolved once from its name.

Every layer of ``cellsim map`` (the command, the optimizer, the explorer,
the link-load model, one simulated run) needs a few facts of the machine
file: the physical SPEs Linux sees, the chips, the ramps of the rings. They
are read here, once per name (a look at the machine file, not a run), into a
:class:`Target` that the layers pass down; each simulated run still builds
its own :class:`~cellsim.Machine` from ``Target.name``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ..machine import Machine
from ..trace import not_captured

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

    name: str
    """The machine name or TOML path, as given (what seeds and records carry)."""
    spes: tuple[int, ...]
    """The physical SPEs Linux sees (the machine's ``spes`` list, sorted)."""
    topology: Topology

    @property
    def chips(self) -> int:
        """Cell chips of the machine."""
        return self.topology.chips

    def visible(self, override: Sequence[int] | None) -> tuple[int, ...]:
        """The SPEs a run may use: ``override`` (a ``Variation.visible``) or :attr:`spes`."""
        return tuple(override) if override is not None else self.spes


def resolve(machine: str | Target) -> Target:
    """The :class:`Target` of a machine name or TOML path (a ``Target`` as it is)."""
    return machine if isinstance(machine, Target) else _read(str(machine))


@lru_cache(maxsize=16)
def _read(name: str) -> Target:
    with not_captured():  # a look at the machine file, not a run to trace
        m = Machine(name)
    info = m.info
    ramps = tuple(info["ramps"])
    chips = int(info["chips"])
    weight = 1.0
    if chips > 1:
        ring_gbs = 2 * 16 * float(info["core_hz"]) / 2 / 1e9  # two rings of a direction
        weight = ring_gbs / float(info["bif_link_gbs"])
    topo = Topology(ramps, ramps.index("MIC"), ramps.index("IOIF0"), chips, weight)
    return Target(name, tuple(sorted(m.placement)), topo)
