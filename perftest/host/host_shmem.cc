// The host path as one OpenSHMEM program: init, put/get latency and bandwidth, barrier_all, malloc + free.
// Built from this one source against tshmem, tshmem_nocheck (symmetry check compiled out) and, where
// oshcc and shmem.h were found, Open MPI's OpenSHMEM (the twin: perftest/common/oshmem.cmake), so that
// scripts/oshmem-compare.sh prints the libraries side by side from one run.
//
// The program makes OpenSHMEM calls only (no MPI of its own): "init" is each library's whole start, MPI's
// included, as OSHMEM's shmem_init starts MPI itself. Every figure is the slowest PE's, and the best of a
// few batches, each started after a barrier: a descheduled PE (2 cores, other work) stalls one batch, and
// the best batch measures the library rather than the machine's worst moment.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <utility>

#include "bench_config.h"
#include "openshmem_api.h"

#ifndef TSHMEM_PERF_BUILD
#define TSHMEM_PERF_BUILD "default"
#endif

using namespace tshmem_perf;
namespace shm = tshmem_perf::openshmem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kBatches = 5;
constexpr size_t kLatencyMax = 4096;           // latency rows up to here; bandwidth rows from here
constexpr size_t kBandwidthBytes = 256 << 20;  // bytes moved per bandwidth batch (fewer iterations when large)

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

class Harness {
 public:
  explicit Harness(double *slots) : slots_(slots), me_(shm::my_pe()) {}

  /// The largest of every PE's `mine`, on PE 0 (collective). Other PEs get 0.
  double slowest(double mine) {
    shm::putmem(&slots_[me_], &mine, sizeof mine, 0);
    shm::barrier_all();
    double worst = 0;
    if (me_ == 0)  // read with a get: on a GPU heap (--backend vmm/ipc) the slots are not host memory
      for (int pe = 0; pe < shm::n_pes(); ++pe) {
        double theirs = 0;
        shm::getmem(&theirs, &slots_[pe], sizeof theirs, 0);
        worst = std::max(worst, theirs);
      }
    shm::barrier_all();  // PE 0 has read the slots before anyone writes them again
    return worst;
  }

  /// Seconds per call of `body`: `warmup` calls, then the best of `batches` batches of `iters` calls on every PE.
  template <class Body>
  double best_batch(int batches, int iters, int warmup, Body &&body) {
    for (int i = 0; i < warmup; ++i) body();
    double best = std::numeric_limits<double>::infinity();
    for (int b = 0; b < batches; ++b) {
      shm::barrier_all();
      const auto start = Clock::now();
      for (int i = 0; i < iters; ++i) body();
      best = std::min(best, slowest(seconds_since(start) / iters));
    }
    return best;
  }

 private:
  double *slots_;
  int me_;
};

}  // namespace

int main(int argc, char **argv) {
  BenchConfig config;
  config.min_size = 8;
  config.max_size = 64 << 20;
  config.iters = 2000;
  config.warmup_iters = 100;
  int exit_code = 0;
  if (!parse_args(argc, argv, "host_shmem", &config, &exit_code)) return exit_code;

  const auto init_start = Clock::now();
  if (shm::init() != 0) {
    std::fprintf(stderr, "host_shmem: %s init failed: %s\n", shm::kLib, shm::last_error());
    return 1;
  }
  const double init_seconds = seconds_since(init_start);
  const int me = shm::my_pe(), n = shm::n_pes();
  auto *slots = static_cast<double *>(shm::malloc(static_cast<size_t>(n) * sizeof(double)));
  if (slots == nullptr) {
    std::fprintf(stderr, "host_shmem: allocating %d doubles failed: %s\n", n, shm::last_error());
    return 1;
  }
  Harness harness(slots);
  Reporter report(config, "host_shmem", me == 0);
  report.set_labels(shm::kLib, TSHMEM_PERF_BUILD);
  report.note(shm::describe() + ", " + std::to_string(n) + " PEs, build " + TSHMEM_PERF_BUILD);
  const std::string pes = std::to_string(n);
  // The heap each library ran with (scripts/oshmem-compare.sh --heaps): part of the init row's name.
  const char *heap = std::getenv("TSHMEM_PERF_HEAP");
  report.header("init", {"PEs", "op", "size(B)", "time (s)"});
  report.row({pes, std::string("init (heap ") + (heap != nullptr ? heap : "default") + ")", "-",
              fmt_double(harness.slowest(init_seconds), 4)});
  if (std::getenv("TSHMEM_PERF_INIT_ONLY") != nullptr) {  // the init rows at other heap sizes
    shm::free(slots);
    shm::finalize();
    return 0;
  }

  char *target = static_cast<char *>(shm::malloc(config.max_size));
  char *source = static_cast<char *>(shm::malloc(config.max_size));
  if (target == nullptr || source == nullptr) {
    std::fprintf(stderr, "host_shmem: allocating 2 x %zu bytes failed: %s (raise the symmetric heap size)\n",
                 config.max_size, shm::last_error());
    return 1;
  }
  std::memset(source, me + 1, config.max_size);
  const int peer = n > 1 ? 1 : 0;  // PE 0 -> PE 1 (itself at 1 PE)

  report.header("latency", {"PEs", "op", "size(B)", "latency (us)"});
  for (bool put : {true, false})
    for (size_t bytes : config.sizes()) {
      if (bytes > kLatencyMax) break;
      const double seconds = harness.best_batch(kBatches, config.iters, config.warmup_iters, [&] {
        if (me != 0) return;
        if (put) {
          shm::putmem(target, source, bytes, peer);
          shm::quiet();
        } else {
          shm::getmem(target, source, bytes, peer);
        }
      });
      report.row({pes, put ? "put+quiet" : "get", std::to_string(bytes), fmt_double(seconds * 1e6, 3)});
    }

  report.header("bandwidth", {"PEs", "op", "size(B)", "BW (GB/sec)"});
  for (bool put : {true, false})
    for (size_t bytes : config.sizes()) {
      if (bytes < kLatencyMax) continue;
      const int iters = static_cast<int>(std::clamp<size_t>(kBandwidthBytes / bytes, 4, 10 * config.iters));
      // One batch = `iters` transfers, then one quiet: the figure is a stream, not a round trip each.
      const double seconds = harness.best_batch(kBatches, 1, 1, [&] {
        if (me != 0) return;
        for (int i = 0; i < iters; ++i)
          put ? shm::putmem(target, source, bytes, peer) : shm::getmem(target, source, bytes, peer);
        shm::quiet();
      });
      report.row({pes, put ? "put" : "get", std::to_string(bytes),
                  fmt_double(static_cast<double>(bytes) * iters / seconds / 1e9, 2)});
    }

  report.header("collectives", {"PEs", "op", "size(B)", "latency (us)"});
  const double barrier = harness.best_batch(kBatches, config.iters, config.warmup_iters, [] { shm::barrier_all(); });
  report.row({pes, "barrier_all", "-", fmt_double(barrier * 1e6, 3)});
  for (size_t bytes : {size_t{4096}, size_t{1} << 20}) {
    const double pair =
        harness.best_batch(kBatches, config.iters, config.warmup_iters, [&] { shm::free(shm::malloc(bytes)); });
    report.row({pes, "malloc+free", std::to_string(bytes), fmt_double(pair * 1e6, 3)});
  }

  // The world's data collectives at 8 B and 1 MiB per PE (float sum; 64-bit moves): latency per call.
  shm::Collectives coll;
  const size_t per_pe_max = size_t{1} << 20;
  char *coll_dst = static_cast<char *>(shm::malloc(per_pe_max * static_cast<size_t>(n)));
  char *coll_src = static_cast<char *>(shm::malloc(per_pe_max * static_cast<size_t>(n)));
  if (coll_dst != nullptr && coll_src != nullptr && coll.setup(per_pe_max / sizeof(float))) {
    std::memset(coll_src, 0, per_pe_max * static_cast<size_t>(n));
    for (size_t bytes : {size_t{8}, per_pe_max}) {
      const int iters = bytes <= 4096 ? config.iters : std::max(4, config.iters / 100);
      const int warmup = bytes <= 4096 ? config.warmup_iters : 2;
      auto *f_dst = reinterpret_cast<float *>(coll_dst);
      const auto *f_src = reinterpret_cast<const float *>(coll_src);
      const std::pair<const char *, std::function<void()>> rows[] = {
          {"sum_reduce(float)", [&] { coll.sum_reduce(f_dst, f_src, bytes / sizeof(float)); }},
          {"broadcast", [&] { coll.broadcast(coll_dst, coll_src, bytes, 0); }},
          {"fcollect", [&] { coll.fcollect(coll_dst, coll_src, bytes); }},
          {"alltoall", [&] { coll.alltoall(coll_dst, coll_src, bytes); }},  // bytes to each PE
      };
      for (const auto &[name, body] : rows) {
        const double seconds = harness.best_batch(kBatches, iters, warmup, body);
        report.row({pes, name, std::to_string(bytes), fmt_double(seconds * 1e6, 3)});
      }
    }
    coll.teardown();
  }
  if (coll_src != nullptr) shm::free(coll_src);
  if (coll_dst != nullptr) shm::free(coll_dst);

  shm::free(source);
  shm::free(target);
  shm::free(slots);
  shm::finalize();
  return 0;
}
