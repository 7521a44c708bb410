// Collective tshmem_malloc + tshmem_free pairs (Google Benchmark). Built twice from this source: against
// libtshmem (symmetry check on) and libtshmem_nocheck (compiled out), so one job compares both.
// Iteration counts are fixed: every PE must make the same number of collective calls.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <cstdio>

#include "tshmem/tshmem.h"

namespace {

void malloc_free(benchmark::State &state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void *p = tshmem_malloc(bytes);
    benchmark::DoNotOptimize(p);
    tshmem_free(p);
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
  MPI_Init(&argc, &argv);
  if (tshmem_init() != 0) {
    std::fprintf(stderr, "host_malloc: tshmem_init failed: %s\n", tshmemx_last_error());
    MPI_Finalize();
    return 1;
  }
  for (long bytes : {4096L, 1L << 20})
    benchmark::RegisterBenchmark(TSHMEM_MALLOC_BENCH_NAME, malloc_free)->Arg(bytes)->Iterations(2000)->Repetitions(3)
        ->ReportAggregatesOnly(true)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  if (tshmem_my_pe() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  tshmem_finalize();
  MPI_Finalize();
  return 0;
}
