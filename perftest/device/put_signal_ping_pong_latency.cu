// put_signal_ping_pong_latency: PE 0 puts `size` bytes with a signal (putmem_signal_nbi, SET) to PE 1,
// which waits for the signal and puts the same back; half the round trip, per size and scope
// (-s thread|warp|block|all; block = -t threads). Signal values continue across launches.
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

/// One thread of the group waits for the signal, the group barrier passes its acquire on to the others.
template <class O, Scope S>
__global__ void put_signal_ping_pong_kernel(char *dest, const char *src, size_t bytes, uint64_t *sig, int me, int peer,
                                            uint64_t base, int iters) {
  for (int i = 0; i < iters; ++i) {
    const uint64_t value = base + static_cast<uint64_t>(i) + 1;
    if (me == 0) {
      O::template putmem_signal_nbi<S>(dest, src, bytes, sig, value, peer);
      if (group_rank<S>() == 0) O::signal_wait_eq(sig, value);
      group_sync<S>();
    } else {
      if (group_rank<S>() == 0) O::signal_wait_eq(sig, value);
      group_sync<S>();
      O::template putmem_signal_nbi<S>(dest, src, bytes, sig, value, peer);
    }
  }
  O::quiet();
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.sizes(8, size_t{64} << 10);
  b.iterations(1000, 100);
  if (!b.start(argc, argv, "put_signal_ping_pong_latency")) return b.exit_code;

  char *data = b.alloc(2 * b.config.max_size);
  uint64_t *sig = b.alloc<uint64_t>(sizeof(uint64_t));
  b.report().note(std::string(Ops::kName) +
                  ", putmem_signal_nbi(SET) + signal_wait_until(EQ), half round trip, block = " +
                  std::to_string(b.config.threads_per_cta) + " threads");
  b.report().header("put_signal ping-pong latency", {"size(B)", "scope", "latency (us)"});
  uint64_t base = 0;
  auto scope_rows = [&](auto scope) {
    constexpr Scope S = decltype(scope)::value;
    if (!scope_selected(b.config, S)) return;
    latency_rows(b, scope_name(S), true, 2.0, [&](size_t bytes, int iters) {
      const float ms = b.launch(put_signal_ping_pong_kernel<Ops, S>, 1, b.scope_threads(S), data,
                                data + b.config.max_size, bytes, sig, b.me, b.peer, base, iters);
      base += static_cast<uint64_t>(iters);
      return ms;
    });
  };
  scope_rows(std::integral_constant<Scope, Scope::thread>{});
  scope_rows(std::integral_constant<Scope, Scope::warp>{});
  scope_rows(std::integral_constant<Scope, Scope::block>{});
  b.finish();
  return 0;
}
