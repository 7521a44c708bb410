// p_bw: bandwidth of single-element puts (p), every thread of -c x -t storing its share of the elements
// of -d type to PE 1 (--bidir: both ways), NVSHMEM's shmem_p_bw shape.
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_bandwidth_defaults(size_t{32} << 20);
  if (!b.start(argc, argv, "p_bw")) return b.exit_code;

  char *source = b.alloc(b.config.max_size);
  char *target = b.alloc(b.config.max_size);
  const bool known = with_rma_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto kernel = element_bw_kernel<Ops, T, false>;
    const int ctas = b.ctas_for(kernel, b.config.threads_per_cta);
    b.report().note(b.launch_note(ctas) + ", " + b.config.datatype + b.direction_note("PE 0 -> PE 1"));
    b.report().header("p bandwidth", {"size(B)", "type", "BW (GB/sec)"});
    bandwidth_rows(b, b.config.datatype, [&](size_t bytes, int iters) {
      return b.launch(kernel, ctas, b.config.threads_per_cta, reinterpret_cast<T *>(source),
                      reinterpret_cast<T *>(target), bytes, size_t{0}, 1u, 0u, b.peer, iters, b.grid_counter);
    });
  });
  return b.finish_typed(known, "int, long, float or double");
}
