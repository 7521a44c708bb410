// Device waits on the off-node path end within their bound when the peer never answers (a PE stopped with
// SIGSTOP: its proxy thread too): quiet, g, get, a fetching atomic and a full channel (back-pressure) trap, named
// by the message the proxy wrote when it gave up (the PE, the target and what was awaited); the device barrier,
// signal_wait_until and a collective with TSHMEM_WAIT_TIMEOUT_MS's; after a host wait has stopped the path, a
// kernel's quiet gives up at once saying so.
// One child job per case (offnode_bound_helper.cu). Skips without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "child_job.h"

namespace {

constexpr int kBoundMs = 2000;

void expect_trap(const std::string &which, const std::vector<std::string> &messages,
                 const std::vector<std::string> &extra_env = {}) {
  std::vector<std::string> env = {"TSHMEM_DEBUG_NODE_SIZE=1",
                                  "TSHMEM_ALLOW_SHARED_GPU=1",
                                  "TSHMEM_DISABLE_NVLS=1",
                                  "TSHMEM_SYMMETRIC_SIZE=64M",
                                  "TSHMEM_PROXY_TIMEOUT_MS=" + std::to_string(kBoundMs),
                                  "TSHMEM_WAIT_TIMEOUT_MS=" + std::to_string(kBoundMs)};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  const tshmem_test::ChildResult r =
      tshmem_test::run_child({TSHMEM_MPI_TEST_LAUNCHER, "2", TSHMEM_CHILD_HELPER, which}, 180, env);
  if (r.output.find("SKIP: no CUDA device") != std::string::npos) GTEST_SKIP() << "no CUDA device";
  ASSERT_FALSE(r.timed_out) << "the job hung:\n" << r.output;
  EXPECT_NE(r.output.find("RESULT " + which + ": PASS"), std::string::npos) << r.output;
  for (const std::string &m : messages) EXPECT_NE(r.output.find(m), std::string::npos) << m << "\n" << r.output;
  EXPECT_NE(r.output.find("PE 1 done"), std::string::npos) << r.output;
}

const std::string kGivesUp = "tshmem: PE 0: a kernel's wait for the off-node proxy gives up: ";

TEST(OffNodeBoundDevice, Quiet) {
  expect_trap("quiet", {kGivesUp + "for a kernel, the acknowledgement of a quiet from PE 1 has not come for 2000 ms"});
}
// A g, a fetching atomic and a full channel trap without a line of their own (a printf in those waits would cost
// every kernel registers): the proxy's line, printed when it stopped the path, names the wait.
const std::string kStopped = "off-node proxy stopped: ";

TEST(OffNodeBoundDevice, G) {
  expect_trap("g", {kStopped + "for a kernel, the value of a g from PE 1 has not come for 2000 ms"});
}
TEST(OffNodeBoundDevice, Get) { expect_trap("get", {kGivesUp + "for a kernel, the data of a get from PE 1"}); }
TEST(OffNodeBoundDevice, FetchingAtomic) {
  expect_trap("fetch-amo", {kStopped + "for a kernel, the old value of a fetching atomic from PE 1"});
}
TEST(OffNodeBoundDevice, FullChannel) {
  expect_trap("full-channel", {kStopped + "PE 1 has not handled PE 0's messages for 2000 ms"}, {"TSHMEM_PROXY_RING=2"});
}
// A kernel whose put staging is full (its proxy cannot send: PE 1 handles nothing) waits for room, and that wait
// ends at the bound with its own line naming the staging, then the proxy's reason.
TEST(OffNodeBoundDevice, FullStaging) {
  expect_trap("full-staging",
              {"tshmem: PE 0: a kernel's wait for room in its put staging (262144 bytes, held by staged puts its "
               "off-node proxy has not sent yet) gives up: ",
               kStopped + "PE 1 has not handled PE 0's messages for 2000 ms"},
              {"TSHMEM_PROXY_STAGE_MAX=4K"});
}
TEST(OffNodeBoundDevice, Barrier) {
  expect_trap("barrier", {"tshmem: tshmem_barrier_all", "timed out after 2000000000 ns on PE 0"});
}
TEST(OffNodeBoundDevice, SignalWait) {
  expect_trap("signal-wait", {"tshmem: tshmem_signal_wait_until: timed out after 2000000000 ns on PE 0"});
}
TEST(OffNodeBoundDevice, Collective) { expect_trap("collective", {"tshmem: "}); }
TEST(OffNodeBoundDevice, AfterTheHostGaveUpAKernelGivesUpAtOnce) {
  expect_trap("after-stop", {"host getmem: TSHMEM_ERR_TIMEOUT", kGivesUp, "the off-node path"});
}

}  // namespace
