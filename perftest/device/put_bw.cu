// put_bw: putmem_nbi_block bandwidth from PE 0 to PE 1 (--bidir: both ways at once, the sum reported),
// NVSHMEM's shmem_put_bw: -c blocks each put their share of the size, a grid barrier after every transfer.
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_bandwidth_defaults(size_t{256} << 20);
  if (!b.start(argc, argv, "put_bw")) return b.exit_code;

  char *source = b.alloc(b.config.max_size);
  char *target = b.alloc(b.config.max_size);
  auto kernel = rma_bw_kernel<Ops, false>;
  const int ctas = b.ctas_for(kernel, b.config.threads_per_cta);
  b.report().note(b.launch_note(ctas) + b.direction_note("PE 0 -> PE 1"));
  b.report().header("putmem_nbi_block bandwidth", {"size(B)", "scope", "BW (GB/sec)"});
  bandwidth_rows(b, "block", [&](size_t bytes, int iters) {
    return b.launch(kernel, ctas, b.config.threads_per_cta, source, target, bytes, size_t{0}, 1u, 0u, b.peer, iters,
                    b.grid_counter);
  });
  b.finish();
  return 0;
}
