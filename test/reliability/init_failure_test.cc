// Every init step failing on some PEs (TSHMEM_DEBUG_FAIL): on one PE, on another, and on all but one.
// Each time every PE must return the same error, naming the step and exactly the failing PEs, in
// bounded time; nothing of tshmem may stay behind (no mapping, descriptor or socket in this process, no
// segment in /dev/shm); and init must then succeed again (the same process, the same MPI).
//
// The backend comes from the ctest entry (TSHMEM_MEM_BACKEND=shm, vmm or ipc); the GPU backends skip
// without a usable GPU.
#include <dirent.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "init_step_list.h"
#include "mpi_test_env.h"
#include "tshmem/tshmem.h"

namespace tshmem_test {
namespace {

const char *const kStepNames[] = {
#define TSHMEM_TEST_STEP_NAME(ID, NAME, WHAT) NAME,
    TSHMEM_INIT_STEP_LIST(TSHMEM_TEST_STEP_NAME)
#undef TSHMEM_TEST_STEP_NAME
};
constexpr int kSteps = sizeof(kStepNames) / sizeof(kStepNames[0]);

// A failed init must end well within this on every PE (a hang is caught by the ctest TIMEOUT).
constexpr double kBoundSeconds = 30.0;

std::string read_link(const std::string &path) {
  char buffer[4096];
  const ssize_t n = readlink(path.c_str(), buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

bool names_tshmem_memory(const std::string &text) {
  return text.find("/dev/shm/tshmem") != std::string::npos || text.find("memfd:tshmem") != std::string::npos;
}

// What this process still holds of tshmem: mappings and descriptors of heap segments (named or not), and
// sockets whose address is tshmem's. Empty when nothing stayed behind.
std::vector<std::string> tshmem_resources_held() {
  std::vector<std::string> held;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (names_tshmem_memory(line)) held.push_back("mapping " + line);
  std::set<std::string> socket_inodes;
  if (DIR *dir = opendir("/proc/self/fd")) {
    while (dirent *entry = readdir(dir)) {
      const std::string target = read_link(std::string("/proc/self/fd/") + entry->d_name);
      if (names_tshmem_memory(target)) held.push_back(std::string("descriptor ") + entry->d_name + " -> " + target);
      if (target.rfind("socket:[", 0) == 0) socket_inodes.insert(target.substr(8, target.size() - 9));
    }
    closedir(dir);
  }
  // /proc/net/unix: "Num RefCount Protocol Flags Type St Inode Path"; abstract names start with '@'.
  std::ifstream unix_sockets("/proc/net/unix");
  for (std::string line; std::getline(unix_sockets, line);) {
    if (line.find("tshmem") == std::string::npos) continue;
    std::vector<std::string> fields;
    size_t at = 0;
    while (at < line.size()) {
      const size_t start = line.find_first_not_of(' ', at);
      if (start == std::string::npos) break;
      const size_t end = line.find(' ', start);
      fields.push_back(line.substr(start, end == std::string::npos ? std::string::npos : end - start));
      at = end == std::string::npos ? line.size() : end;
    }
    if (fields.size() >= 8 && socket_inodes.count(fields[6]) != 0) held.push_back("socket " + fields[7]);
  }
  return held;
}

// Whether any live process maps or holds open /dev/shm/<name> (another job's segment, in use).
bool held_by_a_live_process(const std::string &name) {
  const std::string path = "/dev/shm/" + name;
  bool held = false;
  DIR *proc = opendir("/proc");
  while (proc != nullptr && !held) {
    const dirent *entry = readdir(proc);
    if (entry == nullptr) break;
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const std::string pid_dir = std::string("/proc/") + entry->d_name;
    std::ifstream maps(pid_dir + "/maps");
    for (std::string line; !held && std::getline(maps, line);) held = line.find(path) != std::string::npos;
    if (DIR *fds = opendir((pid_dir + "/fd").c_str())) {
      while (const dirent *fd = readdir(fds))
        if (!held && read_link(pid_dir + "/fd/" + fd->d_name).rfind(path, 0) == 0) held = true;
      closedir(fds);
    }
  }
  if (proc != nullptr) closedir(proc);
  return held;
}

// Segments in /dev/shm with tshmem's prefix, of this uid, created at or after `since`, that no live
// process uses: residue. (Older segments, and those of jobs running beside this one, are not ours.)
std::vector<std::string> tshmem_residue_since(time_t since) {
  std::vector<std::string> found;
  if (DIR *dir = opendir("/dev/shm")) {
    while (dirent *entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.rfind("tshmem", 0) != 0) continue;
      struct stat info;
      if (stat(("/dev/shm/" + name).c_str(), &info) == 0 && info.st_uid == getuid() && info.st_ctime >= since &&
          !held_by_a_live_process(name))
        found.push_back(name);
    }
    closedir(dir);
  }
  return found;
}

// The PEs a selection names, and how TSHMEM_DEBUG_FAIL writes it.
struct Selection {
  std::string pes_text;
  std::set<int> pes;
};
Selection select(const std::string &which, int n) {
  Selection s;
  if (which == "first") {
    s.pes_text = "0";
    s.pes = {0};
  } else if (which == "last") {
    s.pes_text = std::to_string(n - 1);
    s.pes = {n - 1};
  } else {  // all-but-first
    s.pes_text = "all-but-0";
    for (int pe = 1; pe < n; ++pe) s.pes.insert(pe);
  }
  return s;
}

// Whether the backend of this ctest entry can run here; the GPU backends cannot without a GPU.
bool backend_usable(std::string *why) {
  static int usable = -1;
  static std::string reason;
  if (usable < 0) {
    ScopedEnv no_fault("TSHMEM_DEBUG_FAIL", nullptr);
    const int rc = tshmem_init();
    reason = rc == 0 ? "" : tshmemx_last_error();
    if (rc == 0) tshmem_finalize();
    usable = all_pes(rc == 0) ? 1 : 0;
    const char *backend = std::getenv("TSHMEM_MEM_BACKEND");
    const bool gpu_backend = backend != nullptr && std::string(backend) != "shm";
    if (!usable && !(gpu_backend && rc == TSHMEM_ERR_CUDA))
      ADD_FAILURE() << "a plain init failed: " << reason;  // shm must always work
  }
  *why = reason;
  return usable == 1;
}

class InitFailure : public ::testing::TestWithParam<std::tuple<int, const char *>> {};

TEST_P(InitFailure, SameErrorEverywhereNothingLeftAndInitWorksAgain) {
  std::string why;
  if (!backend_usable(&why)) GTEST_SKIP() << "backend not usable here: " << why;
  const int n = world_size(), me = world_rank();
  const std::string step = kStepNames[std::get<0>(GetParam())];
  const Selection selection = select(std::get<1>(GetParam()), n);
  const std::string spec = step + ":" + selection.pes_text;
  const time_t started = time(nullptr);

  int rc = 0;
  std::string message;
  double seconds = 0;
  {
    ScopedEnv fault("TSHMEM_DEBUG_FAIL", spec.c_str());
    const auto t0 = std::chrono::steady_clock::now();
    rc = tshmem_init();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    message = tshmemx_last_error();
  }
  if (rc == 0) tshmem_finalize();  // keep the PEs in step even when the test fails
  ASSERT_TRUE(all_pes(rc != 0)) << spec << ": init succeeded on PE " << me;

  // The same code and message on every PE.
  const std::vector<long long> codes = allgather(rc);
  const std::vector<long long> hashes = allgather(static_cast<long long>(std::hash<std::string>{}(message)));
  for (int pe = 0; pe < n; ++pe) {
    EXPECT_EQ(codes[static_cast<size_t>(pe)], codes[0]) << spec << ": PE " << pe << " returned another code";
    EXPECT_EQ(hashes[static_cast<size_t>(pe)], hashes[0])
        << spec << ": PE " << pe << " got another message; mine: " << message;
  }
  // It names the step and exactly the PEs that failed.
  EXPECT_NE(message.find("[step " + step + "] failed on "), std::string::npos) << message;
  for (int pe = 0; pe < n; ++pe) {
    const bool named =
        message.find("PE " + std::to_string(pe) + ": injected by TSHMEM_DEBUG_FAIL=" + spec) != std::string::npos;
    EXPECT_EQ(named, selection.pes.count(pe) == 1) << "PE " << pe << " in: " << message;
  }
  const std::vector<long long> took_ms = allgather(static_cast<long long>(seconds * 1000));
  for (int pe = 0; pe < n; ++pe)
    EXPECT_LT(took_ms[static_cast<size_t>(pe)], kBoundSeconds * 1000) << spec << ": PE " << pe << " took long";

  // Nothing of ours stays: in this process, and (once every PE has torn down) in /dev/shm.
  const std::vector<std::string> held = tshmem_resources_held();
  for (const std::string &item : held) ADD_FAILURE() << spec << ": still held after the failed init: " << item;
  ASSERT_TRUE(all_pes(held.empty()));
  for (const std::string &name : tshmem_residue_since(started))
    ADD_FAILURE() << spec << ": /dev/shm/" << name << " stayed behind";

  // And tshmem works again in the same process.
  ASSERT_TRUE(all_pes(tshmem_init() == 0)) << spec << ": init after the failure: " << tshmemx_last_error();
  void *block = tshmem_malloc(4096);
  EXPECT_TRUE(all_pes(block != nullptr)) << tshmemx_last_error();
  tshmem_free(block);
  tshmem_finalize();
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<int, const char *>> &info) {
  std::string name = std::string(kStepNames[std::get<0>(info.param)]) + "_on_" + std::get<1>(info.param);
  for (char &c : name)
    if (c == '-') c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryStep, InitFailure,
                         ::testing::Combine(::testing::Range(0, kSteps),
                                            ::testing::Values("first", "last", "all-but-first")),
                         case_name);

}  // namespace
}  // namespace tshmem_test
