// When a PE dies or stops, every call ends within its bound on every live PE with the documented message, and
// finalize never aborts the job (fault_helper.cc: one child job per case, every PE its own node, a small bound).
// The case to run comes from the ctest entry (TSHMEM_FAULT_CASE), so that each is its own test and any dimension
// (the transport, say) is added where the entries are made (tshmem_add_fault_test in CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "child_job.h"

namespace {

// The bound of every wait on a PE that is gone (TSHMEM_PROXY_TIMEOUT_MS), and the first word a third of it in
// (TSHMEM_WAIT_WARN_MS). Each case waits for it once or twice; the offnode_bound cases use the same.
constexpr int kBoundMs = 1500;

// The heap's backend: the environment's (a GPU machine runs the label with vmm too), else shm. The reserved-region,
// kill-put-device and stop-get-device cases post to the device channel from the CPU, which only a host-memory heap
// (shm) lets a CPU producer do.
std::string backend_of(const std::string &which) {
  const char *text = std::getenv("TSHMEM_MEM_BACKEND");
  const bool cpu_producer = which == "reserved-put" || which == "kill-put-device" || which == "stop-get-device";
  return text != nullptr && *text != '\0' && !cpu_producer ? text : "shm";
}

// Runs the case on `np` PEs; every PE in `live` must print "RESULT <case> PE <n>: PASS" lines only, and finalize.
std::string run_case(const std::string &which, int np, std::vector<int> live,
                     std::vector<std::string> launcher_args = {}, bool exit_zero = true,
                     const std::string &extra_env = "TSHMEM_PROXY_RING=1024", int limit_s = 90) {
  std::vector<std::string> env = {"TSHMEM_MEM_BACKEND=" + backend_of(which),
                                  "TSHMEM_DEBUG_NODE_SIZE=1",
                                  "TSHMEM_DISABLE_NVLS=1",
                                  "TSHMEM_SYMMETRIC_SIZE=64M",
                                  "TSHMEM_DEBUG=warn",
                                  "TSHMEM_WAIT_WARN_MS=" + std::to_string(kBoundMs / 3),
                                  "TSHMEM_PROXY_TIMEOUT_MS=" + std::to_string(kBoundMs),
                                  extra_env};  // last: it may override the ones above
  std::vector<std::string> argv = {TSHMEM_MPI_TEST_LAUNCHER, std::to_string(np)};
  argv.insert(argv.end(), launcher_args.begin(), launcher_args.end());
  argv.push_back(TSHMEM_CHILD_HELPER);
  argv.push_back(which);
  const tshmem_test::ChildResult r = tshmem_test::run_child(argv, limit_s, env);
  EXPECT_FALSE(r.timed_out) << "the job hung:\n" << r.output;
  EXPECT_EQ(r.output.find(": FAIL"), std::string::npos) << r.output;
  for (int pe : live) {
    EXPECT_NE(r.output.find("RESULT " + which + " PE " + std::to_string(pe) + ": PASS"), std::string::npos)
        << "PE " << pe << " checked nothing:\n"
        << r.output;
    EXPECT_NE(r.output.find("PE " + std::to_string(pe) + " finalized"), std::string::npos) << r.output;
  }
  if (exit_zero) {
    EXPECT_EQ(r.status, 0) << r.output;
  }
  return r.output;
}

std::string fault_case() {
  const char *text = std::getenv("TSHMEM_FAULT_CASE");
  return text != nullptr ? text : "";
}

TEST(Fault, EndsWithinTheBoundOnEveryLivePe) {
  const std::string which = fault_case();
  if (which == "stop-barrier") {
    const std::string out = run_case(which, 2, {0});
    // The first word comes early (TSHMEM_WAIT_WARN_MS), saying what is awaited and when the wait gives up.
    EXPECT_NE(out.find("tshmem_barrier_all: PE 0 has waited"), std::string::npos) << out;
    EXPECT_NE(out.find("it gives up at " + std::to_string(kBoundMs) + " ms"), std::string::npos) << out;
  } else if (which == "stop-barrier-one-node") {
    // The same on one node. On the shm heap the rendezvous meets in shared memory (bootstrap/node_sync.h); on a GPU
    // heap it goes through MPI's non-blocking allreduce. Either wait ends at the bound, saying what it waited for.
    const std::string out = run_case(which, 2, {0}, {}, true, "TSHMEM_DEBUG_NODE_SIZE=0");
    const bool node_sync =
        out.find("waited " + std::to_string(kBoundMs) +
                 " ms for node-local PE 1 to join a barrier or allreduce (shared memory)") != std::string::npos;
    const bool mpi = out.find("PE 0 waited " + std::to_string(kBoundMs) + " ms for every PE to join an allreduce") !=
                     std::string::npos;
    EXPECT_TRUE(node_sync || (backend_of(which) != "shm" && mpi)) << out;
  } else if (which == "stop-finalize") {
    run_case(which, 2, {0});
  } else if (which == "stop-get" || which == "stop-put" || which == "stop-get-device") {
    // A short bound: the case ends in a few seconds (PE 1, continued, may wait for PE 0 at its finalize that long).
    run_case(which, 2, which == "stop-put" ? std::vector<int>{0, 1} : std::vector<int>{0}, {}, true,
             "TSHMEM_PROXY_TIMEOUT_MS=1000");
  } else if (which.rfind("kill-barrier", 0) == 0) {
    // The launcher keeps the job when a process dies (Open MPI 4.1: orte_enable_recovery); its exit code then
    // reports the death. Each live PE checks that its finalize ended within the bound and a second; the job's limit
    // (30 s: it ends in about 10) turns a finalize that waits for the dead PE into a failure soon.
    const int np = which == "kill-barrier-np2" ? 2 : which == "kill-barrier-np4" ? 4 : 3;
    std::vector<int> live;
    for (int pe = 0; pe + 1 < np; ++pe) live.push_back(pe);
    const std::string out =
        run_case(which, np, live, {"--mca", "orte_enable_recovery", "1"}, false, "TSHMEM_PROXY_RING=1024", 30);
    if (which != "kill-barrier-app-mpi") {
      // tshmem started MPI and leaves it unfinalized, naming the dead PE (MPI_Finalize would wait for it).
      const std::string dead = "left unfinalized: PE " + std::to_string(np - 1) + " ended before";
      EXPECT_NE(out.find(dead), std::string::npos) << out;
    } else {
      // MPI_Finalize is the application's: the dead PE is named for it.
      const std::string dead = "tshmem_finalize: PE " + std::to_string(np - 1) + " ended before this PE finalized";
      EXPECT_NE(out.find(dead), std::string::npos) << out;
      EXPECT_NE(out.find("MPI is the application's, and its MPI_Finalize waits in the launcher's fence"),
                std::string::npos)
          << out;
    }
  } else if (which.rfind("kill-put", 0) == 0) {
    // Operations in flight to a dead PE at the teardown (UCX: requests pending on its endpoint, closed by force).
    const std::string out =
        run_case(which, 2, {0}, {"--mca", "orte_enable_recovery", "1"}, false, "TSHMEM_PROXY_RING=1024", 30);
    EXPECT_NE(out.find("left unfinalized: PE 1 ended before"), std::string::npos) << out;
    if (which == "kill-put-device") {
      EXPECT_NE(out.find("the device channel's quiet after"), std::string::npos) << out;
    }
  } else if (which == "truncate-finalize") {
    // Chunks of 256 bytes: the oversized message (2 KiB) is still an eager one. A truncated message past MPI's eager
    // limit is copied whole by Open MPI 4.1's single-copy and tcp paths, over the end of the receive buffer.
    const std::string out = run_case(which, 2, {}, {}, true, "TSHMEM_PROXY_CHUNK=256");
    EXPECT_NE(out.find("PE 0 finalized"), std::string::npos) << out;
    EXPECT_NE(out.find("PE 1 finalized"), std::string::npos) << out;
    // What the transport's network said: MPI's error class, or UCX's status text.
    const char *transport = std::getenv("TSHMEM_REMOTE_TRANSPORT");
    const std::string said =
        transport != nullptr && std::string(transport) == "ucx" ? "Message truncated" : "MPI_ERR_TRUNCATE";
    EXPECT_NE(out.find(said), std::string::npos) << "PE 1 reports what its transport said (" << said << "):\n" << out;
  } else if (which == "reserved-put") {
    run_case(which, 2, {1});
  } else {
    FAIL() << "TSHMEM_FAULT_CASE='" << which << "' names no case";
  }
}

}  // namespace
