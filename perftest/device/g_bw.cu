// g_bw: bandwidth of single-element gets (g), every thread of -c x -t loading its share of the elements of
// -d type from PE 1 into local memory (--bidir: both ways), NVSHMEM's shmem_g_bw shape. The remote source
// rotates over more than the L2, as in get_bw.
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_bandwidth_defaults(size_t{32} << 20);
  if (!b.start(argc, argv, "g_bw")) return b.exit_code;

  Rotation rotation{rotation_pool_bytes(b.config.max_size)};
  char *pool = b.alloc(rotation.pool_bytes);
  char *target = b.alloc(b.config.max_size);
  const bool known = with_rma_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto kernel = element_bw_kernel<Ops, T, true>;
    const int ctas = b.ctas_for(kernel, b.config.threads_per_cta);
    b.report().note(b.launch_note(ctas) + ", " + b.config.datatype + b.direction_note("PE 0 reads PE 1") +
                    ", source rotated over " + std::to_string(rotation.pool_bytes >> 20) + " MiB");
    b.report().header("g bandwidth", {"size(B)", "type", "BW (GB/sec)"});
    bandwidth_rows(b, b.config.datatype, [&](size_t bytes, int iters) {
      return rotation.run(bytes, iters, [&](const Rotation &r) {
        return b.launch(kernel, ctas, b.config.threads_per_cta, reinterpret_cast<T *>(target),
                        reinterpret_cast<T *>(pool), bytes, r.stride, r.slots, r.next, b.peer, iters, b.grid_counter);
      });
    });
  });
  return b.finish_typed(known, "int, long, float or double");
}
