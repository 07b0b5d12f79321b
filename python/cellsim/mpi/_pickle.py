"""How Python objects travel: ``MPI.pickle`` (mpi4py's ``Pickle``), whose
``dumps`` and ``loads`` a program may replace (by dill, cloudpickle...)."""

from __future__ import annotations

import pickle as _std
from collections.abc import Callable
from typing import Any

__all__ = ["Pickle", "pickle"]


class Pickle:
    """Serializes the objects of ``send``, ``bcast``... (``pickle`` at its highest protocol)."""

    def __init__(
        self,
        dumps: Callable[..., bytes] = _std.dumps,
        loads: Callable[[bytes], Any] = _std.loads,
        protocol: int | None = _std.HIGHEST_PROTOCOL,
    ) -> None:
        self._dumps, self._loads, self.PROTOCOL = dumps, loads, protocol

    def dumps(self, obj: Any) -> bytes:
        if self.PROTOCOL is None:
            return self._dumps(obj)
        return self._dumps(obj, self.PROTOCOL)

    def loads(self, data: bytes) -> Any:
        """The object; None for an empty message (as mpi4py)."""
        return self._loads(data) if len(data) else None


pickle = Pickle()
