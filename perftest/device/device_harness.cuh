// The host side of every device benchmark: options, start-up (MPI, GPU check, the library), launches timed
// with CUDA events around the whole launch, and the per-size loops that print NVSHMEM's tables.
//
// One source, two backends: a benchmark .cu writes its kernels as templates over a backend struct and runs
// them with `Ops`, which is TshmemOps by default and NvshmemOps when the unit is compiled with
// -DTSHMEM_PERF_NVSHMEM (the NVSHMEM twin target of the same file).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bench_config.h"
#include "cuda_check.h"
#include "perf_types.cuh"

#if defined(TSHMEM_PERF_NVSHMEM)
#include "ops_nvshmem.cuh"
namespace tshmem_perf {
using Ops = NvshmemOps;
}
#else
#include "ops_tshmem.cuh"
namespace tshmem_perf {
using Ops = TshmemOps;
}
#endif

/// The build variant, as the JSON lines name it ("default", or "pe_check=0" for the PE-check twins).
#ifndef TSHMEM_PERF_BUILD
#define TSHMEM_PERF_BUILD "default"
#endif

namespace tshmem_perf {

/// Bytes a get benchmark rotates its remote source over: more than the 60 MB L2 of an H100/H200, so that no
/// timed iteration reads a line that an earlier one (warm-up included) left in a cache.
constexpr size_t kRotateBytes = size_t{128} << 20;

/// The symmetric pool a rotating remote source needs for transfers of up to `max_size` bytes.
inline size_t rotation_pool_bytes(size_t max_size) { return std::max(kRotateBytes, (max_size + 255) & ~size_t{255}); }

/// Where the next remote read starts: slot `next` of `slots` slots, `stride` bytes apart in a pool of
/// `pool_bytes` (0: one slot, the same bytes every time).
struct Rotation {
  size_t pool_bytes = 0;
  size_t stride = 0;
  unsigned slots = 1;
  unsigned next = 0;  ///< advances across warm-up and timed launches: every launch reads fresh lines

  /// Fits the slots to transfers of `bytes`, runs `launch(*this)` (a launch of `iters` iterations, each reading
  /// the slot after the last) and moves past the slots it read. Returns what launch returned (milliseconds).
  template <class Launch>
  float run(size_t bytes, int iters, Launch &&launch) {
    const size_t fitted = (bytes + 255) & ~size_t{255};
    if (stride != fitted) {
      stride = fitted;
      slots = static_cast<unsigned>(pool_bytes / stride > 0 ? pool_bytes / stride : 1);
      next = 0;
    }
    const float ms = launch(static_cast<const Rotation &>(*this));
    next = (next + static_cast<unsigned>(iters)) % slots;
    return ms;
  }
};

/// The elements of type T in a `bytes`-long transfer, at least one.
template <class T>
size_t element_count(size_t bytes) {
  return bytes / sizeof(T) > 0 ? bytes / sizeof(T) : 1;
}

/// Keeps a stream busy until the host sets flag[0] (mapped pinned memory): see DeviceBench::launch. Gives up
/// after a second and sets flag[1], so that a launch that needs the device idle (a lazily loaded module)
/// cannot deadlock against it; the host then warns that this figure includes the wait.
__global__ void hold_kernel(volatile int *flag) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (flag[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > 1000000000ull) {
      flag[1] = 1;
      return;
    }
  }
}

/// A device benchmark between start() and finish(): the options, the pair of PEs, a stream with two events,
/// and the two counter words of grid_sync.
struct DeviceBench {
  BenchConfig config;
  std::string name;
  int exit_code = 0;  ///< what main returns when start() returns false
  /// Set before start(): the benchmark runs at any PE count from 2 up (all-pairs); otherwise exactly 2.
  bool any_pe_count = false;
  /// Set before start(): the benchmark also runs at 1 PE, its peer then being itself (a local row: this
  /// GPU's own memory, no link). For pair benchmarks whose PE 0 does the work and PE 1 only serves.
  bool runs_alone = false;
  int me = 0, n_pes = 0, peer = 0;  ///< peer: the other PE of a pair; (me + 1) mod n_pes at more PEs
  int sm_count = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t event_start = nullptr, event_stop = nullptr;
  unsigned *grid_counter = nullptr;
  volatile int *hold_flag = nullptr;  ///< pinned host word that hold_kernel waits on
  int *hold_flag_device = nullptr;

  /// Parses the options (NVSHMEM's, with the benchmark's defaults already in `config`), skips when this node
  /// has no GPU or fewer GPUs than PEs (exit 0 after a "skipped:" line), starts MPI and the library and opens
  /// the report. Returns false when main should return `exit_code` at once.
  bool start(int argc, char **argv, const char *bench_name);
  /// Before start(), for a benchmark of a pair whose PE 0 works and PE 1 only serves (so it also runs at 1 PE: a
  /// local row): sizes `min_size` to `max_size` bytes, `iters` timed iterations after `warmup_iters`.
  void pair_defaults(size_t min_size, size_t max_size, int iters, int warmup_iters) {
    sizes(min_size, max_size);
    iterations(iters, warmup_iters);
    runs_alone = true;
  }
  /// Before start(): the default sizes, `min_size` to `max_size` bytes (-b, -e).
  void sizes(size_t min_size, size_t max_size) {
    config.min_size = min_size;
    config.max_size = max_size;
  }
  /// Before start(): the default iterations, `iters` timed after `warmup_iters` (-n, -w).
  void iterations(int iters, int warmup_iters) {
    config.iters = iters;
    config.warmup_iters = warmup_iters;
  }
  /// pair_defaults in NVSHMEM's bandwidth shape: 4 KiB up, 200 iterations after 20, 32 CTAs.
  void pair_bandwidth_defaults(size_t max_size) {
    pair_defaults(4096, max_size, 200, 20);
    config.ctas = 32;
  }
  /// Frees what alloc() and start() made, finalizes the library and MPI.
  void finish();
  /// finish() for a benchmark that takes -d: PE 0 first names the types it takes when -d named another.
  /// Returns main's exit code (2 for an unknown type).
  int finish_typed(bool known, const char *types) {
    if (!known && me == 0) std::fprintf(stderr, "%s: -d %s: use %s\n", name.c_str(), config.datatype.c_str(), types);
    finish();
    return known ? 0 : 2;
  }

  /// The report, labelled with the backend and build variant (open between start() and finish()).
  Reporter &report() { return *reporter; }
  /// Symmetric allocation of `bytes` on every PE (collective), zeroed, freed by finish(); aborts with a
  /// message when it fails.
  template <class T = char>
  T *alloc(size_t bytes);
  /// "<library>, <ctas> x <threads> threads": how a launch of `ctas` blocks of -t threads is described.
  std::string launch_note(int ctas) const {
    return std::string(Ops::kName) + ", " + std::to_string(ctas) + " x " + std::to_string(config.threads_per_cta) +
           " threads";
  }
  /// ", <one_way>", or with --bidir that both directions are summed.
  std::string direction_note(const char *one_way) const {
    return config.bidir ? ", bidirectional (sum of both directions)" : std::string(", ") + one_way;
  }
  /// The threads of one group of scope `s` (a block: -t).
  int scope_threads(Scope s) const { return s == Scope::thread ? 1 : s == Scope::warp ? 32 : config.threads_per_cta; }
  /// One block's threads for `n` elements, one per thread up to -t.
  int element_threads(size_t n) const {
    return static_cast<int>(std::min<size_t>(n, static_cast<size_t>(config.threads_per_cta)));
  }

  /// A timed measurement between PE barriers: on the PEs where `runs_here`, `run(config.warmup_iters)` (when
  /// there are any), then `run(config.iters)`, whose milliseconds it returns (0 where it did not run). With
  /// `together` (every PE runs, and their kernels wait on each other) a barrier between the two, so that both
  /// timed kernels start together and neither times the other's launch.
  template <class Run>
  float timed(bool runs_here, bool together, Run &&run) {
    sync_pes();
    float ms = 0;
    if (runs_here) {
      if (config.warmup_iters > 0) run(config.warmup_iters);
      if (together) sync_pes();
      ms = run(config.iters);
    }
    sync_pes();
    return ms;
  }

  /// Every PE: device idle, then the library's host barrier.
  void sync_pes() {
    PERF_CUDA(cudaStreamSynchronize(stream));
    Ops::barrier_all();
  }
  /// Sum of `value` over the PEs (bidirectional totals).
  static double sum_over_pes(double value) {
    double total = 0;
    MPI_Allreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return total;
  }
  /// The most blocks of `threads` threads that can be co-resident for `kernel` (cooperative launches).
  template <class Kernel>
  int max_ctas(Kernel kernel, int threads) const {
    int per_sm = 0;
    PERF_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
    return per_sm * sm_count;
  }
  /// config.ctas, clamped (with a note) to what `kernel` can keep co-resident.
  template <class Kernel>
  int ctas_for(Kernel kernel, int threads) {
    const int limit = max_ctas(kernel, threads);
    if (config.ctas <= limit) return config.ctas;
    report().note("-c " + std::to_string(config.ctas) + " exceeds the " + std::to_string(limit) +
                  " co-resident blocks of " + std::to_string(threads) + " threads: using " + std::to_string(limit));
    return limit;
  }

  /// Launches `kernel` through the backend (every block co-resident; every PE's kernel may wait on the other)
  /// with the grid_sync counters zeroed, and returns the milliseconds between events recorded around it.
  /// The stream is held (hold_kernel) until the kernel and the stop event are queued, so the time is the
  /// kernel's alone: no host-side launch cost (NVSHMEM's collective launch queries occupancy) falls inside.
  template <class... KArgs, class... Args>
  float launch(void (*kernel)(KArgs...), int ctas, int threads, Args &&...args) {
    std::tuple<KArgs...> values(static_cast<KArgs>(args)...);
    hold_flag[0] = 0;
    hold_flag[1] = 0;
    hold_kernel<<<1, 1, 0, stream>>>(hold_flag_device);
    PERF_CUDA(cudaGetLastError());
    PERF_CUDA(cudaMemsetAsync(grid_counter, 0, 2 * sizeof(unsigned), stream));
    PERF_CUDA(cudaEventRecord(event_start, stream));
    cudaError_t rc = cudaSuccess;
    std::apply(
        [&](auto &...v) {
          void *pointers[] = {static_cast<void *>(&v)..., nullptr};
          rc = Ops::launch(reinterpret_cast<const void *>(kernel), dim3(static_cast<unsigned>(ctas)),
                           dim3(static_cast<unsigned>(threads)), pointers, stream);
        },
        values);
    const cudaError_t recorded = cudaEventRecord(event_stop, stream);
    hold_flag[0] = 1;  // release the stream even when the launch failed, then report
    PERF_CUDA(rc);
    PERF_CUDA(recorded);
    PERF_CUDA(cudaEventSynchronize(event_stop));
    if (hold_flag[1] != 0)
      std::fprintf(stderr, "%s: warning: the launch was held back over a second; this figure includes it\n",
                   name.c_str());
    float ms = 0;
    PERF_CUDA(cudaEventElapsedTime(&ms, event_start, event_stop));
    return ms;
  }

 private:
  std::optional<Reporter> reporter;
  std::vector<void *> allocations;  ///< alloc()'s, freed by finish() newest first
};

inline bool DeviceBench::start(int argc, char **argv, const char *bench_name) {
  name = bench_name;
  if (!parse_args(argc, argv, bench_name, &config, &exit_code)) return false;
  // Every kernel loaded at context creation: a lazy load during a timed launch would wait for the device to
  // go idle, which the held stream (see launch) never does on its own.
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  // MPI_THREAD_MULTIPLE: across "nodes" (TSHMEM_DEBUG_NODE_SIZE) tshmem's off-node proxy thread needs it; with
  // less, PEs of other nodes stay unreachable and the across-node rows trap.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local_rank = 0, local_size = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  (void)cudaGetLastError();
  // Every PE takes the same decision: the fewest GPUs any node has against the most PEs any node runs.
  int fewest = devices, most = local_size;
  MPI_Allreduce(&devices, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&local_size, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  std::string skip;
  // Several PEs on one GPU measure the logic, not the speed: only where the user asks for it, as for the
  // library itself (TSHMEM_ALLOW_SHARED_GPU), and said on the first line of the output.
  const char *shared_env = std::getenv("TSHMEM_ALLOW_SHARED_GPU");
  const bool shared_gpu = shared_env != nullptr && std::string(shared_env) == "1" && most > fewest;
  if (fewest == 0)
    skip = "no GPU";
  else if (most > fewest && !shared_gpu)
    skip = std::to_string(most) + " PEs on a node with " + std::to_string(fewest) +
           " GPUs (TSHMEM_ALLOW_SHARED_GPU=1 runs them sharing: logic, not speed)";
  else if (size == 1 && !runs_alone)
    skip = std::string(any_pe_count ? "needs at least 2 PEs" : "needs exactly 2 PEs") + ", got 1";
  else if (size > 2 && !any_pe_count)
    skip = "needs exactly 2 PEs, got " + std::to_string(size);
  if (!skip.empty()) {
    if (rank == 0) std::printf("%s (%s): skipped: %s\n", bench_name, Ops::kName, skip.c_str());
    MPI_Finalize();
    exit_code = 0;
    return false;
  }
  if (rank == 0 && shared_gpu)
    std::printf("%s (%s): %d PEs share %d GPU(s): logic, not speed\n", bench_name, Ops::kName, most, fewest);
  if (rank == 0 && size == 1)
    std::printf("%s (%s): 1 PE, the peer is this PE: local rows (this GPU's memory, no link)\n", bench_name,
                Ops::kName);
  PERF_CUDA(cudaSetDevice(local_rank % devices));  // NVSHMEM uses the current device; tshmem picks the same
  if (Ops::init(MPI_COMM_WORLD) != 0) {
    std::fprintf(stderr, "%s (%s): init failed: %s\n", bench_name, Ops::kName, Ops::last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  me = Ops::my_pe();
  n_pes = Ops::n_pes();
  peer = (me + 1) % n_pes;
  int device = 0;
  PERF_CUDA(cudaGetDevice(&device));
  PERF_CUDA(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  PERF_CUDA(cudaEventCreate(&event_start));
  PERF_CUDA(cudaEventCreate(&event_stop));
  PERF_CUDA(cudaMalloc(&grid_counter, 2 * sizeof(unsigned)));
  int *flag = nullptr;
  PERF_CUDA(cudaHostAlloc(&flag, 2 * sizeof(int), cudaHostAllocMapped));
  hold_flag = flag;
  PERF_CUDA(cudaHostGetDevicePointer(&hold_flag_device, flag, 0));
  reporter.emplace(config, name, me == 0);
  reporter->set_labels(Ops::kName, TSHMEM_PERF_BUILD);
  return true;
}

inline void DeviceBench::finish() {
  for (auto p = allocations.rbegin(); p != allocations.rend(); ++p) Ops::free(*p);
  PERF_CUDA(cudaStreamSynchronize(stream));
  Ops::barrier_all();
  PERF_CUDA(cudaFree(grid_counter));
  PERF_CUDA(cudaFreeHost(const_cast<int *>(hold_flag)));
  PERF_CUDA(cudaEventDestroy(event_start));
  PERF_CUDA(cudaEventDestroy(event_stop));
  PERF_CUDA(cudaStreamDestroy(stream));
  reporter.reset();
  Ops::finalize();
  MPI_Finalize();
}

template <class T>
T *DeviceBench::alloc(size_t bytes) {
  void *p = Ops::malloc(bytes);
  if (p == nullptr) {
    std::fprintf(stderr, "%s: symmetric allocation of %zu bytes failed (raise %s)\n", name.c_str(), bytes,
                 Ops::kHeapSizeVariable);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  allocations.push_back(p);
  PERF_CUDA(cudaMemset(p, 0, bytes));
  PERF_CUDA(cudaDeviceSynchronize());
  return static_cast<T *>(p);
}

/// One bandwidth row per size. `run(bytes, iters)` launches the kernel and returns milliseconds; PE 0 (and
/// with --bidir every PE) runs a warm-up launch, then the timed one. Reported: bytes x iters / time, summed
/// over the PEs that ran.
template <class Run>
void bandwidth_rows(DeviceBench &b, const std::string &variant, Run &&run) {
  for (size_t bytes : b.config.sizes()) {
    const float ms = b.timed(b.me == 0 || b.config.bidir, false, [&](int iters) { return run(bytes, iters); });
    const double gbps = ms > 0 ? static_cast<double>(bytes) * b.config.iters / (ms * 1e-3) / 1e9 : 0;
    b.report().row({std::to_string(bytes), variant, fmt_double(DeviceBench::sum_over_pes(gbps), 2)});
  }
}

/// One latency row per size: `run(bytes, iters)` on PE 0, or on both PEs together (`both_pes`), reported as
/// PE 0's time per iteration divided by `per_iter` (2 for a ping-pong's half round trip).
template <class Run>
void latency_rows(DeviceBench &b, const std::string &variant, bool both_pes, double per_iter, Run &&run) {
  for (size_t bytes : b.config.sizes()) {
    const float ms = b.timed(b.me == 0 || both_pes, both_pes, [&](int iters) { return run(bytes, iters); });
    const double us = static_cast<double>(ms) * 1e3 / b.config.iters / per_iter;
    if (b.me == 0) b.report().row({std::to_string(bytes), variant, fmt_double(us, 3)});
  }
}

/// The scopes -s selects: one of thread / warp / block, or all three.
inline bool scope_selected(const BenchConfig &config, Scope s) {
  return config.scope == "all" || config.scope == scope_name(s);
}

}  // namespace tshmem_perf
