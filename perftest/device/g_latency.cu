// g_latency: single-element gets by PE 0 from PE 1: `size / sizeof(T)` elements, one per thread of one
// block (up to -t threads), NVSHMEM's shmem_g_latency shape. Each iteration reads another remote slot (over
// more than the L2), so no g is served by a cache.
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

template <class O, class T>
__global__ void g_latency_kernel(T *local, const T *remote, size_t n, size_t stride, unsigned slots,
                                 unsigned first_slot, int peer, int iters) {
  T acc = 0;
  for (int i = 0; i < iters; ++i) {
    const T *src =
        reinterpret_cast<const T *>(reinterpret_cast<const char *>(remote) +
                                    static_cast<size_t>((first_slot + static_cast<unsigned>(i)) % slots) * stride);
    for (size_t j = threadIdx.x; j < n; j += blockDim.x) acc += O::g(src + j, peer);
    __syncthreads();
  }
  if (threadIdx.x < n) local[threadIdx.x] = acc;
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_defaults(4, 4096, 1000, 100);
  if (!b.start(argc, argv, "g_latency")) return b.exit_code;

  Rotation rotation{rotation_pool_bytes(b.config.max_size)};
  char *pool = b.alloc(rotation.pool_bytes);
  char *target = b.alloc(b.config.max_size);
  const bool known = with_rma_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    b.report().note(std::string(Ops::kName) + ", PE 0 reads PE 1, " + b.config.datatype +
                    ", one element per thread, source rotated over " + std::to_string(rotation.pool_bytes >> 20) +
                    " MiB");
    b.report().header("g latency", {"size(B)", "type", "latency (us)"});
    latency_rows(b, b.config.datatype, false, 1.0, [&](size_t bytes, int iters) {
      const size_t n = element_count<T>(bytes);
      return rotation.run(bytes, iters, [&](const Rotation &r) {
        return b.launch(g_latency_kernel<Ops, T>, 1, b.element_threads(n), reinterpret_cast<T *>(target),
                        reinterpret_cast<const T *>(pool), n, r.stride, r.slots, r.next, b.peer, iters);
      });
    });
  });
  return b.finish_typed(known, "int, long, float or double");
}
