// MPI return codes as tshmem statuses, for every file that calls MPI (the bootstrap, the off-node
// transport): the one place an MPI error becomes a message.
#pragma once

#include <mpi.h>

#include "common/error.h"

namespace tshmemi {

/// Sets TSHMEM_ERR_MPI with "<call> failed: <MPI's text for code>" and returns it.
Status mpi_error(const char *call, int code);

}  // namespace tshmemi

/// Returns mpi_error(#call, rc) from the enclosing function when an MPI call fails.
#define TSHMEMI_MPI_CHECK(call)                                                              \
  do {                                                                                       \
    const int tshmemi_mpi_rc_ = (call);                                                      \
    if (tshmemi_mpi_rc_ != MPI_SUCCESS) return ::tshmemi::mpi_error(#call, tshmemi_mpi_rc_); \
  } while (0)
