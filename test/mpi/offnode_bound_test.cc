// Host calls that wait on the off-node proxy end within TSHMEM_PROXY_TIMEOUT_MS when the peer never answers (a
// PE stopped with SIGSTOP: its proxy thread too), with an error naming the call and the bound; the path then
// stops (later calls fail at once) and finalize still tears down and finalises MPI. One child job per case
// (offnode_bound_helper.cc), each under the shm backend with two "nodes" of one PE.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "child_job.h"

namespace {

constexpr int kBoundMs = 1500;

std::string expect_case(const std::string &which, const std::vector<std::string> &extra_env = {}) {
  std::vector<std::string> env = {"TSHMEM_MEM_BACKEND=shm", "TSHMEM_DEBUG_NODE_SIZE=1",
                                  "TSHMEM_DISABLE_NVLS=1",  "TSHMEM_SYMMETRIC_SIZE=64M",
                                  "TSHMEM_DEBUG=warn",      "TSHMEM_PROXY_TIMEOUT_MS=" + std::to_string(kBoundMs)};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  const tshmem_test::ChildResult r =
      tshmem_test::run_child({TSHMEM_MPI_TEST_LAUNCHER, "2", TSHMEM_CHILD_HELPER, which}, 120, env);
  EXPECT_FALSE(r.timed_out) << "the job hung:\n" << r.output;
  EXPECT_NE(r.output.find("RESULT " + which + ": PASS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PE 0 finalized"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PE 1 finalized"), std::string::npos) << r.output;
  EXPECT_EQ(r.status, 0) << r.output;
  return r.output;
}

// Over UCX a put completes at its origin without its target (UCX takes the data): nothing waits for the stopped PE
// until a quiet, whose bound the quiet case checks.
bool puts_complete_locally() {
  const char *transport = std::getenv("TSHMEM_REMOTE_TRANSPORT");
  const char *staged = std::getenv("TSHMEM_DEBUG_UCX_STAGED");  // UCX carrying the staged protocol, as MPI does
  return transport != nullptr && std::string(transport) == "ucx" && (staged == nullptr || std::string(staged) != "1");
}

TEST(OffNodeBound, PutmemToAStoppedPeEndsWhenCreditsAndTheRingRunOut) {
  if (puts_complete_locally()) GTEST_SKIP() << "ucx: a put needs nothing of its target";
  expect_case("putmem");
}
// Large puts from the host: each call's own wait (for the proxy to take or send it) has the bound.
TEST(OffNodeBound, LargePutmemsToAStoppedPeEnd) { expect_case("putmem-large"); }
// A kernel's large puts (the device channel), with no host call waiting: the proxy itself must stop the path, which
// is what ends a kernel's waits. The MPI transport sends each by rendezvous, so the sends to a stopped PE never
// complete and hold every send buffer before the credits are counted out: the oldest send's age is the bound.
// Over UCX the proxy hands the puts to UCX, which holds them: the channel never fills and nothing waits until a
// quiet, whose bound QuietAfterDeviceChannelPsToAStoppedPeEnds covers (this case's quiet comes as PE 1 continues).
TEST(OffNodeBound, DeviceChannelLargePutsToAStoppedPeStopThePath) {
  if (puts_complete_locally()) GTEST_SKIP() << "ucx: the proxy hands a kernel's puts to UCX, and nothing waits";
  const std::string output = expect_case("device-put-large");
  EXPECT_NE(output.find("PE 1 has not handled PE 0's messages for 1500 ms"), std::string::npos) << output;
}
TEST(OffNodeBound, GetmemFromAStoppedPeEnds) { expect_case("getmem"); }
TEST(OffNodeBound, QuietWithAStoppedPeEnds) { expect_case("quiet"); }
// A kernel's p's to the stopped PE (over UCX: batches it never acknowledges), then a host quiet.
TEST(OffNodeBound, QuietAfterDeviceChannelPsToAStoppedPeEnds) { expect_case("device-p"); }
TEST(OffNodeBound, BarrierAllWithAStoppedPeEnds) { expect_case("barrier"); }
TEST(OffNodeBound, FinalizeWithAStoppedPeTearsDown) { expect_case("finalize"); }
// After one call gave up, 3000 more fail at once (never spinning on a full channel), and the stopped PE's proxy
// told the other PE's, whose calls fail too, naming it.
TEST(OffNodeBound, AfterAWaitGaveUpEveryCallFailsAtOnceOnEveryPe) {
  const std::string output = expect_case("dead-proxy");
  EXPECT_NE(output.find("PE 1 told: yes"), std::string::npos) << output;
}
TEST(OffNodeBound, APutmemWithTheSmallestRingEndsToo) {
  if (puts_complete_locally()) GTEST_SKIP() << "ucx: a put needs nothing of its target";
  expect_case("putmem", {"TSHMEM_PROXY_RING=2"});
}

}  // namespace
