"""Keller and Varbanescu 2010's PS3 statements at the paper-scale count (10^4 transmissions).

``cellsim validate --full`` runs every panel at ``cellsim reproduce``'s sizes, the QS22's too; this
scores only the PS3's Figs 2 and 3 (all 120 mappings, 3 runs, 10^4 transmissions) under each
``--set`` group, to see whether a variant's gains at validation sizes (1000 transmissions) hold
where the rankings have settled. ``--figures 4 5`` scores the QS22's panels instead, as
``cellsim reproduce`` runs them (a seeded sample of 504 mappings, 3 runs; ``--transmissions`` is
then the count of those panels, default theirs). Withheld values are never used (their rows carry
no verdict).

    python benches/mapping_ps3_scale.py [--transmissions 10000] [--set "KEY=VALUE KEY=VALUE" ...]
    python benches/mapping_ps3_scale.py --figures 4 5 [--set ...]
"""

from __future__ import annotations

import argparse
import time

from _args import at_least  # this directory

from cellsim import validate as v
from cellsim.experiments import get, mapping


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transmissions", type=at_least(1), default=None)
    ap.add_argument("--figures", type=int, nargs="+", default=[2, 3], help="the paper's figures (2 3: PS3)")
    ap.add_argument("--set", action="append", default=[], metavar='"KEY=VALUE ..."', dest="groups")
    ap.add_argument("--no-default", action="store_true", help="score only the --set groups")
    a = ap.parse_args()
    exp = get("mapping")
    for group in [*([] if a.no_default else [""]), *a.groups]:
        overrides = tuple(group.split())
        t = time.perf_counter()
        recs = mapping.run(
            figures=a.figures,
            transmissions=a.transmissions or (10_000 if set(a.figures) <= {2, 3} else None),
            runs=3,
            out=None,
            overrides=overrides,
        )
        board = v.score(v.Setting.of(overrides), [exp], {"mapping": recs}, lambda e: True)
        held, judged = board.held()
        print(f"{board.setting.label}: {held}/{judged} ({time.perf_counter() - t:.0f} s)")
        for r in board.rows:
            print(f"  {r.id} {r.point} {r.half}: {'holds' if r.holds else 'FAILS'} {r.simulated:.4g}")


if __name__ == "__main__":
    main()
