// barrier_latency: the device-side barrier_all and sync_all, called `iters` times in one launch on both PEs
// by one group of each scope (-s thread|warp|block|all; block = -t threads), NVSHMEM's
// shmem_barrier_latency shape. Time per call on PE 0.
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

template <class O, Scope S, bool kBarrier>
__global__ void barrier_latency_kernel(int iters) {
  for (int i = 0; i < iters; ++i) {
    if constexpr (kBarrier)
      O::template barrier_all<S>();
    else
      O::template sync_all<S>();
  }
}

template <Scope S, bool kBarrier>
void timed_row(DeviceBench &b) {
  if (!scope_selected(b.config, S)) return;
  const float ms = b.timed(true, true, [&](int iters) {
    return b.launch(barrier_latency_kernel<Ops, S, kBarrier>, 1, b.scope_threads(S), iters);
  });
  b.report().row({kBarrier ? "barrier_all" : "sync_all", scope_name(S),
                  fmt_double(static_cast<double>(ms) * 1e3 / b.config.iters, 3)});
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.iterations(2000, 200);
  if (!b.start(argc, argv, "barrier_latency")) return b.exit_code;

  b.report().note(std::string(Ops::kName) + ", " + std::to_string(b.n_pes) +
                  " PEs, one group per PE, block = " + std::to_string(b.config.threads_per_cta) + " threads");
  b.report().header("device barrier latency", {"op", "scope", "latency (us)"});
  timed_row<Scope::thread, true>(b);
  timed_row<Scope::warp, true>(b);
  timed_row<Scope::block, true>(b);
  timed_row<Scope::thread, false>(b);
  timed_row<Scope::warp, false>(b);
  timed_row<Scope::block, false>(b);
  b.finish();
  return 0;
}
