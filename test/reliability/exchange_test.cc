// The node-local descriptor exchange of the shm heap (the vmm heap uses the same code): nothing of it is
// named once init returns, and a socket directory that cannot be made fails init on every PE, naming the
// PE and the path, with nothing left behind.
#include <glob.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "mpi_test_env.h"
#include "tshmem/tshmem.h"

namespace tshmem_test {
namespace {

// /tmp/tshmem-<pid>-XXXXXX directories (the creator's pid, mkdtemp's six characters), as they are now.
std::set<std::string> socket_directories() {
  std::set<std::string> found;
  glob_t matches{};
  // In /tmp, or in a launcher's directory of the job below it (Open MPI's session directory: /tmp/ompi.*/pid.*).
  if (glob("/tmp/{tshmem,ompi.*/pid.*/tshmem}-[0-9]*-??????", GLOB_NOSORT | GLOB_BRACE, nullptr, &matches) == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i) found.insert(matches.gl_pathv[i]);
  globfree(&matches);
  return found;
}

// Bound Unix socket names under a tshmem socket directory (from /proc/net/unix). Only mkdtemp's six-character
// directories count: other programs' sockets may contain "/tshmem-" too (the SLURM test's munge socket does).
const std::regex kExchangeSocket("/tshmem-[0-9]+-[A-Za-z0-9]{6}/");

int tshmem_socket_names() {
  std::ifstream table("/proc/net/unix");
  std::string line;
  int count = 0;
  while (std::getline(table, line))
    if (std::regex_search(line, kExchangeSocket)) ++count;
  return count;
}

// Directories that are new since `before` and still there two seconds later: a job that ctest runs beside
// this one (the install or SLURM test) holds its own for milliseconds only.
std::set<std::string> lingering_directories(const std::set<std::string> &before) {
  std::set<std::string> added;
  for (int look = 0; look < 2; ++look) {
    added.clear();
    for (const std::string &dir : socket_directories())
      if (before.count(dir) == 0) added.insert(dir);
    if (added.empty()) break;
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  return added;
}

int lingering_socket_names() {
  int count = tshmem_socket_names();
  if (count != 0) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    count = tshmem_socket_names();
  }
  return count;
}

class Exchange : public ::testing::Test {
 protected:
  ScopedEnv backend_{"TSHMEM_MEM_BACKEND", "shm"};
  ScopedEnv size_{"TSHMEM_SYMMETRIC_SIZE", "8M"};
  std::string last_error() const { return tshmemx_last_error(); }
};

TEST_F(Exchange, NothingIsNamedOnceInitReturns) {
  const std::set<std::string> before = socket_directories();
  ASSERT_TRUE(all_pes(tshmem_init() == 0)) << last_error();
  // Every PE is past init: the directory and every socket name are gone (other jobs may add their own).
  EXPECT_TRUE(all_pes(true));
  EXPECT_EQ(lingering_directories(before), std::set<std::string>()) << "left behind";
  EXPECT_EQ(lingering_socket_names(), 0) << "a socket name outlived the exchange";
  tshmem_finalize();
}

TEST_F(Exchange, AnUnusableSocketDirectoryFailsInitOnEveryPe) {
  {
    // Only the node's first PE makes the directory: with no launcher directory of the job to use, its TMPDIR decides
    // (an absolute path that does not exist).
    const bool first = world_rank() == 0;
    ScopedEnv pmix("PMIX_SERVER_TMPDIR", first ? "" : std::getenv("PMIX_SERVER_TMPDIR"));
    ScopedEnv session("OMPI_MCA_orte_jobfam_session_dir", first ? "" : std::getenv("OMPI_MCA_orte_jobfam_session_dir"));
    ScopedEnv tmpdir("TMPDIR", first ? "/nonexistent-tshmem-test-dir" : nullptr);
    const std::set<std::string> before = socket_directories();
    const int rc = tshmem_init();
    EXPECT_EQ(rc, TSHMEM_ERR_SYSTEM) << last_error();
    EXPECT_NE(last_error().find("creating the node's private socket directory failed on PE 0"), std::string::npos)
        << last_error();
    EXPECT_NE(last_error().find("mkdtemp(/nonexistent-tshmem-test-dir/tshmem-"), std::string::npos) << last_error();
    EXPECT_EQ(tshmem_my_pe(), -1);
    EXPECT_TRUE(all_pes(true));
    EXPECT_EQ(lingering_directories(before), std::set<std::string>()) << "left behind";
  }
  // With TMPDIR restored, init works again right after.
  ASSERT_TRUE(all_pes(tshmem_init() == 0)) << last_error();
  tshmem_finalize();
}

}  // namespace
}  // namespace tshmem_test
