// signal_ping_pong_latency: PE 0 sets a signal word on PE 1 (signal_op SET), PE 1 waits for it
// (signal_wait_until EQ) and sets PE 0's; reported as half the round trip. Values never repeat.
#include "flag_ping_pong.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.iterations(2000, 200);
  return flag_ping_pong_main<uint64_t>(b, argc, argv, "signal_ping_pong_latency",
                                       "signal_op(SET) + signal_wait_until(EQ)", "signal ping-pong latency");
}
