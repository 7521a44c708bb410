// p_ping_pong_latency: PE 0 p's a flag to PE 1, which waits for it and p's it back; reported as half the
// round trip (NVSHMEM's shmem_p_ping_pong_latency). Flag values continue across launches: never reset.
#include "flag_ping_pong.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.sizes(4, 4);
  b.iterations(2000, 200);
  return flag_ping_pong_main<int>(b, argc, argv, "p_ping_pong_latency", "int flag", "p ping-pong latency");
}
