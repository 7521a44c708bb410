#include <gtest/gtest.h>

#include "mpi_test_env.h"

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tshmem_test::install_mpi_environment(&argc, &argv);
  return RUN_ALL_TESTS();
}
