"""One error vocabulary (issue 33): each bad input the issue lists is a
``UsageError`` naming the argument and the rule, never a raw ``TypeError``,
``ValueError``, ``IndexError`` or ``OverflowError`` from inside cellsim, and
``sync.atomic_add(offset=-1)`` no longer increments the line's last word."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from cellsim import Machine, spu, sync
from cellsim.exceptions import UsageError
from cellsim.tools.cli import cli


def test_machine_methods() -> None:
    m = Machine("qs20-1chip")
    with pytest.raises(UsageError, match="alloc: policy"):
        m.alloc(128, policy=5)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="is_mapped: ea"):
        m.is_mapped("x")  # type: ignore[arg-type]
    for bad in (float("nan"), 1e300, -1.0, "5"):
        with pytest.raises(UsageError, match="ns_to_cycles"):
            m.ns_to_cycles(bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="memory: "):
        m.memory(0, m.facts.memory_bytes + 1)
    with pytest.raises(UsageError, match="time_limit_ns"):
        Machine("qs20-1chip", time_limit_ns=1e300)
    with pytest.raises(UsageError, match="time_limit_ns"):
        Machine("qs20-1chip").run(time_limit_ns=1e300)
    with pytest.raises(UsageError, match="wall_limit_s"):
        Machine("qs20-1chip").run(wall_limit_s=1e308)


def test_wall_limit_1e308_on_the_command_line() -> None:
    r = CliRunner().invoke(cli, ["run", "dma-latency", "--wall-limit", "1e308"], catch_exceptions=False)
    assert r.exit_code == 2
    assert "--wall-limit" in r.output and "Traceback" not in r.output


def _in_program(call) -> list[str]:  # type: ignore[no-untyped-def]
    out: list[str] = []
    m = Machine("qs20-1chip")
    line = m.alloc(128)

    def prog(speid: int, argp: int, envp: int) -> None:
        try:
            call(int(line))
        except UsageError as e:
            out.append(str(e))

    m.load(0, prog)
    m.run()
    words = np.frombuffer(m.memory(int(line), 128), dtype=">u4")
    out.append(f"last word {int(words[31])}")
    return out


def test_spu_calls() -> None:
    assert "mfc_list: elements" in _in_program(lambda ea: spu.mfc_list(0x4000, None))[0]
    assert "mfc_list: element 0" in _in_program(lambda ea: spu.mfc_list(0x4000, [5]))[0]
    assert "ls_array: dtype" in _in_program(lambda ea: spu.ls_array(0x4000, "nope"))[0]
    assert "ls_array: count" in _in_program(lambda ea: spu.ls_array(0x4000, "u4", 10**6))[0]
    got = _in_program(lambda ea: sync.atomic_add(ea, 1, offset=-1))
    assert "atomic_add: offset" in got[0] and got[1] == "last word 0"
