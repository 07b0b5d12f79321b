"""The mapping study's hypotheses as variants (docs/messaging.md, "Hypotheses for the mapping
study"): each on changes what it claims to change and nothing else, and off costs nothing."""

from __future__ import annotations

import pytest

import cellsim
from cellsim.experiments._common import load_dma_bench
from cellsim.messaging import Variation, ring_pattern, simulate
from cellsim.spec import MachineSpec

QUIET = Variation.off()
WAIT_EACH = ("messaging.dma_wait=each",)
RMW = ("mic.partial_write=rmw",)


def _ring(overrides: tuple[str, ...], *, machine: str = "qs20-1chip", packet: int = 1024) -> dict:
    spec = MachineSpec.of(machine, overrides)
    return simulate(spec, ring_pattern(8), list(range(8)), count=40, variation=QUIET, packet=packet)


def _small_puts(overrides: tuple[str, ...], size: int, exact: bool = False) -> dict:
    """64 nonblocking puts of ``size`` bytes from one SPE into main memory: the machine's stats."""
    m = cellsim.Machine("qs20-1chip", seed=1, overrides=list(overrides), exact_reference=exact)
    load_dma_bench(m, 0, put=True, ea=int(m.alloc(16384)), size=size, batch=0, count=64, native=True)
    r = m.run()
    return {
        "cycles": r.cycles,
        "mic_reads": r.stats["mic_reads"],
        "bank_write_bytes": sum(r.stats["bank_write_bytes"]),
    }


def test_waiting_for_each_dma_moves_the_same_bytes_more_slowly() -> None:
    """The wait-for-each library issues the same packet gets and 16-byte puts (only the number of
    row polls follows the timing; every packet arrives intact) and waits for each: a
    transmission pays its puts' round trips one after the other."""
    batched, each = _ring(()), _ring(WAIT_EACH)
    assert each["bytes_ok"] and batched["bytes_ok"]
    # two 16-byte puts per transmission, each a round trip of some 90 ns (Kistler et al. Fig 4a)
    assert each["runtime_ns"] - batched["runtime_ns"] > 40 * 2 * 50


def test_the_python_twin_of_the_wait_for_each_library_gives_identical_cycles() -> None:
    spec = MachineSpec.of("ps3", WAIT_EACH)
    kw = {"count": 12, "mode": "default", "seed": 5, "variation": Variation(), "packet": 512}
    native = simulate(spec, ring_pattern(6), (0, 3, 1, 5, 2, 4), native=True, **kw)
    python = simulate(spec, ring_pattern(6), (0, 3, 1, 5, 2, 4), native=False, **kw)
    assert native["runtime_cycles"] == python["runtime_cycles"]
    assert native["segments"] == python["segments"]


def test_a_partial_write_reads_its_line_and_writes_it_whole() -> None:
    """Read-modify-write: every 16-byte put to memory costs a DRAM line read and a line write;
    whole-line puts are untouched."""
    posted, rmw = _small_puts((), 16), _small_puts(RMW, 16)
    assert (posted["mic_reads"], posted["bank_write_bytes"]) == (0, 64 * 16)
    assert (rmw["mic_reads"], rmw["bank_write_bytes"]) == (64, 64 * 128)
    assert _small_puts(RMW, 128) == _small_puts((), 128)


def test_the_fast_forward_agrees_with_the_reference_with_read_modify_write() -> None:
    assert _small_puts(RMW, 16, exact=True) == _small_puts(RMW, 16, exact=False)


@pytest.mark.parametrize("overrides", [WAIT_EACH, RMW], ids=["wait-each", "rmw"])
def test_each_hypothesis_makes_the_ring_slower_and_is_off_by_default(overrides: tuple[str, ...]) -> None:
    assert _ring(overrides)["runtime_ns"] > _ring(())["runtime_ns"]
    default = MachineSpec.of("qs22")
    assert default.facts.messaging_dma_wait == "batched"
    assert {v.name: v.chosen.name for v in default.variants}["partial_write"] == "posted"


EVERY_PASS = ("messaging.polling=every_pass", "messaging.pass_delay_ns=300")


def test_a_delay_after_every_pass_slows_the_ring_and_a_zero_delay_is_the_default() -> None:
    """Polling "from time to time": every pass of the loop waits; with no delay the loop is the
    default one, cycle for cycle."""
    # a pass serves a transmission or two of the ring: at least a third of the delay each
    assert _ring(EVERY_PASS)["runtime_ns"] > _ring(())["runtime_ns"] + 40 * 100
    zero = _ring(("messaging.polling=every_pass", "messaging.pass_delay_ns=0"))
    assert zero["runtime_cycles"] == _ring(())["runtime_cycles"]
    assert MachineSpec.of("ps3").facts.messaging_pass_delay_ns == 0.0
    assert MachineSpec.of("ps3", EVERY_PASS).facts.messaging_pass_delay_ns == 300.0


def test_the_python_twin_of_the_every_pass_library_gives_identical_cycles() -> None:
    spec = MachineSpec.of("qs20", EVERY_PASS)
    kw = {"count": 12, "mode": "pinned", "seed": 5, "variation": Variation(), "packet": 512}
    native = simulate(spec, ring_pattern(8), (0, 2, 4, 6, 7, 5, 3, 1), native=True, **kw)
    python = simulate(spec, ring_pattern(8), (0, 2, 4, 6, 7, 5, 3, 1), native=False, **kw)
    assert native["runtime_cycles"] == python["runtime_cycles"]
    assert native["segments"] == python["segments"]
