// The host calls of the benchmarks that have an NVSHMEM twin (the host ones: malloc, barrier_all; the device
// ones' backends, ops_tshmem.cuh and ops_nvshmem.cuh, add theirs to these): one source, two libraries. tshmem
// by default; NVSHMEM when the unit is compiled with -DTSHMEM_PERF_NVSHMEM (it then needs the CUDA runtime and
// NVSHMEM's headers and host library; the MPI bootstrap as in the device twins).
#pragma once

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#if defined(TSHMEM_PERF_NVSHMEM)
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#else
#include "tshmem/tshmem.h"
#endif

namespace tshmem_perf {

struct HostBackend {
#if defined(TSHMEM_PERF_NVSHMEM)
  static constexpr const char *kName = "nvshmem";

  /// MPI_Init must have run. Returns 0 on success, 1 on failure, -1 when this node has no GPU (every PE
  /// then prints nothing and the caller skips).
  static int init(MPI_Comm comm) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    int fewest = devices;
    MPI_Allreduce(&devices, &fewest, 1, MPI_INT, MPI_MIN, comm);
    if (fewest == 0) return -1;
    MPI_Comm node;
    int rank = 0, local_rank = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    if (cudaSetDevice(local_rank % devices) != cudaSuccess) return 1;
#ifdef TSHMEM_PERF_NVSHMEM_LIB_DIR
    setenv("NVSHMEM_BOOTSTRAP_MPI_PLUGIN", TSHMEM_PERF_NVSHMEM_LIB_DIR "/nvshmem_bootstrap_mpi.so.3", 0);
#endif
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_mpi_comm_args(&comm, &attr) != 0) return 1;
    return nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, &attr) == 0 ? 0 : 1;
  }
  static void finalize() { nvshmem_finalize(); }
  static int my_pe() { return nvshmem_my_pe(); }
  static int n_pes() { return nvshmem_n_pes(); }
  static void *malloc(size_t bytes) { return nvshmem_malloc(bytes); }
  static void free(void *p) { nvshmem_free(p); }
  static void barrier_all() { nvshmem_barrier_all(); }
  static const char *last_error() { return "see NVSHMEM's messages above"; }
#else
  static constexpr const char *kName = "tshmem";

  static int init(MPI_Comm comm) {
    tshmemx_init_attr_t attr = TSHMEMX_INIT_ATTR_INITIALIZER;
    attr.mpi_comm = &comm;
    return tshmemx_init_attr(TSHMEMX_INIT_WITH_MPI_COMM, &attr) == 0 ? 0 : 1;
  }
  static void finalize() { tshmem_finalize(); }
  static int my_pe() { return tshmem_my_pe(); }
  static int n_pes() { return tshmem_n_pes(); }
  static void *malloc(size_t bytes) { return tshmem_malloc(bytes); }
  static void free(void *p) { tshmem_free(p); }
  static void barrier_all() { tshmem_barrier_all(); }
  static const char *last_error() { return tshmemx_last_error(); }
#endif
};

/// The start of a host benchmark `bench`: MPI, then the library. Returns false when main should return *exit_code
/// at once (MPI finalized): 0 after a "skipped:" line where a node has no GPU (NVSHMEM), 1 after the error.
inline bool start_host_benchmark(int *argc, char ***argv, const char *bench, int *exit_code) {
  MPI_Init(argc, argv);
  const int status = HostBackend::init(MPI_COMM_WORLD);
  if (status == 0) return true;
  if (status < 0) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::printf("%s (%s): skipped: no GPU\n", bench, HostBackend::kName);
  } else {
    std::fprintf(stderr, "%s: %s init failed: %s\n", bench, HostBackend::kName, HostBackend::last_error());
  }
  MPI_Finalize();
  *exit_code = status < 0 ? 0 : 1;
  return false;
}

}  // namespace tshmem_perf
