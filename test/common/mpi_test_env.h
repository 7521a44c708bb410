// Shared by every multi-process test binary: MPI lives for the whole binary (so tshmem can init,
// finalize and init again), and PEs stay in step after each test.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace tshmem_test {

/// Installs the MPI environment and the listener; call from main before RUN_ALL_TESTS.
void install_mpi_environment(int *argc, char ***argv);

int world_rank();
int world_size();

/// True on every PE iff `ok` is true on every PE (a min-allreduce): one PE's failure is seen by all,
/// so no PE goes on into a collective that the failing PE skipped.
bool all_pes(bool ok);

/// Every PE's value of `mine`, by PE.
std::vector<long long> allgather(long long mine);

/// Sets (or with nullptr unsets) an environment variable for this process only.
void set_env(const char *name, const char *value);

/// RAII: sets a variable for the scope, restores the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char *name, const char *value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

 private:
  std::string name_;
  bool had_old_;
  std::string old_;
};

}  // namespace tshmem_test
