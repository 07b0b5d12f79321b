"""Message passing between SPEs (Keller and Varbanescu 2010) and the task-mapping explorer.

- :mod:`~cellsim.messaging.library`: the library itself, SPE side (the
  :class:`Endpoint` and the programs :func:`forward_task` and
  :func:`exchange_task`, twins of the native kernels in
  ``crates/cellsim-programs/src/messaging.rs``) and PPE side (:func:`setup`);
- :mod:`~cellsim.messaging.patterns`: the ring and user communication graphs;
- :mod:`~cellsim.messaging.simulate`: one run of a pattern under a mapping,
  with the placement modes and the run-to-run variation mechanisms.
"""

from __future__ import annotations

from .library import (
    CB_BYTES,
    PINNED,
    TASK_ID_LSA,
    Endpoint,
    InPeer,
    OutPeer,
    Setup,
    TaskSpec,
    exchange_task,
    forward_task,
    setup,
)
from .patterns import BUILTIN, Pattern, builtin, format_mapping, load_pattern, parse_mapping, ring_pattern
from .simulate import MODES, Variation, simulate

__all__ = [
    "BUILTIN",
    "CB_BYTES",
    "MODES",
    "PINNED",
    "TASK_ID_LSA",
    "Endpoint",
    "InPeer",
    "OutPeer",
    "Pattern",
    "Setup",
    "TaskSpec",
    "Variation",
    "builtin",
    "exchange_task",
    "format_mapping",
    "forward_task",
    "load_pattern",
    "parse_mapping",
    "ring_pattern",
    "setup",
    "simulate",
]
