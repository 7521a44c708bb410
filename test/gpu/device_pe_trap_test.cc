// Bug (b) regression: a kernel that names PE 99 with 2 PEs (and 1 PE) traps with the exact message and
// writes nothing; so does one that names a PE of another node when there is no off-node proxy (saying why);
// a wait past its timeout traps naming the address, the expected and the found value.
// The kernel runs in a child job (fork + exec of mpirun on device_pe_trap_helper); this parent is not an
// MPI process, checks the exit status and the captured output (stdout+stderr: device printf goes to stdout).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct ChildResult {
  int status = -1;  // exit code, or 128 + signal
  std::string output;
  bool timed_out = false;
};

ChildResult run(const std::vector<std::string> &args, int timeout_s) {
  ChildResult result;
  int fds[2];
  if (pipe(fds) != 0) return result;
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char *> argv;
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char chunk[4096];
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, 200);
    if (ready > 0) {
      const ssize_t got = read(fds[0], chunk, sizeof(chunk));
      if (got <= 0) break;
      result.output.append(chunk, static_cast<size_t>(got));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      result.timed_out = true;
      kill(-pid, SIGKILL);  // the child's process group: mpirun and its PEs
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

ChildResult run_helper(int np, const char *mode, const char *bad_pe = "99") {
  return run({TSHMEM_MPI_TEST_LAUNCHER, std::to_string(np), TSHMEM_PE_TRAP_HELPER, mode, bad_pe}, 240);
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
