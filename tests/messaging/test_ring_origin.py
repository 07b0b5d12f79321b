"""The byte check's walk back along a ring stream skips whole turns and still
names the payload the hop-by-hop walk would."""

from __future__ import annotations

import pytest

from cellsim.messaging.patterns import ring_specs
from cellsim.messaging.simulate import _ring_stream_origin


def hop_by_hop(specs, task: int, out: int, m: int) -> tuple[int, int]:
    while True:
        spec = specs[task]
        init = spec.outs[out].initial
        if m < init:
            return task, sum(o.initial for o in spec.outs[:out]) + m
        m -= init
        src = spec.ins[next(j for j, p in enumerate(spec.ins) if p.fwd == out)].task
        out = next(o for o, p in enumerate(specs[src].outs) if p.task == task)
        task = src


@pytest.mark.parametrize(("tasks", "uni"), [(8, False), (8, True), (6, False), (3, True)])
def test_skipping_turns_names_the_same_payload(tasks: int, uni: bool) -> None:
    specs = ring_specs(tasks, 500, uni)
    for task in range(tasks):
        for out in range(len(specs[task].outs)):
            for m in (0, 1, 2, 7, 15, 16, 17, 99, 498, 499):
                assert _ring_stream_origin(specs, task, out, m) == hop_by_hop(specs, task, out, m)
