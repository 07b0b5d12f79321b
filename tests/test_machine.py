"""Machines, memory, placement."""

from __future__ import annotations

import numpy as np

import cellsim
from cellsim import Machine


def test_shipped_machines_load() -> None:
    for name in cellsim.machines():
        m = Machine(name)
        assert m.spe_count in (6, 8, 16)
        assert m.facts.ls_bytes == 256 * 1024
    assert Machine("ps3").spe_count == 6
    assert (Machine("qs20").spe_count, Machine("qs20").chips) == (16, 2)
    assert (Machine("qs20-1chip").spe_count, Machine("qs20-1chip").chips) == (8, 1)
    assert (Machine("blade21").spe_count, Machine("blade21").chips) == (8, 2)
    assert "core_ghz" in cellsim.machine_toml("qs20-1chip")
    assert "chips = 2" in cellsim.machine_toml("qs20")


def test_machine_from_a_file(tmp_path) -> None:
    f = tmp_path / "slowbus.toml"
    f.write_text(
        'base = "qs20"\nname = "slowbus"\ndescription = "longer command phase"\n'
        "[eib]\ncommand_phase_bus_cycles = 80\n"
    )
    m = Machine(str(f))
    assert m.name == "slowbus"


def test_alloc_aligns_and_views_are_live(m: Machine) -> None:
    a = m.alloc(100, align=4096)
    assert int(a) % 4096 == 0
    b = m.alloc(16)
    assert int(b) >= int(a) + 100
    a.array()[:4] = [1, 2, 3, 4]
    assert list(m.memory(int(a), 4)) == [1, 2, 3, 4]
    v = a.array(">u4")
    assert v[0] == 0x01020304, "big-endian view"


def test_placement_policies() -> None:
    assert Machine("qs20-1chip", overrides={"placement": "identity"}).placement == list(range(8))
    assert Machine("qs20-1chip", placement=[7, 6, 5, 4, 3, 2, 1, 0]).placement == [7, 6, 5, 4, 3, 2, 1, 0]
    r1, r2 = Machine("qs20-1chip", seed=11).placement, Machine("qs20-1chip", seed=11).placement
    assert r1 == r2 and sorted(r1) == list(range(8))
    # A blade: chip 0's SPEs first by default (PPE programs run on chip 0), or anywhere.
    local = Machine("qs20", seed=11).placement
    assert sorted(local[:8]) == list(range(8)) and sorted(local[8:]) == list(range(8, 16))
    anywhere = Machine("qs20", seed=11, overrides={"placement": "random"}).placement
    assert sorted(anywhere) == list(range(16)) and sorted(anywhere[:8]) != list(range(8))


def test_error_catalogue_lists_every_kind() -> None:
    kinds = dict(cellsim.error_catalogue())
    for k in ("size", "alignment", "ls_range", "tag", "unmapped", "ls_overflow"):
        assert k in kinds


def test_local_store_view_is_shared_with_programs(m: Machine) -> None:
    ls = m.local_store(2)
    ls[0x8000:0x8010] = np.arange(16, dtype=np.uint8)
    assert m.local_store(2)[0x8005] == 5


def test_the_typed_facts_agree_with_the_engines_description() -> None:
    """A machine's facts are read from its resolved file without building an engine; the engine
    derives the same values from the same file (and the SPE start-up in cycles from its ns)."""
    for name in cellsim.machines():
        m = Machine(name)
        f, d = m.facts, m.info
        assert (f.name, f.core_hz, f.timebase_hz, f.chips, f.spes) == (
            d["name"],
            d["core_hz"],
            d["timebase_hz"],
            d["chips"],
            d["spes"],
        )
        assert (f.memory_bytes, f.ls_bytes, f.ls_reserved_bytes, f.page_bytes) == (
            d["memory_bytes"],
            d["ls_bytes"],
            d["ls_reserved_bytes"],
            d["page_bytes"],
        )
        assert (f.numa_policy, f.tlb_entries, list(f.ramps)) == (
            d["numa_policy"],
            d["tlb_entries"],
            list(d["ramps"]),
        )
        expected = round(float(m.spec.setting("ppe.context_run_ns")) * f.core_hz / 1e9)
        assert m.context_run_cycles == expected
