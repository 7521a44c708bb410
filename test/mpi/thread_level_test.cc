// The application initialised MPI without MPI_THREAD_MULTIPLE, which the mpi transport needs (its proxy thread calls
// MPI). TSHMEM_REMOTE_TRANSPORT=mpi then fails init on every PE naming the thread level. With auto, a build with UCX
// reaches other nodes through it (UCX needs no MPI thread level); without UCX, tshmem_init still succeeds for a job
// that spans nodes (TSHMEM_DEBUG_NODE_SIZE=1), PEs of the same node stay reachable, and every call to a PE of
// another node fails with TSHMEM_ERR_UNREACHABLE_PE naming the thread level as the reason.
#include <mpi.h>

#include <cstdlib>
#include <string>

#include "tshmem/device/proxy_types.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

#include <gtest/gtest.h>

namespace {

TEST(ThreadLevel, WithoutThreadMultipleOtherNodesAreUnreachableWithTheReason) {
  int n = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (n < 2) GTEST_SKIP() << "needs 2 PEs to make 2 nodes";
  setenv("TSHMEM_MEM_BACKEND", "shm", 1);
  setenv("TSHMEM_SYMMETRIC_SIZE", "8M", 1);
  setenv("TSHMEM_DEBUG_NODE_SIZE", "1", 1);
  const char *named = std::getenv("TSHMEM_REMOTE_TRANSPORT");
  if (named != nullptr && std::string(named) == "mpi") {
    EXPECT_EQ(tshmem_init(), TSHMEM_ERR_CONFIG) << "the transport named cannot start";
    const std::string message = tshmemx_last_error();
    EXPECT_NE(message.find("TSHMEM_REMOTE_TRANSPORT=mpi cannot reach other nodes"), std::string::npos) << message;
    EXPECT_NE(message.find("needs MPI_THREAD_MULTIPLE"), std::string::npos) << message;
    EXPECT_EQ(tshmem_my_pe(), -1);
    return;
  }
  ASSERT_EQ(tshmem_init(), 0) << "a job that never talks across nodes must start: " << tshmemx_last_error();
  auto *p = static_cast<long long *>(tshmem_calloc(1, sizeof(long long)));
  ASSERT_NE(p, nullptr);
  const int other = (me + 1) % n;
  if (TSHMEM_TEST_UCX_BUILT) {  // auto: UCX carries the off-node path, whatever MPI's thread level
    const long long value = 9;
    EXPECT_EQ(tshmem_putmem(p, &value, sizeof(value), other), 0) << tshmemx_last_error();
    tshmem_barrier_all();
    EXPECT_EQ(*p, 9);
    tshmem_barrier_all();
    tshmem_free(p);
    tshmem_finalize();
    return;
  }
  EXPECT_EQ(tshmemi_proxy_device_channel(), nullptr) << "no proxy without MPI_THREAD_MULTIPLE";
  EXPECT_EQ(tshmem_pe_accessible(me), 1);
  EXPECT_EQ(tshmem_pe_accessible(other), 0);
  const long long value = 5;
  EXPECT_EQ(tshmem_putmem(p, &value, sizeof(value), me), 0) << "the own PE is always reachable";
  EXPECT_EQ(*p, 5);
  for (int get = 0; get < 2; ++get) {
    long long local = 0;
    const int rc =
        get ? tshmem_getmem(&local, p, sizeof(local), other) : tshmem_putmem(p, &value, sizeof(value), other);
    EXPECT_EQ(rc, TSHMEM_ERR_UNREACHABLE_PE);
    const std::string message = tshmemx_last_error();
    EXPECT_NE(message.find("MPI_THREAD_FUNNELED"), std::string::npos) << message;
    EXPECT_NE(message.find("needs MPI_THREAD_MULTIPLE"), std::string::npos) << message;
  }
  tshmem_barrier_all();
  tshmem_free(p);
  tshmem_finalize();
}

// The collectives across nodes need the same proxy: on a GPU heap, an on-stream collective on the world team
// fails with the reason; the node team still works without it. Skips where no PE can map a GPU heap.
TEST(ThreadLevel, WithoutThreadMultipleCollectivesAcrossNodesNameTheReason) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 2) GTEST_SKIP() << "needs 2 PEs to make 2 nodes";
  setenv("TSHMEM_MEM_BACKEND", "vmm", 1);
  setenv("TSHMEM_SYMMETRIC_SIZE", "64M", 1);
  setenv("TSHMEM_DEBUG_NODE_SIZE", "1", 1);
  setenv("TSHMEM_ALLOW_SHARED_GPU", "1", 1);
  const char *named = std::getenv("TSHMEM_REMOTE_TRANSPORT");
  if (TSHMEM_TEST_UCX_BUILT || (named != nullptr && std::string(named) == "mpi"))
    GTEST_SKIP() << "other nodes are reached through UCX here, or init refuses mpi (the case above)";
  if (tshmem_init() != 0) GTEST_SKIP() << "no GPU heap here: " << tshmemx_last_error();
  void *buf = tshmem_malloc(4096);
  ASSERT_NE(buf, nullptr);
  EXPECT_EQ(tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, buf, buf, 4, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, nullptr),
            TSHMEM_ERR_UNREACHABLE_PE);
  std::string message = tshmemx_last_error();
  EXPECT_NE(message.find("tshmemx_allreduce_on_stream: team 0 spans nodes"), std::string::npos) << message;
  EXPECT_NE(message.find("needs MPI_THREAD_MULTIPLE"), std::string::npos) << message;
  EXPECT_EQ(tshmemx_barrier_all_on_stream(nullptr), TSHMEM_ERR_UNREACHABLE_PE);
  message = tshmemx_last_error();
  EXPECT_NE(message.find("needs MPI_THREAD_MULTIPLE"), std::string::npos) << message;
  EXPECT_EQ(tshmemx_barrier_on_stream(TSHMEMX_TEAM_NODE, nullptr), 0) << tshmemx_last_error();
  tshmem_barrier_all();
  tshmem_free(buf);
  tshmem_finalize();
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = provided == MPI_THREAD_FUNNELED ? RUN_ALL_TESTS() : 0;
  if (provided != MPI_THREAD_FUNNELED && me == 0)
    std::printf("MPI gave thread level %d for FUNNELED: skipped\n", provided);
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
