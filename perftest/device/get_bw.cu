// get_bw: getmem_nbi_block bandwidth, PE 0 reading PE 1 (--bidir: both at once, the sum reported),
// NVSHMEM's shmem_get_bw shape. The remote source rotates over kRotateBytes (more than the L2), so no
// iteration reads lines an earlier one (warm-up included) could have left in a cache.
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_bandwidth_defaults(size_t{256} << 20);
  int exit_code = 0;
  if (!b.start(argc, argv, "get_bw", &exit_code)) return exit_code;

  const size_t pool_bytes = rotation_pool_bytes(b.config.max_size);
  char *pool = sym_alloc(pool_bytes, "get_bw");
  char *target = sym_alloc(b.config.max_size, "get_bw");
  Reporter report(b.config, "get_bw", b.me == 0);
  b.label(report);
  auto kernel = rma_bw_kernel<Ops, true>;
  const int ctas = b.ctas_for(kernel, b.config.threads_per_cta, report);
  report.note(std::string(Ops::kName) + ", " + std::to_string(ctas) + " x " + std::to_string(b.config.threads_per_cta) +
              " threads" + (b.config.bidir ? ", bidirectional (sum of both directions)" : ", PE 0 reads PE 1") +
              ", source rotated over " + std::to_string(pool_bytes >> 20) + " MiB");
  report.header("getmem_nbi_block bandwidth", {"size(B)", "scope", "BW (GB/sec)"});
  Rotation rotation;
  bandwidth_rows(b, report, "block", [&](size_t bytes, int iters) {
    if (rotation.stride != ((bytes + 255) & ~size_t{255})) rotation = make_rotation(bytes, pool_bytes);
    const float ms = b.launch(kernel, ctas, b.config.threads_per_cta, target, pool, bytes, rotation.stride,
                              rotation.slots, rotation.next, b.peer, iters, b.grid_counter);
    rotation.next = (rotation.next + static_cast<unsigned>(iters)) % rotation.slots;
    return ms;
  });
  Ops::free(target);
  Ops::free(pool);
  b.finish();
  return 0;
}
