// get_latency: blocking getmem by PE 0 from PE 1, per size and scope (-s thread|warp|block|all), NVSHMEM's
// shmem_get_latency shape. Every iteration reads a different remote slot (over more than the L2), so a get
// never finds its lines in a cache.
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

template <class O, Scope S>
__global__ void get_latency_kernel(char *local, const char *remote, size_t bytes, size_t stride, unsigned slots,
                                   unsigned first_slot, int peer, int iters) {
  for (int i = 0; i < iters; ++i) {
    const char *src = remote + static_cast<size_t>((first_slot + static_cast<unsigned>(i)) % slots) * stride;
    O::template getmem<S>(local, src, bytes, peer);
  }
}

template <Scope S>
void scope_rows(DeviceBench &b, char *target, char *pool, size_t pool_bytes) {
  if (!scope_selected(b.config, S)) return;
  Rotation rotation{pool_bytes};
  latency_rows(b, scope_name(S), false, 1.0, [&](size_t bytes, int iters) {
    return rotation.run(bytes, iters, [&](const Rotation &r) {
      return b.launch(get_latency_kernel<Ops, S>, 1, b.scope_threads(S), target, pool, bytes, r.stride, r.slots, r.next,
                      b.peer, iters);
    });
  });
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_defaults(8, size_t{64} << 10, 500, 50);
  if (!b.start(argc, argv, "get_latency")) return b.exit_code;

  const size_t pool_bytes = rotation_pool_bytes(b.config.max_size);
  char *pool = b.alloc(pool_bytes);
  char *target = b.alloc(b.config.max_size);
  b.report().note(std::string(Ops::kName) +
                  ", PE 0 reads PE 1, one group of the scope, block = " + std::to_string(b.config.threads_per_cta) +
                  " threads, source rotated over " + std::to_string(pool_bytes >> 20) + " MiB");
  b.report().header("getmem latency", {"size(B)", "scope", "latency (us)"});
  scope_rows<Scope::thread>(b, target, pool, pool_bytes);
  scope_rows<Scope::warp>(b, target, pool, pool_bytes);
  scope_rows<Scope::block>(b, target, pool, pool_bytes);
  b.finish();
  return 0;
}
