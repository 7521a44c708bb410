// Bug (b) regression: a kernel that names PE 99 with 2 PEs (and 1 PE) traps with the exact message and
// writes nothing; so does one that names a PE of another node when there is no off-node proxy (saying why);
// a wait past its timeout traps naming the address, the expected and the found value.
// The kernel runs in a child job (fork + exec of mpirun on device_pe_trap_helper); this parent is not an
// MPI process, checks the exit status and the captured output (stdout+stderr: device printf goes to stdout).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "child_job.h"

namespace {

using tshmem_test::ChildResult;

ChildResult run_helper(int np, const char *mode, const char *bad_pe = "99") {
  return tshmem_test::run_child({TSHMEM_MPI_TEST_LAUNCHER, std::to_string(np), TSHMEM_CHILD_HELPER, mode, bad_pe}, 240);
}

void expect_trapped(const ChildResult &r) {
  ASSERT_FALSE(r.timed_out) << "the child job hung:\n" << r.output;
  if (r.output.find("SKIP: no CUDA device") != std::string::npos) GTEST_SKIP() << "no CUDA device";
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("RESULT: trapped, nothing written"), std::string::npos) << r.output;
}

TEST(DevicePeTrap, Pe99With2PesTrapsWithMessageAndWritesNothing) {
  const ChildResult r = run_helper(2, "pe");
  expect_trapped(r);
  if (IsSkipped()) return;
  EXPECT_NE(r.output.find("tshmem: tshmem_p: PE 99 out of range [0, 2) on PE 0 (block (0,0,0), thread (0,0,0))"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("tshmem: tshmem_p: PE 99"), r.output.rfind("tshmem: tshmem_p: PE 99")) << "printed once";
}

TEST(DevicePeTrap, Pe99With1PeTraps) {
  const ChildResult r = run_helper(1, "pe");
  expect_trapped(r);
  if (IsSkipped()) return;
  EXPECT_NE(r.output.find("tshmem: tshmem_p: PE 99 out of range [0, 1) on PE 0 (block (0,0,0), thread (0,0,0))"),
            std::string::npos)
      << r.output;
}

// A PE of another node is in range but has no slot: TSHMEM_DEBUG_NODE_SIZE=1 makes PE 1 such a PE on one host.
// The helper initialises MPI with MPI_Init (not MPI_THREAD_MULTIPLE), so there is no off-node proxy: the
// device operation traps, and says why.
TEST(DevicePeTrap, PeOfAnotherNodeWithoutTheProxyTrapsSayingWhy) {
  setenv("TSHMEM_DEBUG_NODE_SIZE", "1", 1);  // the child job inherits it
  const ChildResult r = run_helper(2, "pe", "1");
  unsetenv("TSHMEM_DEBUG_NODE_SIZE");
  expect_trapped(r);
  if (IsSkipped()) return;
  EXPECT_NE(
      r.output.find("tshmem: tshmem_p: PE 1 is on another node and not reachable from PE 0: the off-node proxy is not "
                    "running: MPI was initialised without MPI_THREAD_MULTIPLE"),
      std::string::npos)
      << r.output;
}

TEST(DevicePeTrap, WaitTimeoutTrapsNamingTheValues) {
  const ChildResult r = run_helper(2, "timeout");
  expect_trapped(r);
  if (IsSkipped()) return;
  EXPECT_NE(r.output.find("tshmem: tshmem_signal_wait_until: timed out after 200000000 ns on PE 0 waiting at address"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("for value == 12345 (0x3039); found 0 (0x0)"), std::string::npos) << r.output;
}

}  // namespace
