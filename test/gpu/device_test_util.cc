#include "device_test_util.h"

#include <cstdlib>

namespace tshmem_device_test {
namespace {

std::string g_skip_reason = "tshmem_init did not run";

class TshmemEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    int devices = 0;
    const cudaError_t rc = cudaGetDeviceCount(&devices);
    std::string local;
    if (rc != cudaSuccess || devices == 0)
      local = std::string("no CUDA device (") + (rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices") + ")";
    if (!tshmem_test::all_pes(local.empty())) {
      g_skip_reason = local.empty() ? "another PE has no CUDA device" : local;
      return;
    }
    if (tshmem_init() != 0) {
      // A GPU is there, so init must work: the binary fails, and the tests skip naming the cause.
      g_skip_reason = std::string("tshmem_init failed: ") + tshmemx_last_error();
      ADD_FAILURE() << g_skip_reason;
      init_failed_ = true;
      return;
    }
    const bool gpu_heap = tshmemx_cuda_device() >= 0;
    if (!tshmem_test::all_pes(gpu_heap)) {
      g_skip_reason = std::string("no GPU heap (backend ") + tshmemx_backend_name() + ")";
      return;
    }
    g_skip_reason.clear();
  }
  void TearDown() override {
    if (!init_failed_) tshmem_finalize();
  }

 private:
  bool init_failed_ = false;
};

}  // namespace

const std::string &skip_reason() { return g_skip_reason; }

// Every node team is smaller than the job exactly when the job spans nodes, so all PEs agree.
bool job_spans_nodes() { return tshmem_team_n_pes(TSHMEMX_TEAM_NODE) != tshmem_n_pes(); }

void install_environment(int *argc, char ***argv) {
  tshmem_test::install_mpi_environment(argc, argv);
  ::testing::AddGlobalTestEnvironment(new TshmemEnvironment);  // torn down before MPI
}

SymBuffer::SymBuffer(size_t bytes) : ptr_(tshmem_calloc(1, bytes)), bytes_(bytes) {
  EXPECT_NE(ptr_, nullptr) << "tshmem_calloc(" << bytes << "): " << tshmemx_last_error();
}

SymBuffer::~SymBuffer() { tshmem_free(ptr_); }

}  // namespace tshmem_device_test
