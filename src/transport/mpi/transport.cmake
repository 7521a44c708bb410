# The MPI transport: always built (MPI is the bootstrap's engine).
list(APPEND TSHMEM_HOST_SOURCES transport/mpi/mpi_transport.cc)
