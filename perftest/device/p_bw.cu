// p_bw: bandwidth of single-element puts (p), every thread of -c x -t storing its share of the elements
// of -d type to PE 1 (--bidir: both ways), NVSHMEM's shmem_p_bw shape.
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_bandwidth_defaults(size_t{32} << 20);
  int exit_code = 0;
  if (!b.start(argc, argv, "p_bw", &exit_code)) return exit_code;

  char *source = sym_alloc(b.config.max_size, "p_bw");
  char *target = sym_alloc(b.config.max_size, "p_bw");
  Reporter report(b.config, "p_bw", b.me == 0);
  b.label(report);
  const bool known = with_rma_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto kernel = element_bw_kernel<Ops, T, false>;
    const int ctas = b.ctas_for(kernel, b.config.threads_per_cta, report);
    report.note(std::string(Ops::kName) + ", " + std::to_string(ctas) + " x " +
                std::to_string(b.config.threads_per_cta) + " threads, " + b.config.datatype +
                (b.config.bidir ? ", bidirectional (sum of both directions)" : ", PE 0 -> PE 1"));
    report.header("p bandwidth", {"size(B)", "type", "BW (GB/sec)"});
    bandwidth_rows(b, report, b.config.datatype, [&](size_t bytes, int iters) {
      return b.launch(kernel, ctas, b.config.threads_per_cta, reinterpret_cast<T *>(source),
                      reinterpret_cast<T *>(target), bytes, size_t{0}, 1u, 0u, b.peer, iters, b.grid_counter);
    });
  });
  if (!known && b.me == 0)
    std::fprintf(stderr, "p_bw: -d %s: use int, long, float or double\n", b.config.datatype.c_str());
  Ops::free(target);
  Ops::free(source);
  b.finish();
  return known ? 0 : 2;
}
