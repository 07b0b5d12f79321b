"""The binding fuzzer (issue 22): random calls straight to ``cellsim._engine``,
past every check of the Python layer and against the protocol that the
greenlet driver follows (calls for threads that are not running, calls after
the run ended, requests of the wrong side...).

Any engine error is fine; a Rust panic is not: it must never reach Python,
neither as a ``PanicException`` (a ``BaseException``) nor, via the safety
net, as an ``InvariantError``. ``make fuzz`` runs more examples
(``CELLSIM_FUZZ_EXAMPLES``).
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellsim import _engine
from cellsim.exceptions import InvariantError

EXAMPLES = int(os.environ.get("CELLSIM_FUZZ_EXAMPLES", "40"))

U8 = st.one_of(st.sampled_from([0, 1, 2, 4, 8, 16]), st.integers(0, 255))
U32 = st.one_of(st.sampled_from([0, 4, 16, 128, 0x4000, 0x3FFF0, 0x400C]), st.integers(0, 2**32 - 1))
U64 = st.one_of(
    st.sampled_from([0, 0x10000, 0x10080, 2**63, 2**64 - 1, _engine.ls_ea(1), _engine.ps_ea(1) + 0x400C]),
    st.integers(0, 2**64 - 1),
)
TID = st.one_of(st.integers(0, 4), st.integers(0, 2**20))
SPE = st.one_of(st.integers(0, 8), st.integers(0, 2**32 - 1))
PROGRAM = st.builds(
    lambda kind, params: {"kind": kind, **params},
    st.sampled_from([*_engine.KERNELS, "nope"]),
    st.dictionaries(
        st.sampled_from(["size", "ea", "count", "put", "op", "eas", "spes", "argp", "envp", "n", "k"]),
        st.one_of(
            U64, st.booleans(), st.sampled_from(["get", "copy", "x"]), st.lists(U64, max_size=3), st.floats()
        ),
    ),
)
OPCODES = st.sampled_from([0x20, 0x21, 0x24, 0x40, 0x42, 0x44, 0xA0, 0xB0, 0xB4, 0xC0, 0xCC, 0xD0, 0x99])

CALLS: dict[str, st.SearchStrategy[tuple[Any, ...]]] = {
    "alloc": st.tuples(U64, U64),
    "memory": st.tuples(U64, U64),
    "local_store": st.tuples(SPE),
    "set_placement": st.tuples(st.lists(st.integers(0, 9), max_size=9)),
    "set_time_limit": st.tuples(U64),
    "spawn_external": st.tuples(SPE),
    "spawn_external_after": st.tuples(SPE, U64),
    "spawn_ppe": st.tuples(),
    "spawn_program": st.tuples(SPE, PROGRAM, U64),
    "start": st.tuples(),
    "mfc": st.tuples(TID, OPCODES, U32, U64, U32, U32, U32),
    "read_channel": st.tuples(TID, st.integers(0, 40)),
    "write_channel": st.tuples(TID, st.integers(0, 40), U32),
    "channel_count": st.tuples(TID, st.integers(0, 40)),
    "join": st.tuples(TID, TID),
    "ppe_load": st.tuples(TID, U64, U8),
    "ppe_store": st.tuples(TID, U64, U8, U64),
    "ppe_lwarx": st.tuples(TID, U64, U8),
    "ppe_stwcx": st.tuples(TID, U64, U8, U64),
    "ppe_read_mbox": st.tuples(TID, SPE, st.booleans(), st.booleans()),
    "ppe_write_mbox": st.tuples(TID, SPE, U32, st.booleans()),
    "ppe_mbox_status": st.tuples(TID, SPE),
    "ppe_signal": st.tuples(TID, SPE, U8, U32),
    "proxy_mfc": st.tuples(TID, SPE, OPCODES, U32, U64, U32, U32),
    "proxy_tag_status": st.tuples(TID, SPE, U32, st.integers(0, 4)),
    "set_signal_mode": st.tuples(SPE, U8, st.booleans()),
    "compute": st.tuples(TID, U64),
    "write_tag_mask": st.tuples(TID, U32),
    "read_tag_mask": st.tuples(TID),
    "read_tag_status": st.tuples(TID, st.integers(0, 4)),
    "read_decrementer": st.tuples(TID),
    "write_decrementer": st.tuples(TID, U32),
    "exit": st.tuples(TID, U32),
    "ls_access_loop": st.tuples(TID, st.sampled_from(["load", "store", "copy", "x"]), U32, U32, U32, U8, U8),
    "ppe_access_loop": st.tuples(
        TID, st.sampled_from(["load", "store", "copy"]), U64, U64, U64, U8, U64, U8, st.booleans(), U8
    ),
    "dma_latencies": st.tuples(SPE),
    "run_for": st.tuples(st.one_of(st.integers(0, 10_000), U64)),
    "take_error": st.tuples(),
    "threads": st.tuples(),
    "stats": st.tuples(),
    "verify": st.tuples(),
}
CALL = st.sampled_from(sorted(CALLS)).flatmap(lambda name: CALLS[name].map(lambda args: (name, args)))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=EXAMPLES <= 100,
)
@given(calls=st.lists(CALL, min_size=1, max_size=25))
def test_random_engine_calls_never_panic(calls: list[tuple[str, tuple[Any, ...]]]) -> None:
    e = _engine.Engine("qs20", 1, [])
    e.set_time_limit(5_000_000)
    e.enable_checks()
    for name, args in calls:
        try:
            getattr(e, name)(*args)
        except InvariantError as err:
            raise AssertionError(f"{name}{args} panicked in the engine: {err}") from err
        except Exception:
            pass  # an engine error: what a bad call deserves
