// The library's half of the cooperative launch (tshmemi_collective_launch_check) judges the numbers the
// caller's CUDA runtime measured; no GPU needed, so every refusal path runs here (on shm, 1 PE): not
// initialised, a CUDA failure, a NULL result pointer, a grid that cannot be co-resident, and a grid that fits.
#include <gtest/gtest.h>

#include <string>

#include "tshmem/tshmemx_launch.h"

namespace {

const char *kCall = "tshmemx_collective_launch";

int check(long long grid, int per_sm, int sms, int cuda_rc = 0) {
  return tshmemi_collective_launch_check(kCall, grid, 128, 0, cuda_rc, "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
                                         "invalid device function", per_sm, sms, 0);
}

TEST(CollectiveLaunchCheck, BeforeInitIsRefused) { EXPECT_EQ(check(1, 1, 1), TSHMEM_ERR_NOT_INITIALIZED); }

class Initialised : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(tshmem_init(), 0) << tshmemx_last_error(); }
  static void TearDownTestSuite() { tshmem_finalize(); }
};

TEST_F(Initialised, GridThatFitsIsAccepted) {
  EXPECT_EQ(check(8, 2, 4), TSHMEM_SUCCESS);
  EXPECT_EQ(check(1, 1, 1), TSHMEM_SUCCESS);
}

TEST_F(Initialised, GridThatCannotBeCoResidentIsRefusedWithTheNumbers) {
  EXPECT_EQ(check(9, 2, 4), TSHMEM_ERR_INVALID_ARG);
  const std::string msg = tshmemx_last_error();
  EXPECT_NE(msg.find("tshmemx_collective_launch: a grid of 9 blocks cannot be co-resident"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at most 8 blocks of 128 threads"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 per SM x 4 SMs"), std::string::npos) << msg;
  EXPECT_EQ(check(1, 0, 132), TSHMEM_ERR_INVALID_ARG) << "a kernel that fits nowhere (0 blocks per SM)";
}

TEST_F(Initialised, CudaFailureIsReportedWithCudasMessage) {
  EXPECT_EQ(check(1, 1, 1, 98), TSHMEM_ERR_CUDA);
  const std::string msg = tshmemx_last_error();
  EXPECT_NE(msg.find("cudaOccupancyMaxActiveBlocksPerMultiprocessor failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid device function"), std::string::npos) << msg;
}

TEST_F(Initialised, NullResultPointerIsRefused) {
  EXPECT_EQ(tshmemi_collective_launch_check("tshmemx_collective_launch_query_gridsize", -1, 128, 0, 0, "", "", 1, 1, 0),
            TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("NULL"), std::string::npos) << tshmemx_last_error();
}

}  // namespace
