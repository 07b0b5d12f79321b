"""``mpi-matvec``: a double-precision matrix-vector product on 8 SPEs (Kumar et al. 2007, section 4).

Kumar et al. 2007's kernel as the paper describes it: a 1-D row decomposition (rank
``r`` owns rows ``r*n/p .. (r+1)*n/p - 1`` of ``A`` and the same slice of the
vector), the data in main memory moved by DMA where needed, no SIMD
intrinsics, and one ``MPI_Allgather`` per product: each product gathers the
vector's slices into a full vector in every rank, then computes its slice
of ``y = A x``, which is the next product's ``x`` (``A`` is scaled so the
iteration stays bounded; the result is checked against numpy).

Each rank, per product: ``Allgather`` of the slices, a get of the full
vector into the local store, then for each block of rows (at most 16 KB) a
blocking get and the arithmetic, then a put of its slice. The arithmetic's
time is the compiled scalar loop's, from the SPU's documented rates, not
measured (:func:`element_cycles`): the paper used no SIMD intrinsics, so
each matrix element is one scalar double-precision multiply-add (one lane
of the 2-wide DP unit, which issues one instruction every 7 cycles on the
Cell: architecture notes and Kumar et al.'s 14.64 GFLOP/s for 8 SPEs) and
two scalar loads, each a quadword load and a rotate on the odd pipeline (4
slots; ``spu.ls_narrow_load_slots``). The two pipelines issue together, so
an element takes max(7, 4) = 7 cycles on ``qs20`` -- 0.914 GFLOP/s per SPE
at 3.2 GHz -- and max(1, 4) = 4 on the PowerXCell 8i of ``qs22``, whose DP
unit is fully pipelined (there the loads bind). The memory side is the
simulated DMAs themselves: with blocking gets the two bounds add up rather
than overlap. Nothing was fitted.

How the compiler scheduled the sum is not in the paper, so it is an option
(``accumulator``): ``partial-sums`` (the default, above) lets the multiply-adds
issue back to back, as code that splits each row's sum over partial sums
does; ``one-sum`` is the C loop as written compiled without reassociation,
each multiply-add waiting for the previous one's result, so an element takes
the DP latency (:func:`~cellsim.mpi._costs.dp_latency_cycles`: 13 cycles on
``qs20``, 9 on ``qs22``). Kumar et al.'s throughputs are withheld, so the two
cannot be scored; docs/mpi.md gives what each predicts.

``gflops`` is ``2 n^2`` flops per product times the products, over the
slowest rank's time between two barriers (``MPI.Wtime``).

>>> from cellsim.experiments import mpi_matvec
>>> r = mpi_matvec.run(sizes=[64], products=2, protocols=["direct"])[0]
>>> r["n"], r["checked"]
(64, True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from os import PathLike
from typing import Any, Unpack

import numpy as np

from .. import mpi, spu
from .. import published as pub
from ..exceptions import UsageError
from ..mpi._costs import dp_issue_cycles, dp_latency_cycles
from ..mpi._runtime import current_rank
from ..spec import MachineLike
from . import Experiment, Option, RunSettings, Table
from ._common import check_choices, compare_row, measure_each
from ._mpi import (
    PAGES,
    PROTOCOL_OPTION,
    STYLE,
    check_protocols,
    page_overrides,
    protocols_in,
    run_ranks,
    side_by_side,
)

__all__ = ["EXPERIMENT", "compare", "matrix", "plot", "run", "tables"]

SIZES: tuple[int, ...] = (512, 1024)
PRODUCTS = 5
"""Products per run: the time per product is steady after the first (4 and 10 products differ
by about 1%), and 5 keep the experiment's host time modest."""
SCALAR_LOAD_SLOTS = 2
"""Odd-pipeline slots of a scalar load: a quadword load and a rotate (the machine files'
``spu.ls_narrow_load_slots``)."""
BLOCK_BYTES = 16384
ACCUMULATORS: tuple[str, ...] = ("partial-sums", "one-sum")
"""How the compiled loop adds a row's products: over partial sums (issue bound) or into one
sum (each multiply-add waits for the last: latency bound)."""
TAG = 3  # the kernel's own DMA tag group


def matrix(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The deterministic ``A`` (row sums about 1) and starting vector of size ``n``."""
    rng = np.random.default_rng(n)
    a = rng.random((n, n)) / (n / 2)
    x = rng.random(n)
    return a, x


def _kernel(n: int, products: int, accumulator: str) -> dict[str, Any]:
    """The rank program: returns the time (s) and this rank's final slice."""
    comm = mpi.COMM_WORLD
    p, r = comm.Get_size(), comm.Get_rank()
    rows = n // p
    a_full, x0 = matrix(n)
    a = mpi.alloc((rows, n))  # this rank's rows, in main memory
    a[:] = a_full[r * rows : (r + 1) * rows]
    mine = mpi.alloc(rows)  # its slice of the vector
    mine[:] = x0[r * rows : (r + 1) * rows]
    x = mpi.alloc(n)  # the full vector, gathered
    block = max(1, BLOCK_BYTES // (8 * n))  # rows per DMA
    ls_rows = spu.ls_alloc(block * n * 8, align=128)
    ls_x = spu.ls_alloc(n * 8, align=128)
    ls_y = spu.ls_alloc(max(rows * 8, 16), align=128)
    ea_a, ea_x, ea_y = mpi.ea_of(a), mpi.ea_of(x), mpi.ea_of(mine)
    cycles_per_element = element_cycles(current_rank().machine.name, accumulator)

    def wait() -> None:
        spu.mfc_write_tag_mask(1 << TAG)
        spu.mfc_read_tag_status_all()

    comm.Barrier()
    t0 = mpi.Wtime()
    for _ in range(products):
        comm.Allgather([mine, rows, mpi.DOUBLE], [x, rows, mpi.DOUBLE])
        _dma_in_16k(spu.mfc_get, ls_x, ea_x, n * 8)
        wait()
        xv = ls_x.array(np.float64)
        yv = ls_y.array(np.float64)
        for i in range(0, rows, block):
            k = min(block, rows - i)
            _dma_in_16k(spu.mfc_get, ls_rows, ea_a + i * n * 8, k * n * 8)
            wait()
            blk = ls_rows.array(np.float64)[: k * n].reshape(k, n)
            yv[i : i + k] = blk @ xv
            mpi.compute(k * n * cycles_per_element)  # y[i] += A[i][j] * x[j], scalar DP
        _dma_in_16k(spu.mfc_put, ls_y, ea_y, rows * 8)
        wait()
    comm.Barrier()
    t = mpi.Wtime() - t0
    return {"time": t, "slice": np.array(mine)}


def element_cycles(machine: MachineLike, accumulator: str = ACCUMULATORS[0]) -> int:
    """SPU cycles of one matrix element in the compiled scalar loop: the DP
    multiply-add's issue interval (over partial sums) or its latency (into one
    sum) against the odd pipeline's two scalar loads (each a load and a
    rotate); the pipelines issue side by side."""
    dp = dp_latency_cycles(machine) if accumulator == "one-sum" else dp_issue_cycles(machine)
    return max(dp, 2 * SCALAR_LOAD_SLOTS)


def _dma_in_16k(issue: Callable[[int, int, int, int], Any], ls: int, ea: int, size: int) -> None:
    """Moves ``size`` bytes between local store ``ls`` and ``ea`` with ``issue``
    (:func:`cellsim.spu.mfc_get` or :func:`~cellsim.spu.mfc_put`), in DMAs of
    16 KB at the most."""
    done = 0
    while done < size:
        take = min(16384, size - done)
        issue(ls + done, ea + done, take, TAG)
        done += take


def run(
    *,
    protocols: Iterable[str] = (),
    sizes: Iterable[int] = (),
    products: int | None = None,
    spes: Iterable[int] = (),
    pages: Iterable[str] = (),
    accumulator: str | None = None,
    **settings: Unpack[RunSettings],
) -> list[dict[str, Any]]:
    """The matrix-vector product for each protocol, matrix dimension, rank
    count and page placement.
    """
    machine, seed, _native, progress = EXPERIMENT.settings(settings)
    protos = check_protocols(protocols)
    dims = tuple(int(s) for s in sizes) or SIZES
    nprod = PRODUCTS if products is None else int(products)
    blade = machine.facts.chips > 1
    ranks = tuple(int(p) for p in spes) or ((8, 16) if blade else (8,))
    # "local" is where first touch puts everything on a blade (chip 0's memory): not repeated
    default_pages = tuple(p for p in PAGES if p != "local") if blade else PAGES[:1]
    pages_ = check_choices("pages", pages, PAGES) if tuple(pages) else default_pages
    acc = ACCUMULATORS[0] if accumulator is None else accumulator
    if acc not in ACCUMULATORS:
        raise UsageError(f"accumulator must be one of {', '.join(ACCUMULATORS)}, not {acc!r}")
    if nprod < 1:
        raise UsageError(f"products must be positive, not {nprod}")
    for p in ranks:
        for n in dims:
            if n < p or n % (2 * p) or n * 8 > 64 * 1024:
                raise UsageError(f"matrix dimension {n}: a multiple of {2 * p} (2 x ranks) up to 8192")
    # The paper's point first: 8 ranks, the machine's own placement.
    points = [
        (proto, n, p, pg)
        for p in ranks
        for pg in pages_
        for proto in protos
        for n in dims
        if p == 8 or pg == "first-touch" or pg == "interleave"
    ]

    def point(pt: tuple[str, int, int, str]) -> dict[str, Any]:
        proto, n, p, pg = pt
        res = run_ranks(
            functools.partial(_kernel, n, nprod, acc),
            p,
            protocol=proto,
            machine=machine,
            seed=seed,
            overrides=page_overrides(pg),
        )
        t = max(v["time"] for v in res.values)
        a, x = matrix(n)
        for _ in range(nprod):
            x = a @ x
        got = np.concatenate([v["slice"] for v in res.values])
        return {
            "machine": res.machine.name,
            "seed": seed,
            "protocol": proto,
            "n": n,
            "spes": p,
            "pages": pg,
            "products": nprod,
            "time_us": t * 1e6,
            "gflops": 2.0 * n * n * nprod / t / 1e9,
            "accumulator": acc,
            "peak_gflops": p * res.machine.core_hz * 2 / element_cycles(res.machine.name, acc) / 1e9,
            "checked": bool(np.allclose(got, x, rtol=1e-9, atol=1e-12)),
        }

    return measure_each(points, point, progress)


def _config(r: dict[str, Any]) -> str:
    return f"{r['spes']} ranks, pages {r['pages']}"


def compare(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kumar et al. 2007's withheld throughputs for n = 512 and 1024 (simulated values
    only), on its configuration: 8 ranks, memory where mpirun's first touch
    puts it."""
    rows = []
    for entry in pub.entries(experiment=EXPERIMENT.name):
        for r in records:
            if pub.matches(entry.where, r):
                same = [
                    o for o in records if (o["n"], o["spes"], o["pages"]) == (r["n"], r["spes"], r["pages"])
                ]
                other = [o for o in same if o["protocol"] == "direct"]
                note = f"direct: {other[0]['gflops']:.3f} GFLOP/s" if other else ""
                rows.append(compare_row(entry, f"kumar, n = {r['n']}, {_config(r)}", r["gflops"], note))
    return rows


def tables(records: Sequence[dict[str, Any]]) -> list[Table]:
    """GFLOP/s by matrix dimension, both protocols, one table per rank count
    and page placement."""
    out = []
    for cfg in dict.fromkeys(_config(r) for r in records):
        rs = [r for r in records if _config(r) == cfg]
        g = side_by_side(rs, lambda r: r["n"], "gflops")
        t = side_by_side(rs, lambda r: r["n"], "time_us")
        protos = protocols_in(rs)
        cols = ["n", *(f"{p} GFLOP/s" for p in protos), *(f"{p} us per product" for p in protos)]
        prods = {r["n"]: r["products"] for r in rs}
        rows = [
            [
                str(n),
                *(f"{g[n][p]:.3f}" if p in g[n] else "" for p in protos),
                *(f"{t[n][p] / prods[n]:.1f}" if p in t[n] else "" for p in protos),
            ]
            for n in sorted(g)
        ]
        r0 = rs[0]
        title = (
            f"{EXPERIMENT.name}: {cfg}, {r0['products']} products, scalar DP "
            f"({element_cycles(r0['machine'], r0['accumulator'])} cycles per matrix element), "
            f"{r0['machine']}"
        )
        out.append(Table(title, cols, rows))
    return out


def plot(records: Sequence[dict[str, Any]], path: str | PathLike[str]) -> None:
    """GFLOP/s of each configuration (ranks, pages) and matrix dimension, both protocols."""
    from matplotlib.figure import Figure

    configs = list(dict.fromkeys(_config(r) for r in records)) or [""]
    fig = Figure(figsize=(max(7, 2.2 * len(configs)), 5), layout="constrained")
    ax = fig.subplots()
    dims = sorted({r["n"] for r in records})
    groups = [(c, n) for c in configs for n in dims]
    width = 0.38
    for j, proto in enumerate(("kumar", "direct")):
        pts = {(_config(r), r["n"]): r["gflops"] for r in records if r["protocol"] == proto}
        if not pts:
            continue
        xs = [i + (j - 0.5) * width for i in range(len(groups))]
        ax.bar(
            xs,
            [pts.get(g, 0.0) for g in groups],
            width,
            color=STYLE[proto]["color"],
            label=STYLE[proto]["label"],
        )
    if records:
        for p in sorted({r["spes"] for r in records}):
            peak = next(r["peak_gflops"] for r in records if r["spes"] == p)
            ax.axhline(
                peak,
                color="gray",
                linestyle="--",
                linewidth=1,
                label=f"scalar DP peak of {p} SPEs ({peak:.2f})",
            )
    ax.set_xticks(range(len(groups)), [f"n={n}\n{c}" for c, n in groups], fontsize=7)
    ax.set(ylabel="GFLOP/s", title="Kumar et al.: DP matrix-vector product, one Allgather per product")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)


EXPERIMENT = Experiment.of_module(
    __name__,
    options=(
        PROTOCOL_OPTION,
        Option("sizes", "ints", "matrix dimensions", default=SIZES),
        Option("products", "int", "products per run", default=PRODUCTS),
        Option("spes", "ints", "rank counts, one SPE each", default_note="8, and 16 on a two-chip blade"),
        Option(
            "pages",
            "choice",
            "where main memory's pages go on a blade",
            PAGES,
            default=PAGES,
            default_note="one chip: first-touch",
        ),
        Option(
            "accumulator",
            "str",
            "how the compiled loop adds a row's products: partial-sums (multiply-adds issue back to "
            "back) or one-sum (each waits for the last: the DP latency)",
            default=ACCUMULATORS[0],
        ),
    ),
)
