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
void timed_row(DeviceBench &b, Reporter &report) {
  if (!scope_selected(b.config, S)) return;
  const int threads = S == Scope::thread ? 1 : S == Scope::warp ? 32 : b.config.threads_per_cta;
  auto kernel = barrier_latency_kernel<Ops, S, kBarrier>;
  b.sync_pes();
  if (b.config.warmup_iters > 0) b.launch(kernel, 1, threads, b.config.warmup_iters);
  b.sync_pes();
  const float ms = b.launch(kernel, 1, threads, b.config.iters);
  b.sync_pes();
  report.row({kBarrier ? "barrier_all" : "sync_all", scope_name(S),
              fmt_double(static_cast<double>(ms) * 1e3 / b.config.iters, 3)});
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.config.iters = 2000;
  b.config.warmup_iters = 200;
  int exit_code = 0;
  if (!b.start(argc, argv, "barrier_latency", &exit_code)) return exit_code;

  Reporter report(b.config, "barrier_latency", b.me == 0);
  b.label(report);
  report.note(std::string(Ops::kName) + ", " + std::to_string(b.n_pes) +
              " PEs, one group per PE, block = " + std::to_string(b.config.threads_per_cta) + " threads");
  report.header("device barrier latency", {"op", "scope", "latency (us)"});
  timed_row<Scope::thread, true>(b, report);
  timed_row<Scope::warp, true>(b, report);
  timed_row<Scope::block, true>(b, report);
  timed_row<Scope::thread, false>(b, report);
  timed_row<Scope::warp, false>(b, report);
  timed_row<Scope::block, false>(b, report);
  b.finish();
  return 0;
}
