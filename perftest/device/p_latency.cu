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
  int exit_code = 0;
  if (!b.start(argc, argv, "p_latency", &exit_code)) return exit_code;

  char *source = sym_alloc(b.config.max_size, "p_latency");
  char *target = sym_alloc(b.config.max_size, "p_latency");
  Reporter report(b.config, "p_latency", b.me == 0);
  b.label(report);
  const bool known = with_rma_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    report.note(std::string(Ops::kName) + ", PE 0 -> PE 1, " + b.config.datatype + ", one element per thread");
    report.header("p + quiet latency", {"size(B)", "type", "latency (us)"});
    latency_rows(b, report, b.config.datatype, false, 1.0, [&](size_t bytes, int iters) {
      const size_t n = bytes / sizeof(T) > 0 ? bytes / sizeof(T) : 1;
      const int threads = static_cast<int>(std::min<size_t>(n, static_cast<size_t>(b.config.threads_per_cta)));
      return b.launch(p_latency_kernel<Ops, T>, 1, threads, reinterpret_cast<T *>(target),
                      reinterpret_cast<const T *>(source), n, b.peer, iters);
    });
  });
  if (!known && b.me == 0)
    std::fprintf(stderr, "p_latency: -d %s: use int, long, float or double\n", b.config.datatype.c_str());
  Ops::free(target);
  Ops::free(source);
  b.finish();
  return known ? 0 : 2;
}
