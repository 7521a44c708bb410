// g_bw: bandwidth of single-element gets (g), every thread of -c x -t loading its share of the elements of
// -d type from PE 1 into local memory (--bidir: both ways), NVSHMEM's shmem_g_bw shape. The remote source
// rotates over more than the L2, as in get_bw.
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_bandwidth_defaults(size_t{32} << 20);
  int exit_code = 0;
  if (!b.start(argc, argv, "g_bw", &exit_code)) return exit_code;

  const size_t pool_bytes = rotation_pool_bytes(b.config.max_size);
  char *pool = sym_alloc(pool_bytes, "g_bw");
  char *target = sym_alloc(b.config.max_size, "g_bw");
  Reporter report(b.config, "g_bw", b.me == 0);
  b.label(report);
  const bool known = with_rma_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto kernel = element_bw_kernel<Ops, T, true>;
    const int ctas = b.ctas_for(kernel, b.config.threads_per_cta, report);
    report.note(std::string(Ops::kName) + ", " + std::to_string(ctas) + " x " +
                std::to_string(b.config.threads_per_cta) + " threads, " + b.config.datatype +
                (b.config.bidir ? ", bidirectional (sum of both directions)" : ", PE 0 reads PE 1") +
                ", source rotated over " + std::to_string(pool_bytes >> 20) + " MiB");
    report.header("g bandwidth", {"size(B)", "type", "BW (GB/sec)"});
    Rotation rotation;
    bandwidth_rows(b, report, b.config.datatype, [&](size_t bytes, int iters) {
      if (rotation.stride != ((bytes + 255) & ~size_t{255})) rotation = make_rotation(bytes, pool_bytes);
      const float ms =
          b.launch(kernel, ctas, b.config.threads_per_cta, reinterpret_cast<T *>(target), reinterpret_cast<T *>(pool),
                   bytes, rotation.stride, rotation.slots, rotation.next, b.peer, iters, b.grid_counter);
      rotation.next = (rotation.next + static_cast<unsigned>(iters)) % rotation.slots;
      return ms;
    });
  });
  if (!known && b.me == 0)
    std::fprintf(stderr, "g_bw: -d %s: use int, long, float or double\n", b.config.datatype.c_str());
  Ops::free(target);
  Ops::free(pool);
  b.finish();
  return known ? 0 : 2;
}
