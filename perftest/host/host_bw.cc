// Host-initiated put/get bandwidth (tshmem_putmem / tshmem_getmem) from PE 0 to PE 1, and with
// --bidir both ways at once. Source and target both live in the symmetric heap, so on GPU backends this
// measures GPU-to-GPU copies and on shm host memory copies.
#include <chrono>
#include <cstring>

#include "host_bench.h"
#include "tshmem/tshmem.h"

using namespace tshmem_perf;
using Clock = std::chrono::steady_clock;

namespace {

double run(bool put, size_t bytes, const BenchConfig &config, char *target, char *source, int peer) {
  auto transfer = [&] {
    return put ? tshmem_putmem(target, source, bytes, peer) : tshmem_getmem(target, source, bytes, peer);
  };
  for (int i = 0; i < config.warmup_iters; ++i) transfer();
  tshmem_quiet();
  const auto start = Clock::now();
  for (int i = 0; i < config.iters; ++i) transfer();
  tshmem_quiet();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char **argv) {
  BenchConfig config;
  config.min_size = 4096;
  config.max_size = 64 << 20;
  int exit_code = 0;
  if (!start_host_bench(argc, argv, "host_bw", &config, &exit_code)) return exit_code;
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  if (n < 2) {
    if (me == 0) std::fprintf(stderr, "host_bw: needs at least 2 PEs\n");
    tshmem_finalize();
    return 2;
  }
  char *target = static_cast<char *>(tshmem_malloc(config.max_size));
  char *source = static_cast<char *>(tshmem_malloc(config.max_size));
  if (!target || !source) {
    std::fprintf(stderr, "host_bw: allocation of 2 x %zu bytes failed: %s\n", config.max_size, tshmemx_last_error());
    tshmem_finalize();
    return 1;
  }
  Reporter report(config, "host_bw", me == 0);
  const char *path = tshmem_ptr(target, 1 - (me & 1)) != nullptr ? "load/store" : "another node: off-node proxy";
  report.note(std::string("backend ") + tshmemx_backend_name() + (config.bidir ? ", bidirectional" : ", PE 0 -> PE 1") +
              " (" + path + ")");
  for (bool put : {true, false}) {
    report.header(put ? "tshmem_putmem bandwidth" : "tshmem_getmem bandwidth", {"size(B)", "op", "BW (GB/sec)"});
    for (size_t bytes : config.sizes()) {
      tshmem_barrier_all();
      const bool active = me == 0 || (config.bidir && me == 1);
      const double seconds = active ? run(put, bytes, config, put ? target : source, put ? source : target, 1 - me) : 0;
      tshmem_barrier_all();
      const double gbps = seconds > 0 ? static_cast<double>(bytes) * config.iters / seconds / 1e9 : 0;
      report.row({std::to_string(bytes), put ? "put" : "get", fmt_double(config.bidir ? 2 * gbps : gbps, 2)});
    }
  }
  tshmem_free(source);
  tshmem_free(target);
  tshmem_finalize();
  return 0;
}
