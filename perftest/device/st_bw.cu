// st_bw: the link ceiling. Plain 16-byte loads and stores on the peer address that the library's host
// ptr() returns, with no library code in the loop, in put_bw's shape (-c blocks, a grid barrier after every
// transfer): "store" writes registers to the peer, "copy_*" is an ideal put (local load, remote store),
// "load_*" an ideal get (remote load, local store; the remote side rotates over more than the L2).
#include "bw_kernels.cuh"
#include "device_harness.cuh"

using namespace tshmem_perf;

int main(int argc, char **argv) {
  DeviceBench b;
  b.pair_bandwidth_defaults(size_t{256} << 20);
  if (!b.start(argc, argv, "st_bw")) return b.exit_code;

  const size_t pool_bytes = rotation_pool_bytes(b.config.max_size);
  char *local = b.alloc(b.config.max_size);
  char *pool = b.alloc(pool_bytes);
  uint4 *peer_view = static_cast<uint4 *>(Ops::host_ptr(pool, b.peer));
  if (peer_view == nullptr) {
    std::fprintf(stderr, "st_bw: no load/store path to PE %d (ptr() returned NULL)\n", b.peer);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  b.report().note(std::string(Ops::kName) + " ptr(), " + std::to_string(b.config.ctas) + " x " +
                  std::to_string(b.config.threads_per_cta) + " threads" + b.direction_note("PE 0 <-> PE 1 memory"));
  auto run_access = [&](auto kernel, const char *variant, bool rotate) {
    const int ctas = b.ctas_for(kernel, b.config.threads_per_cta);
    Rotation rotation{rotate ? pool_bytes : 0};
    bandwidth_rows(b, variant, [&](size_t bytes, int iters) {
      return rotation.run(bytes, iters, [&](const Rotation &r) {
        return b.launch(kernel, ctas, b.config.threads_per_cta, reinterpret_cast<uint4 *>(local), peer_view, bytes,
                        r.stride, r.slots, r.next, iters, b.grid_counter);
      });
    });
  };
  b.report().header("raw 16-byte access bandwidth through ptr()", {"size(B)", "access", "BW (GB/sec)"});
  // copy_u4 / load_u4 are the loops of tshmem's put / get (4 x 16 B in flight per thread); the others show
  // what a deeper unroll (u8) or streaming source loads (nc: ld.global.nc.L1::no_allocate) would add.
  run_access(raw_bw_kernel<RawAccess::store, 4, false>, "store", false);
  run_access(raw_bw_kernel<RawAccess::copy, 4, false>, "copy_u4", false);
  run_access(raw_bw_kernel<RawAccess::copy, 8, false>, "copy_u8", false);
  run_access(raw_bw_kernel<RawAccess::copy, 8, true>, "copy_u8_nc", false);
  run_access(raw_bw_kernel<RawAccess::load, 4, false>, "load_u4", true);
  run_access(raw_bw_kernel<RawAccess::load, 8, false>, "load_u8", true);
  b.finish();
  return 0;
}
