// Init and finalize across real processes: configuration validated collectively (a mismatch on one PE
// fails init on every PE, naming it), re-init, communicators, and nothing left in /dev/shm.
#include <dirent.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <set>
#include <string>
#include <vector>

#include "mpi_test_env.h"
#include "tshmem/tshmem.h"

namespace tshmem_test {
namespace {

std::set<std::string> tshmem_segments_in_dev_shm() {
  std::set<std::string> names;
  if (DIR *dir = opendir("/dev/shm")) {
    while (dirent *entry = readdir(dir))
      if (std::string(entry->d_name).rfind("tshmem.", 0) == 0) names.insert(entry->d_name);
    closedir(dir);
  }
  return names;
}

class Init : public ::testing::Test {
 protected:
  ScopedEnv backend_{"TSHMEM_MEM_BACKEND", "shm"};
  ScopedEnv size_{"TSHMEM_SYMMETRIC_SIZE", "8M"};
  // Segments that were there before this test (another job's, or a crashed run's) are not ours to judge.
  const std::set<std::string> segments_before_ = tshmem_segments_in_dev_shm();

  std::string last_error() const { return tshmemx_last_error(); }
  std::vector<std::string> shm_segments() const {
    std::vector<std::string> added;
    for (const std::string &name : tshmem_segments_in_dev_shm())
      if (segments_before_.count(name) == 0) added.push_back(name);
    return added;
  }
};

TEST_F(Init, CallsBeforeInitFailClearly) {
  EXPECT_EQ(tshmem_my_pe(), -1);
  EXPECT_EQ(tshmem_n_pes(), -1);
  EXPECT_EQ(tshmem_malloc(64), nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_NOT_INITIALIZED);
  EXPECT_NE(last_error().find("tshmem_malloc: tshmem is not initialised"), std::string::npos) << last_error();
  int x = 0;
  EXPECT_EQ(tshmem_putmem(&x, &x, 4, 0), TSHMEM_ERR_NOT_INITIALIZED);
  EXPECT_EQ(tshmem_pe_accessible(0), 0) << "nothing is accessible before init";
  EXPECT_EQ(tshmem_addr_accessible(&x, 0), 0);
  tshmem_finalize();  // harmless
}

TEST_F(Init, InitFinalizeAndInitAgain) {
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(all_pes(tshmem_init() == 0)) << last_error();
    EXPECT_EQ(tshmem_my_pe(), world_rank());
    EXPECT_EQ(tshmem_n_pes(), world_size());
    EXPECT_STREQ(tshmemx_backend_name(), "shm");
    void *p = tshmem_malloc(1024);
    EXPECT_NE(p, nullptr);
    EXPECT_TRUE(shm_segments().empty()) << "the heap has no name in /dev/shm";
    tshmem_free(p);
    tshmem_finalize();
    EXPECT_EQ(tshmem_my_pe(), -1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(shm_segments().empty());
}

TEST_F(Init, SecondInitIsAnError) {
  ASSERT_EQ(tshmem_init(), 0);
  EXPECT_EQ(tshmem_init(), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("already initialised"), std::string::npos);
  tshmem_finalize();
}

TEST_F(Init, DifferentHeapSizeOnOnePeFailsInitEverywhere) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 PEs to differ";
  ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", world_rank() == 1 ? "7M" : "8M");
  EXPECT_EQ(tshmem_init(), TSHMEM_ERR_CONFIG);
  const std::string message = last_error();
  EXPECT_NE(message.find("TSHMEM_SYMMETRIC_SIZE"), std::string::npos) << message;
  EXPECT_NE(message.find("PE 1 = 7340032"), std::string::npos) << message;
  EXPECT_EQ(tshmem_my_pe(), -1) << "nothing stays initialised";
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(shm_segments().empty()) << "a failed init leaves nothing behind";
  // And a matching init afterwards works.
  ScopedEnv same("TSHMEM_SYMMETRIC_SIZE", "8M");
  ASSERT_TRUE(all_pes(tshmem_init() == 0)) << last_error();
  tshmem_finalize();
}

TEST_F(Init, MalformedVariableOnOnePeFailsInitEverywhere) {
  const int bad_pe = world_size() - 1;
  ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", world_rank() == bad_pe ? "12Q" : "8M");
  EXPECT_EQ(tshmem_init(), TSHMEM_ERR_CONFIG);
  const std::string message = last_error();
  EXPECT_NE(message.find("PE " + std::to_string(bad_pe) + ": TSHMEM_SYMMETRIC_SIZE='12Q'"), std::string::npos)
      << message;
  EXPECT_EQ(tshmem_my_pe(), -1);
}

TEST_F(Init, DifferentBackendOnOnePeFailsInitEverywhere) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 PEs to differ";
  // On a host without a GPU, "vmm" fails locally on PE 1; with a GPU the resolved backends differ.
  ScopedEnv backend("TSHMEM_MEM_BACKEND", world_rank() == 1 ? "vmm" : "shm");
  EXPECT_NE(tshmem_init(), 0);
  EXPECT_NE(last_error().find("PE 1"), std::string::npos) << last_error();
  EXPECT_EQ(tshmem_my_pe(), -1);
}

TEST_F(Init, WithAnApplicationCommunicator) {
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() % 2, world_rank(), &half);
  int half_rank = 0, half_size = 0;
  MPI_Comm_rank(half, &half_rank);
  MPI_Comm_size(half, &half_size);
  tshmemx_init_attr_t attr = TSHMEMX_INIT_ATTR_INITIALIZER;
  attr.mpi_comm = &half;
  ASSERT_TRUE(all_pes(tshmemx_init_attr(TSHMEMX_INIT_WITH_MPI_COMM, &attr) == 0)) << last_error();
  EXPECT_EQ(tshmem_my_pe(), half_rank);
  EXPECT_EQ(tshmem_n_pes(), half_size);
  void *p = tshmem_malloc(256);
  EXPECT_NE(p, nullptr);
  tshmem_free(p);
  tshmem_finalize();
  MPI_Comm_free(&half);
}

TEST_F(Init, BadAttributesAreRejectedLocally) {
  tshmemx_init_attr_t attr = TSHMEMX_INIT_ATTR_INITIALIZER;
  EXPECT_EQ(tshmemx_init_attr(TSHMEMX_INIT_WITH_MPI_COMM, nullptr), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmemx_init_attr(TSHMEMX_INIT_WITH_MPI_COMM, &attr), TSHMEM_ERR_INVALID_ARG) << "mpi_comm NULL";
  EXPECT_NE(last_error().find("attr->mpi_comm is NULL"), std::string::npos);
  MPI_Comm world = MPI_COMM_WORLD;
  attr.mpi_comm = &world;
  attr.magic = 0;
  EXPECT_EQ(tshmemx_init_attr(TSHMEMX_INIT_WITH_MPI_COMM, &attr), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("TSHMEMX_INIT_ATTR_INITIALIZER"), std::string::npos);
  EXPECT_EQ(tshmemx_init_attr(0x80, nullptr), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmem_my_pe(), -1);
}

}  // namespace
}  // namespace tshmem_test
