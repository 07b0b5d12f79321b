"""Groups, new communicators (Create, Create_group, Split_type, Compare,
Free) and topologies (Cartesian, graph, distributed graph), with MPI's
semantics, on both protocols."""

from __future__ import annotations

from mpi_helpers import all_true, run

from cellsim import mpi as MPI


def _groups_and_comms() -> dict[str, bool]:
    world = MPI.COMM_WORLD
    r, p = world.rank, world.size
    ok: dict[str, bool] = {}
    g = world.Get_group()
    evens = g.Incl(list(range(0, p, 2)))
    odds = g.Excl(list(range(0, p, 2)))
    ok["group ranks"] = evens.Get_rank() == (r // 2 if r % 2 == 0 else MPI.UNDEFINED)
    ok["union"] = MPI.Group.Compare(MPI.Group.Union(evens, odds), g) == MPI.SIMILAR
    ok["intersection empty"] = MPI.Group.Intersection(evens, odds).Get_size() == 0
    ok["difference"] = MPI.Group.Compare(MPI.Group.Difference(g, odds), evens) == MPI.IDENT
    ok["translate"] = MPI.Group.Translate_ranks(odds, [0, 1], g) == [1, 3]
    ok["range_incl"] = g.Range_incl([(p - 1, 0, -2)]).Translate_ranks(None, g) == list(range(p - 1, -1, -2))
    # Create: every rank calls it, the others get COMM_NULL
    c = world.Create(evens)
    if r % 2 == 0:
        ok["Create"] = c.Get_size() == (p + 1) // 2 and c.allreduce(r) == sum(range(0, p, 2))
        ok["Compare similar"] = MPI.Comm.Compare(c, world) == MPI.UNEQUAL
        c.Free()
        ok["freed"] = c == MPI.COMM_NULL
    else:
        ok["Create null"] = c == MPI.COMM_NULL
    # Create_group: only the odd ranks call it
    if r % 2:
        c2 = world.Create_group(odds)
        ok["Create_group"] = c2.allgather(r) == list(range(1, p, 2))
    world.Barrier()
    d = world.Dup()
    ok["Compare congruent"] = MPI.Comm.Compare(world, d) == MPI.CONGRUENT
    ok["Compare ident"] = MPI.Comm.Compare(world, MPI.COMM_WORLD) == MPI.IDENT
    shared = world.Split_type(MPI.COMM_TYPE_SHARED)
    ok["Split_type shared: one chip"] = shared.Get_size() == p
    one = world.Split_type(MPI.COMM_TYPE_SHARED if r == 0 else MPI.UNDEFINED)
    ok["Split_type undefined"] = (one.Get_size() == 1) if r == 0 else one == MPI.COMM_NULL
    d.Set_name("mine")
    ok["names"] = d.Get_name() == "mine" and world.Get_name() == "MPI_COMM_WORLD"
    ok["attributes"] = world.Get_attr(MPI.TAG_UB) >= 32767 and world.Get_attr(MPI.UNIVERSE_SIZE) == p
    key = MPI.Comm.Create_keyval()
    d.Set_attr(key, {"x": r})
    ok["user attribute"] = d.Get_attr(key) == {"x": r} and world.Get_attr(key) is None
    info = MPI.Info.Create()
    info["a"] = "1"
    d.Set_info(info)
    ok["info"] = d.Get_info()["a"] == "1"
    ok["Idup"] = MPI.Comm.Compare(world.Idup()[0], world) == MPI.CONGRUENT
    return ok


def test_groups_and_communicators(protocol: str) -> None:
    all_true(run(_groups_and_comms, 4, protocol))


def _cartesian() -> dict[str, bool]:
    world = MPI.COMM_WORLD
    p = world.size
    ok: dict[str, bool] = {}
    dims = MPI.Compute_dims(p, 2)
    cart = world.Create_cart(dims, periods=[True, False])
    me = cart.Get_rank()
    x, y = cart.Get_coords(me)
    ok["coords row-major"] = me == x * dims[1] + y and cart.coords == [x, y]
    ok["topology"] = cart.topology == MPI.CART and cart.Get_topo() == (dims, [1, 0], [x, y])
    src, dst = cart.Shift(0, 1)
    ok["periodic shift"] = dst == cart.Get_cart_rank([(x + 1) % dims[0], y]) and src == cart.Get_cart_rank(
        [(x - 1) % dims[0], y]
    )
    src, dst = cart.Shift(1, 1)
    ok["edge shift"] = (dst == MPI.PROC_NULL) == (y == dims[1] - 1) and (src == MPI.PROC_NULL) == (y == 0)
    # a halo exchange along dimension 0
    got = cart.sendrecv(me, dest=cart.Shift(0, 1)[1], source=cart.Shift(0, 1)[0])
    ok["halo"] = got == cart.Shift(0, 1)[0]
    rows = cart.Sub([False, True])
    ok["Sub"] = (
        rows.Get_size() == dims[1]
        and rows.dims == [dims[1]]
        and rows.allgather(me) == [x * dims[1] + j for j in range(dims[1])]
    )
    ok["neighbours"] = cart.inedges == [*cart.Shift(0, 1), *cart.Shift(1, 1)]
    small = world.Create_cart([2], periods=False)
    ok["fewer ranks"] = (small.Get_size() == 2) if world.rank < 2 else small == MPI.COMM_NULL
    ok["Cart_map"] = world.Cart_map([2]) == (world.rank if world.rank < 2 else MPI.UNDEFINED)
    # a ring graph and a distributed graph
    index = [2 * (i + 1) for i in range(p)]
    edges = [e for i in range(p) for e in ((i - 1) % p, (i + 1) % p)]
    graph = world.Create_graph(index, edges)
    me = graph.Get_rank()
    ok["graph"] = graph.neighbors == [(me - 1) % p, (me + 1) % p] and graph.Get_dims() == (p, 2 * p)
    sends = [graph.isend(me, dest=n) for n in graph.neighbors]
    ok["graph exchange"] = [graph.recv(source=n) for n in graph.neighbors] == graph.neighbors
    MPI.Request.waitall(sends)
    dist = world.Create_dist_graph_adjacent([(me - 1) % p], [(me + 1) % p], [5], [6])
    ok["dist graph"] = dist.Get_dist_neighbors() == ([(me - 1) % p], [(me + 1) % p], ([5], [6]))
    dist2 = world.Create_dist_graph([me], [1], [(me + 2) % p])
    ok["dist graph from edges"] = dist2.Get_dist_neighbors()[:2] == ([(me - 2) % p], [(me + 2) % p])
    return ok


def test_topologies(protocol: str) -> None:
    all_true(run(_cartesian, 4, protocol))
    all_true(run(_cartesian, 6, protocol))
