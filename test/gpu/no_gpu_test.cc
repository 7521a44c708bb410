// Without a GPU (CI, laptops): TSHMEM_MEM_BACKEND=auto falls back to shm, and asking for a GPU backend
// fails on every PE with the same message saying why. Skipped where a GPU is present.
#include <functional>

#include "gpu_test_env.h"

namespace tshmem_test {
namespace {

class NoGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!no_pe_has_gpu()) GTEST_SKIP() << "a PE sees a CUDA device: the no-GPU fallback does not apply";
  }
};

TEST_F(NoGpuTest, AutoFallsBackToShm) {
  ScopedEnv backend("TSHMEM_MEM_BACKEND", "auto");
  ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", "8M");
  const int rc = tshmem_init();
  ASSERT_TRUE(all_pes(rc == 0)) << tshmemx_last_error();
  EXPECT_STREQ(tshmemx_backend_name(), "shm");
  EXPECT_EQ(tshmemx_cuda_device(), -1);
  tshmem_finalize();
}

TEST_F(NoGpuTest, GpuBackendsFailClearlyOnEveryPe) {
  for (const char *name : {"vmm", "ipc"}) {
    ScopedEnv backend("TSHMEM_MEM_BACKEND", name);
    ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", "8M");
    const int rc = tshmem_init();
    const std::string message = tshmemx_last_error();
    EXPECT_TRUE(all_pes(rc == TSHMEM_ERR_CUDA)) << name << ": rc " << rc << ": " << message;
    EXPECT_NE(message.find(std::string("TSHMEM_MEM_BACKEND=") + name), std::string::npos) << message;
    EXPECT_NE(message.find("no CUDA device"), std::string::npos) << message;
    // The same message on every PE.
    const auto hashes = allgather(static_cast<long long>(std::hash<std::string>{}(message)));
    for (long long h : hashes) {
      EXPECT_EQ(h, hashes[0]) << "PEs disagree on the message; here: " << message;
    }
    EXPECT_EQ(tshmem_my_pe(), -1);
    if (rc == 0) tshmem_finalize();
  }
}

}  // namespace
}  // namespace tshmem_test
