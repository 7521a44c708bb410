#include "mpi_test_env.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tshmem_test {
namespace {

class MpiEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};

// After every test, all PEs agree on whether it passed: a failure on one PE is reported with its PE
// number, and the others wait here instead of racing into the next test's collectives.
class InStepListener : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo &info) override {
    const bool ok = !info.result()->Failed();
    if (!ok) std::fprintf(stderr, "[PE %d] FAILED %s.%s\n", world_rank(), info.test_suite_name(), info.name());
    MPI_Barrier(MPI_COMM_WORLD);
  }
};

}  // namespace

void install_mpi_environment(int *argc, char ***argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::AddGlobalTestEnvironment(new MpiEnvironment);
  ::testing::TestEventListeners &listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (world_rank() != 0) delete listeners.Release(listeners.default_result_printer());  // PE 0 prints
  listeners.Append(new InStepListener);
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

bool all_pes(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

std::vector<long long> allgather(long long mine) {
  std::vector<long long> all(static_cast<size_t>(world_size()));
  MPI_Allgather(&mine, 1, MPI_LONG_LONG, all.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD);
  return all;
}

void set_env(const char *name, const char *value) {
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

ScopedEnv::ScopedEnv(const char *name, const char *value) : name_(name) {
  const char *old = std::getenv(name);
  had_old_ = old != nullptr;
  if (had_old_) old_ = old;
  set_env(name, value);
}

ScopedEnv::~ScopedEnv() { set_env(name_.c_str(), had_old_ ? old_.c_str() : nullptr); }

}  // namespace tshmem_test
