// Init, finalize and init again in one process (MPI belongs to the test environment, so it outlives every
// tshmem instance); the device state is withdrawn at finalize; PEs that disagree on the backend fail init
// together.
#include <cstdint>
#include <string>

#include "gpu_test_env.h"
#include "tshmem/device/state_types.h"

namespace tshmem_test {
namespace {

TEST_P(GpuLifecycleTest, InitFinalizeInitAgain) {
  ScopedEnv backend("TSHMEM_MEM_BACKEND", GetParam().c_str());
  ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", "32M");
  for (int round = 0; round < 3; ++round) {
    const int rc = tshmem_init();
    ASSERT_TRUE(all_pes(rc == 0)) << "round " << round << ": " << tshmemx_last_error();
    const int me = tshmem_my_pe(), n = tshmem_n_pes();
    EXPECT_STREQ(tshmemx_backend_name(), GetParam().c_str());

    uint64_t *p = static_cast<uint64_t *>(tshmem_calloc(1, 4096));
    EXPECT_TRUE(all_pes(p != nullptr)) << tshmemx_last_error();
    if (p != nullptr) {
      const uint64_t value = 1000u * static_cast<uint64_t>(round) + static_cast<uint64_t>(me);
      EXPECT_EQ(tshmem_putmem(p + me, &value, sizeof(value), (me + 1) % n), 0) << tshmemx_last_error();
      tshmem_barrier_all();
      const int prev = (me + n - 1) % n;
      uint64_t got = 0;
      EXPECT_CUDA_OK(cudaMemcpy(&got, p + prev, sizeof(got), cudaMemcpyDeviceToHost));
      EXPECT_EQ(got, 1000u * static_cast<uint64_t>(round) + static_cast<uint64_t>(prev)) << "round " << round;
    }
    tshmem_free(p);
    tshmem_finalize();

    EXPECT_EQ(tshmem_my_pe(), -1);
    tshmemi_device_state state;
    EXPECT_EQ(tshmemx_device_view(&state), 0);
    EXPECT_EQ(state.flags & TSHMEMI_STATE_INITIALIZED, 0u) << "device state still published after finalize";
    EXPECT_EQ(state.peer_base_global, nullptr);
  }
}

TEST_P(GpuLifecycleTest, PesThatDisagreeOnTheBackendFailTogether) {
  if (world_size() < 2) GTEST_SKIP() << "needs at least 2 PEs";
  const std::string other = GetParam() == "vmm" ? "ipc" : "vmm";
  ScopedEnv backend("TSHMEM_MEM_BACKEND", world_rank() == 1 ? other.c_str() : GetParam().c_str());
  ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", "32M");
  const int rc = tshmem_init();
  const std::string message = tshmemx_last_error();
  EXPECT_TRUE(all_pes(rc == TSHMEM_ERR_CONFIG)) << "rc " << rc << ": " << message;
  EXPECT_NE(message.find("TSHMEM_MEM_BACKEND"), std::string::npos) << message;
  EXPECT_EQ(tshmem_my_pe(), -1);
  if (rc == 0) tshmem_finalize();
}

// A GPU heap reaches other nodes through the off-node proxy: with every PE a "node" of its own
// (TSHMEM_DEBUG_NODE_SIZE=1), the other PEs have no pointer yet host put/get reach them, staged through
// pinned host memory and applied to the target GPU by its proxy.
TEST_P(GpuLifecycleTest, OtherNodesAreReachedThroughTheProxyFromAGpuHeap) {
  if (world_size() < 2) GTEST_SKIP() << "needs at least 2 PEs";
  ScopedEnv backend("TSHMEM_MEM_BACKEND", GetParam().c_str());
  ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", "32M");
  ScopedEnv nodes("TSHMEM_DEBUG_NODE_SIZE", "1");
  ASSERT_TRUE(all_pes(tshmem_init() == 0)) << tshmemx_last_error();
  const int me = tshmem_my_pe(), n = tshmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;
  auto *p = static_cast<uint64_t *>(tshmem_calloc(1, 4096));
  EXPECT_TRUE(all_pes(p != nullptr)) << tshmemx_last_error();
  if (p != nullptr) {
    EXPECT_EQ(tshmem_pe_accessible(me), 1);
    EXPECT_EQ(tshmem_pe_accessible(next), 1) << "the proxy reaches every PE";
    EXPECT_EQ(tshmem_ptr(p, next), nullptr) << "but no pointer does";
    const uint64_t value = 4200 + static_cast<uint64_t>(me);
    EXPECT_EQ(tshmem_putmem(p + 1, &value, sizeof(value), next), 0) << tshmemx_last_error();
    tshmem_barrier_all();
    uint64_t mine = 0, back = 0;
    EXPECT_CUDA_OK(cudaMemcpy(&mine, p + 1, sizeof(mine), cudaMemcpyDeviceToHost));
    EXPECT_EQ(mine, 4200 + static_cast<uint64_t>(prev)) << "PE " << prev << "'s put into this GPU's heap";
    EXPECT_EQ(tshmem_getmem(&back, p + 1, sizeof(back), next), 0) << tshmemx_last_error();
    EXPECT_EQ(back, value) << "get from PE " << next;
    tshmem_barrier_all();
  }
  tshmem_free(p);
  tshmem_finalize();
}

}  // namespace
}  // namespace tshmem_test
