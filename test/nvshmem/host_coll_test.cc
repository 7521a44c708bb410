// The host-blocking collectives (tshmem_<T>_<op>_reduce, tshmem_<T>_fcollect/alltoall/broadcast and
// tshmem_barrier(team) called on the host) with real processes (np 1, 2, 4), on every backend: on a GPU heap they
// run kernels, on shm the host; PEs whose calls differ get, on every PE, the same error naming the divergent PE
// (nothing hangs). Their results on shm: test/mpi/coll_host_test.cc; on the GPU: tshmem_nvshmem_compat_gpu.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tshmem/tshmem.h"

namespace {

class HostColl : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(tshmem_init(), 0) << tshmemx_last_error(); }
  static void TearDownTestSuite() { tshmem_finalize(); }
};

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }
bool host_memory() { return std::strcmp(tshmemx_backend_name(), "shm") == 0; }

TEST_F(HostColl, BarrierOnTeamsOfEveryPe) {
  EXPECT_EQ(tshmem_barrier(TSHMEM_TEAM_WORLD), 0) << tshmemx_last_error();
  tshmem_team_t all = 99;
  ASSERT_EQ(tshmem_team_split_strided(TSHMEM_TEAM_WORLD, 0, 1, tshmem_n_pes(), nullptr, 0, &all), 0)
      << tshmemx_last_error();
  EXPECT_EQ(tshmem_barrier(all), 0) << tshmemx_last_error();
  tshmem_team_destroy(all);
}

// On a GPU heap the host-blocking forms rendezvous job-wide; in host memory a smaller team meets on its own.
TEST_F(HostColl, BarrierOnASmallerTeamIsRefusedOnAGpuHeapAndRunsInHostMemory) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  if (n < 2) GTEST_SKIP() << "needs a team smaller than the job";
  tshmem_team_t first = 99;
  ASSERT_EQ(tshmem_team_split_strided(TSHMEM_TEAM_WORLD, 0, 1, n - 1, nullptr, 0, &first), 0) << tshmemx_last_error();
  if (me < n - 1 && host_memory()) {
    EXPECT_EQ(tshmem_barrier(first), 0) << tshmemx_last_error();
    tshmem_team_destroy(first);
  } else if (me < n - 1) {
    EXPECT_EQ(tshmem_barrier(first), TSHMEM_ERR_INVALID_ARG);
    EXPECT_TRUE(has(tshmemx_last_error(), "tshmem_barrier: team " + std::to_string(first) + " has " +
                                              std::to_string(n - 1) + " of the job's " + std::to_string(n) + " PEs"))
        << tshmemx_last_error();
    tshmem_team_destroy(first);
  }
  EXPECT_EQ(tshmem_barrier(TSHMEM_TEAM_WORLD), 0) << "nothing was left waiting: " << tshmemx_last_error();
}

TEST_F(HostColl, BarrierWithAnUnknownTeamOnOnePeFailsOnEveryPe) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  if (n < 2) GTEST_SKIP() << "needs two PEs to disagree";
  const tshmem_team_t team = me == n - 1 ? 17 : TSHMEM_TEAM_WORLD;  // 17: no live team
  EXPECT_EQ(tshmem_barrier(team), TSHMEM_ERR_ASYMMETRIC);
  const std::string message = tshmemx_last_error();
  EXPECT_TRUE(has(message, "tshmem_barrier: collective calls differ across PEs")) << message;
  EXPECT_TRUE(has(message, "divergent PE " + std::to_string(n - 1) + ".")) << message;
  EXPECT_TRUE(has(message, "unknown team 17")) << "the odd PE's own reason is shown: " << message;
  EXPECT_EQ(tshmem_barrier(TSHMEM_TEAM_WORLD), 0) << tshmemx_last_error();
}

TEST_F(HostColl, DataCollectivesRunOnEveryBackend) {
  int *dst = static_cast<int *>(tshmem_calloc(4 * static_cast<size_t>(tshmem_n_pes()), sizeof(int)));
  int *src = static_cast<int *>(tshmem_calloc(4 * static_cast<size_t>(tshmem_n_pes()), sizeof(int)));
  ASSERT_NE(dst, nullptr);
  ASSERT_NE(src, nullptr);
  EXPECT_EQ(tshmem_int_sum_reduce(TSHMEM_TEAM_WORLD, dst, src, 4), 0) << tshmemx_last_error();
  EXPECT_EQ(tshmem_double_prod_reduce(TSHMEM_TEAM_WORLD, reinterpret_cast<double *>(dst),
                                      reinterpret_cast<const double *>(src), 2),
            0)
      << tshmemx_last_error();
  EXPECT_EQ(tshmem_uint64_xor_reduce(TSHMEM_TEAM_WORLD, reinterpret_cast<uint64_t *>(dst),
                                     reinterpret_cast<const uint64_t *>(src), 2),
            0)
      << tshmemx_last_error();
  EXPECT_EQ(tshmem_int_fcollect(TSHMEM_TEAM_WORLD, dst, src, 4), 0) << tshmemx_last_error();
  EXPECT_EQ(tshmem_int_alltoall(TSHMEM_TEAM_WORLD, dst, src, 1), 0) << tshmemx_last_error();
  EXPECT_EQ(tshmem_int_broadcast(TSHMEM_TEAM_WORLD, dst, src, 4, 0), 0) << tshmemx_last_error();
  EXPECT_EQ(tshmem_barrier(TSHMEM_TEAM_WORLD), 0) << tshmemx_last_error();
  tshmem_free(src);
  tshmem_free(dst);
}

// The last PE calls differently each time; every PE must get the same error naming it, and the next collective
// must work (nothing left waiting).
TEST_F(HostColl, DivergentCallsAreNamedOnEveryPe) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  if (n < 2) GTEST_SKIP() << "needs two PEs to disagree";
  const bool odd = me == n - 1;
  int *dst = static_cast<int *>(tshmem_calloc(8 * static_cast<size_t>(n), sizeof(int)));
  int *src = static_cast<int *>(tshmem_calloc(8 * static_cast<size_t>(n), sizeof(int)));
  ASSERT_NE(dst, nullptr);
  ASSERT_NE(src, nullptr);
  const std::string divergent = "divergent PE " + std::to_string(n - 1) + ".";
  const auto named = [&](int rc, const char *what, const char *odd_call) {
    EXPECT_EQ(rc, TSHMEM_ERR_ASYMMETRIC) << what;
    const std::string message = tshmemx_last_error();
    EXPECT_TRUE(has(message, "collective calls differ across PEs")) << what << ": " << message;
    EXPECT_TRUE(has(message, divergent)) << what << ": " << message;
    EXPECT_TRUE(has(message, odd_call)) << what << ": " << message;
    EXPECT_EQ(tshmem_barrier(TSHMEM_TEAM_WORLD), 0) << what << ": " << tshmemx_last_error();
  };
  named(tshmem_int_sum_reduce(TSHMEM_TEAM_WORLD, dst, src, odd ? 8 : 4), "count", "count=8");
  named(odd ? tshmem_int_max_reduce(TSHMEM_TEAM_WORLD, dst, src, 4)
            : tshmem_int_sum_reduce(TSHMEM_TEAM_WORLD, dst, src, 4),
        "operator", "tshmem_int32_max_reduce(team=0, count=4)");
  named(odd ? tshmem_uint_sum_reduce(TSHMEM_TEAM_WORLD, reinterpret_cast<unsigned *>(dst),
                                     reinterpret_cast<const unsigned *>(src), 4)
            : tshmem_int_sum_reduce(TSHMEM_TEAM_WORLD, dst, src, 4),
        "type", "tshmem_uint32_sum_reduce(team=0, count=4)");
  named(tshmem_int_sum_reduce(TSHMEM_TEAM_WORLD, odd ? dst + 4 : dst, src, 4), "dst", "with dst at heap offset");
  named(
      odd ? tshmem_int_fcollect(TSHMEM_TEAM_WORLD, dst, src, 4) : tshmem_int_sum_reduce(TSHMEM_TEAM_WORLD, dst, src, 4),
      "collective", "tshmem_fcollectmem(team=0, nbytes=16)");
  named(tshmem_int_broadcast(TSHMEM_TEAM_WORLD, dst, src, 4, odd ? 1 : 0), "root", "root=1");
  named(odd ? tshmem_int_alltoall(TSHMEM_TEAM_WORLD, dst, src, 1) : tshmem_barrier(TSHMEM_TEAM_WORLD),
        "alltoall against barrier", "tshmem_alltoallmem(team=0, nbytes=4)");
  tshmem_free(src);
  tshmem_free(dst);
}

}  // namespace
