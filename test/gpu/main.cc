#include <gtest/gtest.h>

#include "gpu_test_env.h"

namespace tshmem_test {
// Every TEST_P of these fixtures, in every file of this binary, runs once per GPU backend.
INSTANTIATE_TEST_SUITE_P(Backends, GpuBackendTest, TSHMEM_GPU_BACKENDS, backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, GpuLifecycleTest, TSHMEM_GPU_BACKENDS, backend_name);
}  // namespace tshmem_test

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tshmem_test::install_mpi_environment(&argc, &argv);
  return RUN_ALL_TESTS();
}
