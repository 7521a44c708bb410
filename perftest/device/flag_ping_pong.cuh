// A ping-pong of one flag word between PE 0 and PE 1, for the benchmarks that differ only in how the word is
// sent and waited for (p + wait_until, signal_op + signal_wait_until): PE 0 sends a value to PE 1 and waits
// for it to come back, PE 1 waits for it and sends it back. Values continue across launches (never reset),
// so no launch can see an earlier one's value. Reported: half the round trip.
#pragma once

#include <type_traits>

#include "device_harness.cuh"

namespace tshmem_perf {

/// How a flag of type W travels: an int is p'd there and waited for with wait_until EQ (quiet at the end of
/// the kernel); a 64-bit word is a signal: signal_op SET there, signal_wait_until EQ here.
template <class W>
PERF_DEVICE void send_flag(W *flag, W value, int pe) {
  if constexpr (std::is_same_v<W, int>)
    Ops::p(flag, value, pe);
  else
    Ops::signal_set(flag, value, pe);
}
template <class W>
PERF_DEVICE void wait_flag(W *flag, W value) {
  if constexpr (std::is_same_v<W, int>)
    Ops::int_wait_eq(flag, value);
  else
    Ops::signal_wait_eq(flag, value);
}

template <class W>
__global__ void flag_ping_pong_kernel(W *flag, int me, int peer, W base, int iters) {
  for (int i = 0; i < iters; ++i) {
    const W value = base + static_cast<W>(i) + 1;
    if (me == 0) {
      send_flag(flag, value, peer);
      wait_flag(flag, value);
    } else {
      wait_flag(flag, value);
      send_flag(flag, value, peer);
    }
  }
  if constexpr (std::is_same_v<W, int>) Ops::quiet();
}

/// main() of a ping-pong of a flag of type W, with the defaults in `b`: one row (size: the flag's bytes,
/// thread scope), a table titled `title`, `what` describing the flag in the note.
template <class W>
int flag_ping_pong_main(DeviceBench &b, int argc, char **argv, const char *name, const char *what, const char *title) {
  if (!b.start(argc, argv, name)) return b.exit_code;
  W *flag = b.alloc<W>(sizeof(W));
  b.report().note(std::string(Ops::kName) + ", " + what + ", half round trip");
  b.report().header(title, {"size(B)", "scope", "latency (us)"});
  W base = 0;
  const float ms = b.timed(true, true, [&](int iters) {
    const float launch_ms = b.launch(flag_ping_pong_kernel<W>, 1, 1, flag, b.me, b.peer, base, iters);
    base += static_cast<W>(iters);
    return launch_ms;
  });
  b.report().row(
      {std::to_string(sizeof(W)), "thread", fmt_double(static_cast<double>(ms) * 1e3 / b.config.iters / 2, 3)});
  b.finish();
  return 0;
}

}  // namespace tshmem_perf
