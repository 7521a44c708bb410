// The start every host benchmark over tshmem shares: its options (NVSHMEM's), then tshmem_init.
#pragma once

#include <cstdio>

#include "bench_config.h"
#include "tshmem/tshmem.h"

namespace tshmem_perf {

/// Parses the options into *config (with the benchmark's defaults already there) and starts tshmem, saying why
/// not; false when main should return *exit_code at once.
inline bool start_host_bench(int argc, char **argv, const char *bench_name, BenchConfig *config, int *exit_code) {
  if (!parse_args(argc, argv, bench_name, config, exit_code)) return false;
  if (tshmem_init() == 0) return true;
  std::fprintf(stderr, "%s: tshmem_init failed: %s\n", bench_name, tshmemx_last_error());
  *exit_code = 1;
  return false;
}

}  // namespace tshmem_perf
