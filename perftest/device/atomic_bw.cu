// atomic_bw: remote atomic throughput per operation, every thread of -c x -t applying the operation to its
// share of the `size / sizeof(T)` elements on PE 1 (--bidir: both ways), NVSHMEM's shmem_atomic_bw shape.
// Reported as bytes of operands per second (NVSHMEM's unit; divide by sizeof(T) for operations).
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

/// Operand 1 everywhere; compare_swap compares with 0 (it swaps once per word, then only compares: the same
/// work for both libraries, which is what a throughput comparison needs).
template <class O, Amo Op, class T>
__global__ void __launch_bounds__(1024)
    atomic_bw_kernel(T *remote, T *sink, size_t n, int peer, int iters, unsigned *counter) {
  const size_t threads = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  T acc = 0;
  for (int i = 0; i < iters; ++i) {
    for (size_t j = tid; j < n; j += threads) acc += O::template amo<Op, T>(remote + j, T(1), T(0), peer);
    grid_sync(counter, static_cast<unsigned>(i) + 1u);
  }
  O::quiet();
  if (acc == static_cast<T>(0x5eed)) sink[tid] = acc;  // keeps the fetched values alive
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.sizes(1024, size_t{1} << 20);
  b.config.step_factor = 4;
  b.iterations(50, 5);
  b.config.ctas = 32;
  b.runs_alone = true;  // PE 0 works, PE 1 only serves: at 1 PE a local row
  if (!b.start(argc, argv, "atomic_bw")) return b.exit_code;

  char *words = b.alloc(b.config.max_size);
  char *sink = b.alloc(static_cast<size_t>(b.config.ctas) * b.config.threads_per_cta * sizeof(long));
  const bool known = with_amo_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    b.report().note(b.launch_note(b.config.ctas) + ", " + b.config.datatype + b.direction_note("PE 0 -> PE 1"));
    b.report().header("atomic bandwidth by operation", {"size(B)", "op", "BW (GB/sec)"});
    for_each_amo([&](auto op) {
      auto kernel = atomic_bw_kernel<Ops, decltype(op)::value, T>;
      const int ctas = b.ctas_for(kernel, b.config.threads_per_cta);
      bandwidth_rows(b, amo_name(decltype(op)::value), [&](size_t bytes, int iters) {
        return b.launch(kernel, ctas, b.config.threads_per_cta, reinterpret_cast<T *>(words),
                        reinterpret_cast<T *>(sink), bytes / sizeof(T), b.peer, iters, b.grid_counter);
      });
    });
  });
  return b.finish_typed(known, "int (int32) or long (64-bit, run as uint64)");
}
