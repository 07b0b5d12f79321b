"""The public-API fuzzer (issue 33): random values, hostile ones among them, for the
arguments of the Python API a user calls (``Machine`` and its methods, the SPU
calls inside a program, ``cellsim.sync``). Each call must succeed or raise a
``CellsimError`` (``UsageError``, ``MfcError``, ...) naming the argument; any other
exception type raised inside cellsim's own code (a ``TypeError``, ``ValueError``,
``IndexError``, ``OverflowError`` from its frames) fails. An exception raised by the
caller's own code (a program function) is the caller's. ``make fuzz`` runs more
examples (``CELLSIM_FUZZ_EXAMPLES``) and writes the outcome counts to
``CELLSIM_FUZZ_REPORT`` (key ``api``)."""

from __future__ import annotations

import json
import os
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellsim
from cellsim import Machine, spu, sync
from cellsim.exceptions import CellsimError

EXAMPLES = int(os.environ.get("CELLSIM_FUZZ_EXAMPLES", "40"))
PKG = str(Path(cellsim.__file__).resolve().parent)
OUTCOMES: Counter[str] = Counter()

HOSTILE = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 16, 128, 2**31, 2**32, 2**63, 2**64 - 1, 2**64, 2**200]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e300, -1e308, float("nan"), float("inf"), 0.5, 1e-300]),
    st.text(max_size=4),
    st.none(),
    st.booleans(),
    st.lists(st.integers(-3, 2**33), max_size=3),
    st.tuples(st.integers(-3, 2**33), st.integers(-3, 2**64)),
)


def _outcome(call: Callable[[], Any], what: str) -> None:
    try:
        call()
    except CellsimError as e:
        OUTCOMES[f"{what}: {type(e).__name__}"] += 1
        return
    except Exception as e:
        frames = traceback.extract_tb(e.__traceback__)
        inner = os.path.abspath(frames[-1].filename) if frames else ""
        if inner.startswith(PKG):
            raise AssertionError(
                f"{what} raised {type(e).__name__} from inside cellsim ({frames[-1].filename}:"
                f"{frames[-1].lineno}): {e}"
            ) from e
        OUTCOMES[f"{what}: the caller's {type(e).__name__}"] += 1
        return
    OUTCOMES[f"{what}: ok"] += 1


MACHINE_CALLS: dict[str, Callable[[Machine, Any, Any], Any]] = {
    "alloc(size)": lambda m, a, b: m.alloc(a),
    "alloc(size, align)": lambda m, a, b: m.alloc(128, a),
    "alloc(policy)": lambda m, a, b: m.alloc(128, policy=a),
    "alloc(node)": lambda m, a, b: m.alloc(128, node=a),
    "ns_to_cycles": lambda m, a, b: m.ns_to_cycles(a),
    "memory": lambda m, a, b: m.memory(a, b),
    "local_store": lambda m, a, b: m.local_store(a),
    "is_mapped": lambda m, a, b: m.is_mapped(a),
    "memory_node": lambda m, a, b: m.memory_node(a),
    "ls_ea": lambda m, a, b: m.ls_ea(a),
    "Machine(seed)": lambda m, a, b: Machine("qs20-1chip", seed=a),
    "Machine(time_limit_ns)": lambda m, a, b: Machine("qs20-1chip", time_limit_ns=a),
    "run(time_limit_ns)": lambda m, a, b: Machine("qs20-1chip").run(time_limit_ns=a),
    "run(wall_limit_s)": lambda m, a, b: Machine("qs20-1chip").run(wall_limit_s=a),
}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(MACHINE_CALLS)), HOSTILE, HOSTILE)
def test_machine_calls_raise_only_cellsim_errors(name: str, a: Any, b: Any) -> None:
    m = Machine("qs20-1chip")
    _outcome(lambda: MACHINE_CALLS[name](m, a, b), name)


SPU_CALLS: dict[str, Callable[[int, Any, Any], Any]] = {
    "mfc_get": lambda buf, a, b: spu.mfc_get(a, buf, 128, 1),
    "mfc_get(size)": lambda buf, a, b: spu.mfc_get(0x4000, buf, a, b),
    "mfc_put(ea)": lambda buf, a, b: spu.mfc_put(0x4000, a, 128, 1),
    "mfc_list": lambda buf, a, b: spu.mfc_list(0x4000, a),
    "mfc_list(elements)": lambda buf, a, b: spu.mfc_list(a, [(16, buf), b]),
    "ls_array": lambda buf, a, b: spu.ls_array(a, "u4", b),
    "ls_array(dtype)": lambda buf, a, b: spu.ls_array(0x4000, a),
    "ls_alloc": lambda buf, a, b: spu.ls_alloc(a),
    "compute": lambda buf, a, b: spu.compute(a),
    "spu_write_out_mbox": lambda buf, a, b: spu.spu_write_out_mbox(a),
    "mfc_write_tag_mask": lambda buf, a, b: spu.mfc_write_tag_mask(a),
    "atomic_add(offset)": lambda buf, a, b: sync.atomic_add(buf, 1, offset=a),
    "atomic_add(delta)": lambda buf, a, b: sync.atomic_add(buf, a),
}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(SPU_CALLS)), HOSTILE, HOSTILE)
def test_spu_calls_raise_only_cellsim_errors(name: str, a: Any, b: Any) -> None:
    m = Machine("qs20-1chip")
    buf = int(m.alloc(4096))

    def program(speid: int, argp: int, envp: int) -> None:
        SPU_CALLS[name](buf, a, b)
        spu.mfc_write_tag_mask(0xFFFFFFFF)
        spu.mfc_read_tag_status_all()

    m.load(0, program)
    _outcome(m.run, name)


def teardown_module() -> None:
    report = os.environ.get("CELLSIM_FUZZ_REPORT")
    if report:
        path = Path(report)
        data = json.loads(path.read_text()) if path.is_file() else {}
        data["api"] = dict(sorted(OUTCOMES.items()))
        path.write_text(json.dumps(data, indent=1) + "\n")
