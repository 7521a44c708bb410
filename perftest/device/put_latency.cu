// put_latency: blocking putmem + quiet from PE 0 to PE 1, per size and scope (-s thread|warp|block|all;
// block uses -t threads), NVSHMEM's shmem_put_latency shape: one launch of `iters` round trips, timed whole.
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

/// Every thread of the group calls putmem and then quiet (quiet completes the calling thread's own puts).
template <class O, Scope S>
__global__ void put_latency_kernel(char *remote, const char *local, size_t bytes, int peer, int iters) {
  for (int i = 0; i < iters; ++i) {
    O::template putmem<S>(remote, local, bytes, peer);
    O::quiet();
    group_sync<S>();
  }
}

template <Scope S>
void scope_rows(DeviceBench &b, char *target, char *source) {
  if (!scope_selected(b.config, S)) return;
  latency_rows(b, scope_name(S), false, 1.0, [&](size_t bytes, int iters) {
    return b.launch(put_latency_kernel<Ops, S>, 1, b.scope_threads(S), target, source, bytes, b.peer, iters);
  });
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_defaults(8, size_t{64} << 10, 500, 50);
  if (!b.start(argc, argv, "put_latency")) return b.exit_code;

  char *source = b.alloc(b.config.max_size);
  char *target = b.alloc(b.config.max_size);
  b.report().note(std::string(Ops::kName) + ", PE 0 -> PE 1, one group of the scope, block = " +
                  std::to_string(b.config.threads_per_cta) + " threads");
  b.report().header("putmem + quiet latency", {"size(B)", "scope", "latency (us)"});
  scope_rows<Scope::thread>(b, target, source);
  scope_rows<Scope::warp>(b, target, source);
  scope_rows<Scope::block>(b, target, source);
  b.finish();
  return 0;
}
