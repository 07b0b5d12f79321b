"""The model's variants: each mechanism isolated (on, it changes what it claims to change and
nothing else; off, it costs nothing), its state in the fast-forward's shape (the exact
reference agrees with it on), and every variant of every machine documented as data."""

from __future__ import annotations

import numpy as np
import pytest

import cellsim
from cellsim import published as pub
from cellsim.experiments._common import dma_point
from cellsim.kernels import load_stream
from cellsim.spec import MachineSpec

PUT_CREDITS = ("eib.put_flow=credits", "eib.put_credits=2")
PUT_LINES = ("biu.put_flow=lines", "biu.put_lines=3")


def _gbs(op: str, overrides: tuple[str, ...], target: str = "ls") -> float:
    spec = MachineSpec.of("qs20-1chip", overrides)
    p = dma_point(spec, 1, True, op=op, target=target, size=16384, batch=0, count=64)
    return float(p["bandwidth_gbs"])


@pytest.mark.parametrize("overrides", [PUT_CREDITS, PUT_LINES], ids=["credits", "lines"])
def test_a_put_flow_control_slows_puts_and_leaves_gets_alone(overrides: tuple[str, ...]) -> None:
    """With two or three buffers a nonblocking stream of puts cannot keep the port busy
    (a buffer's round trip is longer than three transfers); gets need none."""
    assert _gbs("put", overrides) < 0.8 * _gbs("put", ())
    assert _gbs("get", overrides) == _gbs("get", ())


def test_receiver_credits_are_per_receiver_and_outbound_lines_per_sender() -> None:
    """Memory puts go to the MIC's own write buffers, not to a local store's credits; the
    outbound lines hold every put of their element, to memory too."""
    assert _gbs("put", PUT_CREDITS, "memory") == _gbs("put", (), "memory")
    assert _gbs("put", PUT_LINES, "memory") < 0.8 * _gbs("put", (), "memory")


def _pairwise(overrides: tuple[str, ...], exact: bool) -> tuple[object, ...]:
    m = cellsim.Machine("qs20-1chip", seed=1, overrides=list(overrides), exact_reference=exact)
    for s in range(8):
        m.local_store(s)[0x20000:0x24000] = np.arange(0x4000, dtype=np.uint32).astype(np.uint8) ^ s
        load_stream(
            m, s, get_ea=m.ls_ea(s ^ 1) + 0x20000, put_ea=m.ls_ea(s ^ 1) + 0x30000, size=16384, pairs=6
        )
    r = m.run()
    stores = b"".join(bytes(m.local_store(s)) for s in range(8))
    return r.cycles, r.stats, stores


@pytest.mark.parametrize("overrides", [PUT_CREDITS, PUT_LINES], ids=["credits", "lines"])
def test_the_fast_forward_agrees_with_the_reference_with_the_variant_on(overrides: tuple[str, ...]) -> None:
    assert _pairwise(overrides, True) == _pairwise(overrides, False)


def test_every_variant_is_documented_and_names_visible_statements() -> None:
    """Every choice of every shipped machine's variants is sourced or names visible published
    statements that exist (never a withheld one), and the machine's value is one of the choices."""
    visible = {e.id for e in pub.entries(held_out=False)}
    for name in cellsim.machines():
        spec = MachineSpec.of(name)
        assert spec.variants, name
        for v in spec.variants:
            assert v.value in {c.name for c in v.choices} and v.why
            for c in v.choices:
                assert c.status in ("sourced", "inferred") and c.what
                if c.status == "inferred":
                    assert c.explains and set(c.explains) <= visible, (name, v.name, c.name)
                else:
                    assert c.source, (name, v.name, c.name)
