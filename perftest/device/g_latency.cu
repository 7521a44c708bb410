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
  int exit_code = 0;
  if (!b.start(argc, argv, "g_latency", &exit_code)) return exit_code;

  const size_t pool_bytes = rotation_pool_bytes(b.config.max_size);
  char *pool = sym_alloc(pool_bytes, "g_latency");
  char *target = sym_alloc(b.config.max_size, "g_latency");
  Reporter report(b.config, "g_latency", b.me == 0);
  b.label(report);
  const bool known = with_rma_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    report.note(std::string(Ops::kName) + ", PE 0 reads PE 1, " + b.config.datatype +
                ", one element per thread, source rotated over " + std::to_string(pool_bytes >> 20) + " MiB");
    report.header("g latency", {"size(B)", "type", "latency (us)"});
    Rotation rotation;
    latency_rows(b, report, b.config.datatype, false, 1.0, [&](size_t bytes, int iters) {
      if (rotation.stride != ((bytes + 255) & ~size_t{255})) rotation = make_rotation(bytes, pool_bytes);
      const size_t n = bytes / sizeof(T) > 0 ? bytes / sizeof(T) : 1;
      const int threads = static_cast<int>(std::min<size_t>(n, static_cast<size_t>(b.config.threads_per_cta)));
      const float ms =
          b.launch(g_latency_kernel<Ops, T>, 1, threads, reinterpret_cast<T *>(target),
                   reinterpret_cast<const T *>(pool), n, rotation.stride, rotation.slots, rotation.next, b.peer, iters);
      rotation.next = (rotation.next + static_cast<unsigned>(iters)) % rotation.slots;
      return ms;
    });
  });
  if (!known && b.me == 0)
    std::fprintf(stderr, "g_latency: -d %s: use int, long, float or double\n", b.config.datatype.c_str());
  Ops::free(target);
  Ops::free(pool);
  b.finish();
  return known ? 0 : 2;
}
