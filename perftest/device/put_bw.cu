// put_bw: putmem_nbi_block bandwidth from PE 0 to PE 1 (--bidir: both ways at once, the sum reported),
// NVSHMEM's shmem_put_bw: -c blocks each put their share of the size, a grid barrier after every transfer.
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_bandwidth_defaults(size_t{256} << 20);
  int exit_code = 0;
  if (!b.start(argc, argv, "put_bw", &exit_code)) return exit_code;

  char *source = sym_alloc(b.config.max_size, "put_bw");
  char *target = sym_alloc(b.config.max_size, "put_bw");
  Reporter report(b.config, "put_bw", b.me == 0);
  b.label(report);
  auto kernel = rma_bw_kernel<Ops, false>;
  const int ctas = b.ctas_for(kernel, b.config.threads_per_cta, report);
  report.note(std::string(Ops::kName) + ", " + std::to_string(ctas) + " x " + std::to_string(b.config.threads_per_cta) +
              " threads" + (b.config.bidir ? ", bidirectional (sum of both directions)" : ", PE 0 -> PE 1"));
  report.header("putmem_nbi_block bandwidth", {"size(B)", "scope", "BW (GB/sec)"});
  bandwidth_rows(b, report, "block", [&](size_t bytes, int iters) {
    return b.launch(kernel, ctas, b.config.threads_per_cta, source, target, bytes, size_t{0}, 1u, 0u, b.peer, iters,
                    b.grid_counter);
  });
  Ops::free(target);
  Ops::free(source);
  b.finish();
  return 0;
}
