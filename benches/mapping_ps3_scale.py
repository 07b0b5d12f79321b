"""Keller and Varbanescu 2010's PS3 statements at the paper-scale count (10^4 transmissions).

``cellsim validate --full`` runs every panel at ``cellsim reproduce``'s sizes, the QS22's too; this
scores only the PS3's Figs 2 and 3 (all 120 mappings, 3 runs, 10^4 transmissions) under each
``--set`` group, to see whether a variant's gains at validation sizes (1000 transmissions) hold
where the rankings have settled. Withheld values are never used (their rows carry no verdict).

    python benches/mapping_ps3_scale.py [--transmissions 10000] [--set "KEY=VALUE KEY=VALUE" ...]
"""

from __future__ import annotations

import argparse
import time

from _args import at_least  # this directory

from cellsim import validate as v
from cellsim.experiments import get, mapping


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transmissions", type=at_least(1), default=10_000)
    ap.add_argument("--set", action="append", default=[], metavar='"KEY=VALUE ..."', dest="groups")
    a = ap.parse_args()
    exp = get("mapping")
    for group in ["", *a.groups]:
        overrides = tuple(group.split())
        t = time.perf_counter()
        recs = mapping.run(
            figures=[2, 3], transmissions=a.transmissions, runs=3, out=None, overrides=overrides
        )
        board = v.score(v.Setting.of(overrides), [exp], {"mapping": recs}, lambda e: True)
        held, judged = board.held()
        print(f"{board.setting.label}: {held}/{judged} ({time.perf_counter() - t:.0f} s)")
        for r in board.rows:
            print(f"  {r.id} {r.point} {r.half}: {'holds' if r.holds else 'FAILS'} {r.simulated:.4g}")


if __name__ == "__main__":
    main()
