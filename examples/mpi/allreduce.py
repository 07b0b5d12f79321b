"""Collectives, an unmodified mpi4py script: Allreduce of numpy arrays,
bcast and gather of Python objects, checked against numpy.

    cellsim mpirun -n 8 examples/mpi/allreduce.py
"""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

x = np.arange(1000, dtype=np.float64) * (rank + 1)
total = np.empty_like(x)
t0 = MPI.Wtime()
comm.Allreduce(x, total, op=MPI.SUM)
t = MPI.Wtime() - t0
expected = np.arange(1000, dtype=np.float64) * size * (size + 1) / 2
assert np.array_equal(total, expected)

config = comm.bcast({"step": 0.5, "name": "demo"} if rank == 0 else None, root=0)
names = comm.gather(f"rank {rank}: {config['name']}", root=0)
if rank == 0:
    print(f"Allreduce of 8000 bytes on {size} SPEs: {t * 1e6:.2f} us; sum checked")
    print(", ".join(names))
