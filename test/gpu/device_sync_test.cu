// Device barrier_all / sync_all order writes: in every round each PE writes the round number into its slot
// on every PE, synchronises, and must then read the round number in every slot. Thread, warp, block and
// whole-grid variants, many rounds in one kernel and across kernels (the epochs never reset).
#include "device_test_util.h"
#include "tshmem/device/tshmem_device.cuh"

namespace {

constexpr int kRounds = 100;
constexpr int kRoundsAcrossNodes = 10;  // see job_spans_nodes()

/// variant 0 thread, 1 warp, 2 block (barrier_all), 3 block (sync_all after quiet), 4 grid.
__global__ void rounds(int variant, int round_count, int *slots, int *errors) {
  const int n = tshmem::n_pes(), me = tshmem::my_pe();
  const bool grid = variant == 4;
  const bool active = grid || blockIdx.x == 0;
  if (!active) return;
  if (variant == 0 && threadIdx.x != 0) return;
  if (variant == 1 && threadIdx.x >= 32) return;
  const unsigned rank = variant == 0 ? 0 : variant == 1 ? threadIdx.x : blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned size = variant == 0 ? 1 : variant == 1 ? 32 : (grid ? gridDim.x : 1) * blockDim.x;
  for (int r = 1; r <= round_count; ++r) {
    for (int pe = static_cast<int>(rank); pe < n; pe += static_cast<int>(size)) tshmem::p(slots + me, r, pe);
    switch (variant) {
      case 0: tshmem::barrier_all<tshmem::thread_scope>(); break;
      case 1: tshmem::barrier_all<tshmem::warp_scope>(); break;
      case 2: tshmem::barrier_all<tshmem::block_scope>(); break;
      case 3:
        tshmem::quiet();
        tshmem::sync_all<tshmem::block_scope>();
        break;
      default: tshmem::barrier_all_grid(); break;
    }
    for (int pe = static_cast<int>(rank); pe < n; pe += static_cast<int>(size))
      if (*static_cast<volatile int *>(slots + pe) < r) atomicAdd(errors, 1);
    // Nobody may write round r+1 before everyone checked round r.
    switch (variant) {
      case 0: tshmem::sync_all<tshmem::thread_scope>(); break;
      case 1: tshmem::sync_all<tshmem::warp_scope>(); break;
      case 2:
      case 3: tshmem::sync_all<tshmem::block_scope>(); break;
      default: tshmem::sync_all_grid(); break;
    }
  }
}

class DeviceBarrier : public ::testing::TestWithParam<int> {};

TEST_P(DeviceBarrier, OrdersWrites) {
  TSHMEM_REQUIRE_GPU();
  tshmem_device_test::SymBuffer slots(4 * 1024), errors(4);
  const int round_count = tshmem_device_test::job_spans_nodes() ? kRoundsAcrossNodes : kRounds;
  for (int launch = 0; launch < 3; ++launch) {  // epochs carry across kernels
    TSHMEM_CUDA_EXPECT(cudaMemset(slots.get(), 0, 4 * 1024));
    tshmem_barrier_all();
    rounds<<<GetParam() == 4 ? 4 : 1, 128>>>(GetParam(), round_count, slots.get<int>(), errors.get<int>());
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    tshmem_barrier_all();
  }
  int host = -1;
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&host, errors.get(), 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(host, 0) << "a slot was read before its write was visible";
}

std::string barrier_case_name(const ::testing::TestParamInfo<int> &i) {
  const char *names[] = {"Thread", "Warp", "Block", "BlockSyncAll", "Grid"};
  return std::string(names[i.param]);
}
INSTANTIATE_TEST_SUITE_P(Variants, DeviceBarrier, ::testing::Range(0, 5), barrier_case_name);

}  // namespace
