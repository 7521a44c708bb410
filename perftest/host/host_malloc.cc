// Collective malloc + free pairs (Google Benchmark). Built three times from this source: against libtshmem
// (symmetry check on), libtshmem_nocheck (compiled out) and, where NVSHMEM was found, NVSHMEM
// (nvshmem_malloc + nvshmem_free: the twin), so one job compares all three.
// Iteration counts are fixed: every PE must make the same number of collective calls.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>

#include "host_backend.h"

namespace {

using backend = tshmem_perf::HostBackend;

void malloc_free(benchmark::State &state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void *p = backend::malloc(bytes);
    benchmark::DoNotOptimize(p);
    backend::free(p);
  }
}

// A null reporter for PEs other than 0: they run the same loops but print nothing.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context &) override { return true; }
  void ReportRuns(const std::vector<Run> &) override {}
};

}  // namespace

int main(int argc, char **argv) {
  int exit_code = 0;
  if (!tshmem_perf::start_host_benchmark(&argc, &argv, "host_malloc", &exit_code)) return exit_code;
  for (long bytes : {4096L, 1L << 20})
    benchmark::RegisterBenchmark(TSHMEM_MALLOC_BENCH_NAME, malloc_free)
        ->Arg(bytes)
        ->Iterations(2000)
        ->ReportAggregatesOnly(true)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  // Only PE 0 writes --benchmark_out: the others would truncate and overwrite the same file.
  if (backend::my_pe() != 0) {
    int kept = 1;
    for (int i = 1; i < argc; ++i)
      if (std::strncmp(argv[i], "--benchmark_out", 15) != 0) argv[kept++] = argv[i];
    argc = kept;
  }
  benchmark::Initialize(&argc, argv);
  if (backend::my_pe() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  backend::finalize();
  MPI_Finalize();
  return 0;
}
