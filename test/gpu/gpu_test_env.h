// What every GPU test needs beyond test/common: one skip decision shared by all PEs (so no PE runs into a
// collective that another skipped), a tshmem instance per test on a chosen backend, and CUDA checks.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "mpi_test_env.h"
#include "tshmem/tshmem.h"

namespace tshmem_test {

/// Collective. "" when every PE can drive a GPU of its own (or TSHMEM_ALLOW_SHARED_GPU allows sharing);
/// otherwise the same reason on every PE: no CUDA device on some PE, or more PEs on a node than GPUs.
std::string gpu_skip_reason();

/// Collective. True on every PE when no PE sees a CUDA device (the no-GPU fallback tests).
bool no_pe_has_gpu();

/// A tshmem instance per test on the backend named by the test parameter; skips (on all PEs) without GPUs.
class GpuBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  void TearDown() override;

  int me_ = -1, n_ = 0;
};

/// Same skip decision, but no tshmem instance: the test inits and finalizes itself.
class GpuLifecycleTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
};

/// gtest parameter names: "vmm", "ipc".
std::string backend_name(const ::testing::TestParamInfo<std::string> &info);

}  // namespace tshmem_test

/// The backends every GPU test runs on: INSTANTIATE_TEST_SUITE_P(Backends, Suite, TSHMEM_GPU_BACKENDS, backend_name).
#define TSHMEM_GPU_BACKENDS ::testing::Values(std::string("vmm"), std::string("ipc"))

/// Skips the test on every PE, with the same reason, unless every PE has a GPU of its own.
#define TSHMEM_SKIP_WITHOUT_GPUS()                                            \
  do {                                                                        \
    const std::string tshmem_skip_reason_ = ::tshmem_test::gpu_skip_reason(); \
    if (!tshmem_skip_reason_.empty()) GTEST_SKIP() << tshmem_skip_reason_;    \
  } while (0)

/// EXPECT (not ASSERT: a PE must not leave a test early and skip the others' collectives) a CUDA success.
#define EXPECT_CUDA_OK(call) EXPECT_EQ(cudaSuccess, (call)) << #call << ": " << cudaGetErrorString(cudaGetLastError())
