"""Ping-pong between ranks 0 and 1 with numpy buffers, an unmodified mpi4py script.

    cellsim mpirun -n 2 examples/mpi/pingpong.py [SIZE ...]
    cellsim mpirun -n 2 --protocol kumar examples/mpi/pingpong.py 0 2048 65536 1048576

Times come from MPI.Wtime: under cellsim it reads the SPU decrementer, so
they are simulated times on the Cell.
"""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
sizes = [int(a) for a in sys.argv[1:]] or [0, 8, 2048, 65536, 1 << 20]
reps = 20

for size in sizes:
    buf = np.full(size, 7 if rank == 0 else 0, dtype=np.uint8)
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(reps):
        if rank == 0:
            comm.Send(buf, dest=1, tag=1)
            comm.Recv(buf, source=1, tag=1)
        elif rank == 1:
            comm.Recv(buf, source=0, tag=1)
            comm.Send(buf, dest=0, tag=1)
    half = (MPI.Wtime() - t0) / (2 * reps)
    assert (buf == 7).all(), "rank 0's bytes went there and back"
    if rank == 0:
        bw = size / half / 1e9 if size else 0.0
        print(f"{size:>8} B  {half * 1e6:9.3f} us  {bw:6.2f} GB/s")
