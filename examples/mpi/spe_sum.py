"""An SPE program that uses cellsim.mpi together with the SPU API: each rank
DMAs its quarter of a vector from main memory into its local store, sums it
(and says what that costs on the SPU), and the partial sums meet in a Reduce.

    cellsim mpirun -n 4 examples/mpi/spe_sum.py
"""

import numpy as np

from cellsim import mpi as MPI
from cellsim.spu import ls_alloc, mfc_get, mfc_read_tag_status_all, mfc_write_tag_mask

N = 4096  # floats in the whole vector
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
part = N // size

data = MPI.alloc(part, dtype=np.float32)  # this rank's part, in main memory
data[:] = np.arange(rank * part, (rank + 1) * part, dtype=np.float32)
local = ls_alloc(part * 4, align=128)
mfc_get(local, MPI.ea_of(data), part * 4, tag=0)
mfc_write_tag_mask(1 << 0)
mfc_read_tag_status_all()
partial = np.array([local.array(np.float32).sum(dtype=np.float64)])
MPI.flops(part, precision="single", simd=True)  # the sum on the SPU: 4 adds per instruction

total = np.zeros(1)
comm.Reduce(partial, total, op=MPI.SUM, root=0)
if rank == 0:
    print(f"sum of 0..{N - 1} = {total[0]:.0f} (expected {N * (N - 1) // 2}), at {MPI.Wtime() * 1e6:.2f} us")
