// fanout: what a warp pays to find its peers' heaps when its lanes name different PEs (the question and the
// decision it settled: docs/design.md, "Peer-table read path").
//
//  1. Table reads alone: every lane reads entry ((lane mod d) + i) mod 32 of the peer table, d = 1 (the
//     whole warp names one PE) ... 32 (every lane another), through the constant copy (LDC: the constant
//     cache serves one address per access, so d addresses take d passes) and through a global copy read
//     with __ldg (the read-only cache serves up to 32 different words in one pass). Higher is better.
//  2. p to real PEs: every lane stores to PE (sel + i) mod n_pes, with sel the warp (uniform) or the lane
//     (per-lane), its address translated on either path (tshmem's remote_ptr / remote_ptr_lane).
// The NVSHMEM twin runs the same kernels with nvshmem_ptr on both paths (its table is private).
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

constexpr int kTableEntries = 32;

template <class O, bool kGlobal>
__global__ void table_read_kernel(const uint64_t *table, const void *anchor, int distinct, uint64_t *sink, int iters) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) {
    const int idx = ((lane & (distinct - 1)) + i) & (kTableEntries - 1);
    acc += kGlobal ? O::table_global(table, anchor, idx) : O::table_constant(anchor, idx);
  }
  if (acc == 0x5eedull) sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;  // keeps the reads alive
}

template <class O, bool kPerLane, bool kGlobal>
__global__ void p_fanout_kernel(int *slots, int n_pes, int iters) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const int sel = kPerLane ? static_cast<int>(threadIdx.x & 31u) : static_cast<int>(tid >> 5);
  for (int i = 0; i < iters; ++i) {
    const int pe = (sel + i) % n_pes;
    int *remote = kGlobal ? O::translate_global(slots + tid, pe) : O::translate_constant(slots + tid, pe);
    *static_cast<volatile int *>(remote) = i;
  }
  O::quiet();
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.iterations(2000, 200);
  b.config.ctas = 132;
  b.config.threads_per_cta = 512;
  if (!b.start(argc, argv, "fanout")) return b.exit_code;

  const size_t threads_total = static_cast<size_t>(b.config.ctas) * b.config.threads_per_cta;
  int *slots = b.alloc<int>(threads_total * sizeof(int));
  uint64_t host_table[kTableEntries] = {};
  for (int pe = 0; pe < b.n_pes && pe < kTableEntries; ++pe) host_table[pe] = Ops::peer_base(pe);
  uint64_t *table = nullptr, *sink = nullptr;
  PERF_CUDA(cudaMalloc(&table, sizeof(host_table)));
  PERF_CUDA(cudaMemcpy(table, host_table, sizeof(host_table), cudaMemcpyHostToDevice));
  PERF_CUDA(cudaMalloc(&sink, threads_total * sizeof(uint64_t)));

  Reporter &report = b.report();
  report.note(b.launch_note(b.config.ctas) + ", both PEs at once");
  // Both PEs run every launch together (p_fanout stores to each other); PE 0 reports.
  auto both = [&](auto kernel, auto... args) {
    const float ms = b.timed(true, true, [&](int iters) {
      return b.launch(kernel, b.config.ctas, b.config.threads_per_cta, args..., iters);
    });
    return static_cast<double>(threads_total) * b.config.iters / (static_cast<double>(ms) * 1e-3) / 1e9;
  };

  report.header("peer-table reads per second", {"PEs per warp", "path", "G reads/s"});
  for (int distinct = 1; distinct <= 32; distinct *= 2) {
    const double constant = both(table_read_kernel<Ops, false>, static_cast<const uint64_t *>(table),
                                 static_cast<const void *>(slots), distinct, sink);
    report.row({std::to_string(distinct), "constant", fmt_double(constant, 2)});
    const double global = both(table_read_kernel<Ops, true>, static_cast<const uint64_t *>(table),
                               static_cast<const void *>(slots), distinct, sink);
    report.row({std::to_string(distinct), "global", fmt_double(global, 2)});
  }

  report.header("p fan-out: stores per second", {"pattern", "path", "G stores/s"});
  report.row({"uniform", "constant", fmt_double(both(p_fanout_kernel<Ops, false, false>, slots, b.n_pes), 2)});
  report.row({"uniform", "global", fmt_double(both(p_fanout_kernel<Ops, false, true>, slots, b.n_pes), 2)});
  report.row({"per-lane", "constant", fmt_double(both(p_fanout_kernel<Ops, true, false>, slots, b.n_pes), 2)});
  report.row({"per-lane", "global", fmt_double(both(p_fanout_kernel<Ops, true, true>, slots, b.n_pes), 2)});

  PERF_CUDA(cudaFree(sink));
  PERF_CUDA(cudaFree(table));
  b.finish();
  return 0;
}
