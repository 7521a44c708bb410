// signal_ping_pong_latency: PE 0 sets a signal word on PE 1 (signal_op SET), PE 1 waits for it
// (signal_wait_until EQ) and sets PE 0's; reported as half the round trip. Values never repeat.
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

template <class O>
__global__ void signal_ping_pong_kernel(uint64_t *sig, int me, int peer, uint64_t base, int iters) {
  for (int i = 0; i < iters; ++i) {
    const uint64_t value = base + static_cast<uint64_t>(i) + 1;
    if (me == 0) {
      O::signal_set(sig, value, peer);
      O::signal_wait_eq(sig, value);
    } else {
      O::signal_wait_eq(sig, value);
      O::signal_set(sig, value, peer);
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.config.iters = 2000;
  b.config.warmup_iters = 200;
  int exit_code = 0;
  if (!b.start(argc, argv, "signal_ping_pong_latency", &exit_code)) return exit_code;

  uint64_t *sig = sym_alloc<uint64_t>(sizeof(uint64_t), "signal_ping_pong_latency");
  Reporter report(b.config, "signal_ping_pong_latency", b.me == 0);
  b.label(report);
  report.note(std::string(Ops::kName) + ", signal_op(SET) + signal_wait_until(EQ), half round trip");
  report.header("signal ping-pong latency", {"size(B)", "scope", "latency (us)"});
  uint64_t base = 0;
  double us = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const int iters = pass == 0 ? b.config.warmup_iters : b.config.iters;
    if (iters == 0) continue;
    b.sync_pes();
    const float ms = b.launch(signal_ping_pong_kernel<Ops>, 1, 1, sig, b.me, b.peer, base, iters);
    base += static_cast<uint64_t>(iters);
    us = static_cast<double>(ms) * 1e3 / iters / 2;
  }
  b.sync_pes();
  report.row({"8", "thread", fmt_double(us, 3)});
  Ops::free(sig);
  b.finish();
  return 0;
}
