// Memory of a target under fan-in: every PE but PE 0 runs -t threads that tshmem_putmem 2 KiB to PE 0 (another
// node: TSHMEM_DEBUG_NODE_SIZE=1) for -n milliseconds; PE 0 samples its own anonymous memory (RssAnon) all the
// while. Flow control bounds what piles up unmatched at a target per origin (credits), whatever the origins'
// rate: the row prints the growth beside the put rate. Run at 3 or more PEs (2 or more origins).
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_config.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

using namespace tshmem_perf;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kPutBytes = 2048;

// This process's resident anonymous memory, in KiB (/proc/self/status); 0 where the kernel does not say.
long long rss_anon_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("RssAnon:", 0) == 0) return std::atoll(line.c_str() + 8);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  BenchConfig config;
  config.iters = 10000;        // -n: milliseconds of fan-in
  config.threads_per_cta = 4;  // -t: threads per origin PE
  int exit_code = 0;
  if (!parse_args(argc, argv, "host_fanin", &config, &exit_code)) return exit_code;
  int provided = 0;
  if (tshmem_init_thread(TSHMEM_THREAD_MULTIPLE, &provided) != 0) {
    std::fprintf(stderr, "host_fanin: tshmem_init_thread failed: %s\n", tshmemx_last_error());
    return 1;
  }
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  const int threads = config.threads_per_cta;
  auto *inbox = static_cast<char *>(tshmem_calloc(static_cast<size_t>(n) * static_cast<size_t>(threads), kPutBytes));
  std::string skip;
  if (n < 3)
    skip = "needs 3 or more PEs (2 or more origins), got " + std::to_string(n);
  else if (provided != TSHMEM_THREAD_MULTIPLE)
    skip = "MPI provides no MPI_THREAD_MULTIPLE";
  else if (inbox == nullptr)
    skip = std::string("allocation failed: ") + tshmemx_last_error();
  else if (tshmem_ptr(inbox, 0) != nullptr && me != 0)
    skip = "PE 0 is on this node (set TSHMEM_DEBUG_NODE_SIZE=1): no off-node traffic to measure";
  const int ok = skip.empty() ? 1 : 0;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (me == 0) std::printf("host_fanin: skipped: %s\n", skip.empty() ? "another PE cannot run it" : skip.c_str());
    tshmem_finalize();
    return 0;
  }
  Reporter report(config, "host_fanin", me == 0);
  report.note("every PE but PE 0 puts 2 KiB from -t threads to PE 0 (another node) for -n ms; PE 0's RssAnon");
  report.header("memory of a target under fan-in",
                {"origins", "threads per origin", "puts/s", "RssAnon before (MiB)", "growth, max (MiB)"});
  tshmem_barrier_all();
  const auto duration = std::chrono::milliseconds(config.iters);
  std::atomic<long long> puts{0};
  long long before = 0, peak = 0;
  int failures = 0;
  const auto start = Clock::now();
  if (me == 0) {
    before = peak = rss_anon_kib();
    while (Clock::now() - start < duration + std::chrono::milliseconds(500)) {
      peak = std::max(peak, rss_anon_kib());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  } else {
    std::vector<std::thread> origins;
    std::atomic<int> failed{0};
    for (int t = 0; t < threads; ++t)
      origins.emplace_back([&, t] {
        std::vector<char> data(kPutBytes, static_cast<char>(me + t));
        char *slot = inbox + (static_cast<size_t>(me) * threads + t) * kPutBytes;
        long long mine = 0;
        while (Clock::now() - start < duration) {
          if (tshmem_putmem(slot, data.data(), kPutBytes, 0) != 0) {
            failed.fetch_add(1);
            break;
          }
          ++mine;
        }
        puts.fetch_add(mine);
      });
    for (std::thread &origin : origins) origin.join();
    failures = failed.load();
  }
  tshmem_quiet();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  long long all_puts = 0;
  const long long mine = puts.load();
  MPI_Allreduce(&mine, &all_puts, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  tshmem_barrier_all();
  report.row({std::to_string(n - 1), std::to_string(threads), fmt_double(static_cast<double>(all_puts) / seconds, 0),
              fmt_double(static_cast<double>(before) / 1024.0, 1),
              fmt_double(static_cast<double>(peak - before) / 1024.0, 1)});
  if (failures != 0)
    std::fprintf(stderr, "host_fanin: PE %d: %d put threads failed: %s\n", me, failures, tshmemx_last_error());
  tshmem_free(inbox);
  tshmem_finalize();
  return failures == 0 ? 0 : 1;
}
