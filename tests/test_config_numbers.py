"""Every float of a machine file or override is finite and in the range the
schema states (config.rs ``validate``), and the error names the key at fault:
NaN used to become 0, a DRAM latency of 1e20 ns made the machine faster, and
``tlb.miss_ns=-1`` blamed ``tlb.entries``."""

from __future__ import annotations

from pathlib import Path

import pytest

from cellsim import Machine
from cellsim.exceptions import ConfigError

FLOATS = [
    ("core_ghz", "qs20"),
    ("timebase_mhz", "qs20"),
    ("mfc.mmio_access_ns", "qs20"),
    ("ppe.context_run_ns", "qs20"),
    ("mic.dram_gbs", "qs20"),
    ("mic.dram_latency_ns", "qs20"),
    ("mic.refresh_interval_ns", "qs20"),
    ("mic.refresh_ns", "qs20"),
    ("tlb.miss_ns", "qs20"),
    ("bif.link_gbs", "qs20"),
    ("bif.link_latency_ns", "qs20"),
]


@pytest.mark.parametrize(("key", "machine"), FLOATS)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "1e20"])
def test_a_float_out_of_its_range_is_refused_naming_its_key(key: str, machine: str, value: str) -> None:
    with pytest.raises(ConfigError) as e:
        Machine(machine, overrides=[f"{key}={value}"])
    assert e.value.key == key, str(e.value)
    assert "finite number from" in str(e.value)


def test_tlb_miss_cost_blames_itself() -> None:
    with pytest.raises(ConfigError) as e:
        Machine("qs20", overrides=["tlb.miss_ns=-1"])
    assert e.value.key == "tlb.miss_ns"


def test_a_machine_file_with_nan_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "m.toml"
    f.write_text('base = "qs20"\n[mic]\ndram_latency_ns = nan\n')
    with pytest.raises(ConfigError) as e:
        Machine(str(f))
    assert e.value.key == "mic.dram_latency_ns"


def test_values_in_range_still_work() -> None:
    m = Machine("qs20", overrides=["mic.dram_latency_ns=0", "tlb.miss_ns=0.5", "bif.link_gbs=0.001"])
    assert m.spe_count > 0
