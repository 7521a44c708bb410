// p_ping_pong_latency: PE 0 p's a flag to PE 1, which waits for it and p's it back; reported as half the
// round trip (NVSHMEM's shmem_p_ping_pong_latency). Flag values continue across launches: never reset.
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

template <class O>
__global__ void p_ping_pong_kernel(int *flag, int me, int peer, int base, int iters) {
  for (int i = 0; i < iters; ++i) {
    const int value = base + i + 1;
    if (me == 0) {
      O::p(flag, value, peer);
      O::int_wait_eq(flag, value);
    } else {
      O::int_wait_eq(flag, value);
      O::p(flag, value, peer);
    }
  }
  O::quiet();
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.config.min_size = 4;
  b.config.max_size = 4;
  b.config.iters = 2000;
  b.config.warmup_iters = 200;
  int exit_code = 0;
  if (!b.start(argc, argv, "p_ping_pong_latency", &exit_code)) return exit_code;

  int *flag = sym_alloc<int>(sizeof(int), "p_ping_pong_latency");
  Reporter report(b.config, "p_ping_pong_latency", b.me == 0);
  b.label(report);
  report.note(std::string(Ops::kName) + ", int flag, half round trip");
  report.header("p ping-pong latency", {"size(B)", "scope", "latency (us)"});
  int base = 0;
  b.sync_pes();
  double us = 0;
  for (int pass = 0; pass < 2; ++pass) {  // warm-up, then timed
    const int iters = pass == 0 ? b.config.warmup_iters : b.config.iters;
    if (iters == 0) continue;
    b.sync_pes();
    const float ms = b.launch(p_ping_pong_kernel<Ops>, 1, 1, flag, b.me, b.peer, base, iters);
    base += iters;
    us = static_cast<double>(ms) * 1e3 / iters / 2;
  }
  b.sync_pes();
  report.row({"4", "thread", fmt_double(us, 3)});
  Ops::free(flag);
  b.finish();
  return 0;
}
