"""The ``mpi`` workload (OpenMPI across a lab's nodes): ``workload`` (the workload and its
options), ``agent`` (mpirun's remote-shell launcher into the nodes), ``bench`` (finding or
building the benchmark program, whose C source ``vnb_mpi_bench.c`` sits beside them)."""
