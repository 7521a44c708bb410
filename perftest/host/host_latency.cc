// Host latencies: putmem + quiet of small messages (PE 0 to PE 1) and tshmem_barrier_all over all PEs.
#include <chrono>

#include "host_bench.h"
#include "tshmem/tshmem.h"

using namespace tshmem_perf;
using Clock = std::chrono::steady_clock;

int main(int argc, char **argv) {
  BenchConfig config;
  config.min_size = 8;
  config.max_size = 4096;
  config.iters = 1000;
  config.warmup_iters = 100;
  int exit_code = 0;
  if (!start_host_bench(argc, argv, "host_latency", &config, &exit_code)) return exit_code;
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  char *buffer = static_cast<char *>(tshmem_malloc(2 * config.max_size));
  Reporter report(config, "host_latency", me == 0);
  report.note(std::string("backend ") + tshmemx_backend_name() + ", " + std::to_string(n) + " PEs");

  if (n >= 2) {
    report.header("tshmem_putmem + tshmem_quiet latency", {"size(B)", "op", "latency (us)"});
    for (size_t bytes : config.sizes()) {
      tshmem_barrier_all();
      double us = 0;
      if (me == 0) {
        for (int i = 0; i < config.warmup_iters; ++i)
          tshmem_putmem(buffer, buffer + config.max_size, bytes, 1), tshmem_quiet();
        const auto start = Clock::now();
        for (int i = 0; i < config.iters; ++i) {
          tshmem_putmem(buffer, buffer + config.max_size, bytes, 1);
          tshmem_quiet();
        }
        us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / config.iters;
      }
      tshmem_barrier_all();
      report.row({std::to_string(bytes), "put+quiet", fmt_double(us, 3)});
    }
  }

  report.header("tshmem_barrier_all latency", {"PEs", "op", "latency (us)"});
  for (int i = 0; i < config.warmup_iters; ++i) tshmem_barrier_all();
  const auto start = Clock::now();
  for (int i = 0; i < config.iters; ++i) tshmem_barrier_all();
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / config.iters;
  report.row({std::to_string(n), "barrier_all", fmt_double(us, 3)});

  tshmem_free(buffer);
  tshmem_finalize();
  return 0;
}
