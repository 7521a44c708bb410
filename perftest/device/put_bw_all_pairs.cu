// put_bw_all_pairs: every PE puts to every other PE at the same time (putmem_nbi_block), the traffic of an
// all-to-all over NVLink, at any PE count from 2 (the scaling runs: 2, 4, 8 PEs). The -c blocks of
// each PE split evenly over its n - 1 targets; each sender writes its own region at every receiver; a grid
// barrier after every transfer, as put_bw. Reported: the sum over PEs of (n - 1) x size x iters / time, the
// aggregate egress of the node (per PE: divide by the PE count).
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.any_pe_count = true;
  b.sizes(4096, size_t{64} << 20);
  b.iterations(100, 10);
  b.config.ctas = 132;
  if (!b.start(argc, argv, "put_bw_all_pairs")) return b.exit_code;

  const int targets = b.n_pes - 1;
  char *source = b.alloc(b.config.max_size);
  char *inbox = b.alloc(b.config.max_size * static_cast<size_t>(b.n_pes));
  Reporter &report = b.report();
  auto kernel = all_pairs_put_kernel<Ops>;
  const int requested = b.ctas_for(kernel, b.config.threads_per_cta);  // -c, within co-residency
  // Equal groups per target, at least one block each (the co-resident limit is far above 7 blocks).
  const int ctas = std::max(targets, requested / targets * targets);
  report.note(std::string(Ops::kName) + ", " + std::to_string(b.n_pes) + " PEs, every PE to every other at once, " +
              std::to_string(ctas) + " x " + std::to_string(b.config.threads_per_cta) + " threads (" +
              std::to_string(ctas / targets) + " blocks per target); BW = aggregate egress of all PEs");
  report.header("all-pairs putmem_nbi_block bandwidth", {"size(B)", "PEs", "BW (GB/sec)"});
  for (size_t bytes : b.config.sizes()) {
    // Every PE starts its timed launch together: the transfers overlap as in an all-to-all.
    const float ms = b.timed(true, true, [&](int iters) {
      return b.launch(kernel, ctas, b.config.threads_per_cta, source, inbox, bytes, b.me, b.n_pes, iters,
                      b.grid_counter);
    });
    const double gbps =
        ms > 0 ? static_cast<double>(bytes) * targets * b.config.iters / (static_cast<double>(ms) * 1e-3) / 1e9 : 0;
    report.row({std::to_string(bytes), std::to_string(b.n_pes), fmt_double(DeviceBench::sum_over_pes(gbps), 2)});
  }
  b.finish();
  return 0;
}
