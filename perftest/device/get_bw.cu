// get_bw: getmem_nbi_block bandwidth, PE 0 reading PE 1 (--bidir: both at once, the sum reported),
// NVSHMEM's shmem_get_bw shape. The remote source rotates over kRotateBytes (more than the L2), so no
// iteration reads lines an earlier one (warm-up included) could have left in a cache.
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_bandwidth_defaults(size_t{256} << 20);
  if (!b.start(argc, argv, "get_bw")) return b.exit_code;

  Rotation rotation{rotation_pool_bytes(b.config.max_size)};
  char *pool = b.alloc(rotation.pool_bytes);
  char *target = b.alloc(b.config.max_size);
  auto kernel = rma_bw_kernel<Ops, true>;
  const int ctas = b.ctas_for(kernel, b.config.threads_per_cta);
  b.report().note(b.launch_note(ctas) + b.direction_note("PE 0 reads PE 1") + ", source rotated over " +
                  std::to_string(rotation.pool_bytes >> 20) + " MiB");
  b.report().header("getmem_nbi_block bandwidth", {"size(B)", "scope", "BW (GB/sec)"});
  bandwidth_rows(b, "block", [&](size_t bytes, int iters) {
    return rotation.run(bytes, iters, [&](const Rotation &r) {
      return b.launch(kernel, ctas, b.config.threads_per_cta, target, pool, bytes, r.stride, r.slots, r.next, b.peer,
                      iters, b.grid_counter);
    });
  });
  b.finish();
  return 0;
}
