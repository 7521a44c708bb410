// p_latency: single-element puts + quiet from PE 0 to PE 1: `size / sizeof(T)` elements, one per thread of
// one block (up to -t threads, then several per thread), quiet by every thread, NVSHMEM's shmem_p_latency
// shape. Also built with the device PE check compiled out (tshmem_p_latency_nocheck): the check's cost.
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

template <class O, class T>
__global__ void p_latency_kernel(T *remote, const T *local, size_t n, int peer, int iters) {
  for (int i = 0; i < iters; ++i) {
    for (size_t j = threadIdx.x; j < n; j += blockDim.x) O::p(remote + j, local[j], peer);
    O::quiet();
    __syncthreads();
  }
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_defaults(4, 4096, 1000, 100);
  if (!b.start(argc, argv, "p_latency")) return b.exit_code;

  char *source = b.alloc(b.config.max_size);
  char *target = b.alloc(b.config.max_size);
  const bool known = with_rma_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    b.report().note(std::string(Ops::kName) + ", PE 0 -> PE 1, " + b.config.datatype + ", one element per thread");
    b.report().header("p + quiet latency", {"size(B)", "type", "latency (us)"});
    latency_rows(b, b.config.datatype, false, 1.0, [&](size_t bytes, int iters) {
      const size_t n = element_count<T>(bytes);
      return b.launch(p_latency_kernel<Ops, T>, 1, b.element_threads(n), reinterpret_cast<T *>(target),
                      reinterpret_cast<const T *>(source), n, b.peer, iters);
    });
  });
  return b.finish_typed(known, "int, long, float or double");
}
