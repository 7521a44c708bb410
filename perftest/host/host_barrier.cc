// Host barrier_all latency at n PEs, in NVSHMEM's table shape with --json; built against tshmem and, where
// NVSHMEM was found, NVSHMEM (nvshmem_barrier_all: the twin) from this one source.
#include <mpi.h>

#include <chrono>

#include "bench_config.h"
#include "host_backend.h"

using namespace tshmem_perf;
using backend = tshmem_perf::HostBackend;

int main(int argc, char **argv) {
  BenchConfig config;
  config.iters = 2000;
  config.warmup_iters = 200;
  int exit_code = 0;
  if (!parse_args(argc, argv, "host_barrier", &config, &exit_code)) return exit_code;
  if (!start_host_benchmark(&argc, &argv, "host_barrier", &exit_code)) return exit_code;
  const int n = backend::n_pes();
  Reporter report(config, "host_barrier", backend::my_pe() == 0);
  report.set_labels(backend::kName, "default");
  report.header("host barrier_all latency", {"PEs", "op", "latency (us)"});
  for (int i = 0; i < config.warmup_iters; ++i) backend::barrier_all();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < config.iters; ++i) backend::barrier_all();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / config.iters;
  // The slowest PE's figure: a barrier is not over until every PE has left it.
  double slowest = 0;
  MPI_Reduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  report.row({std::to_string(n), "barrier_all", fmt_double(slowest, 3)});
  backend::finalize();
  MPI_Finalize();
  return 0;
}
