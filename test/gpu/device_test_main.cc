#include <gtest/gtest.h>

#include "device_test_util.h"

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tshmem_device_test::install_environment(&argc, &argv);
  return RUN_ALL_TESTS();
}
