"""Hello world, an unmodified mpi4py script.

Run it on 4 SPEs of a simulated Cell:  cellsim mpirun -n 4 examples/mpi/hello.py
"""

from mpi4py import MPI

comm = MPI.COMM_WORLD
print(f"Hello, World! I am process {comm.Get_rank()} of {comm.Get_size()} on {MPI.Get_processor_name()}.")
