#include "gpu_test_env.h"

#include <cstdlib>
#include <cstring>

namespace tshmem_test {
namespace {

enum SkipCode : int { kRun = 0, kTooFewGpus = 1, kNoGpu = 2 };

bool env_true(const char *name) {
  const char *value = std::getenv(name);
  if (value == nullptr) return false;
  for (const char *yes : {"1", "true", "yes", "on", "TRUE", "YES", "ON", "True", "Yes", "On"})
    if (std::strcmp(value, yes) == 0) return true;
  return false;
}

int visible_gpus(std::string *why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (rc != cudaSuccess) {
    *why = std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
    return 0;
  }
  if (count == 0) *why = "0 devices";
  return count;
}

int node_local_pes() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int size = 1;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}

}  // namespace

std::string gpu_skip_reason() {
  std::string why;
  const int gpus = visible_gpus(&why);
  const int local = node_local_pes();
  int mine = kRun;
  if (gpus == 0)
    mine = kNoGpu;
  else if (local > gpus && !env_true("TSHMEM_ALLOW_SHARED_GPU"))
    mine = kTooFewGpus;
  int worst = kRun;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  // Only the code is agreed; the detail may differ per PE but the decision (skip or run) is the same.
  switch (static_cast<SkipCode>(worst)) {
    case kRun: return "";
    case kNoGpu: return "no CUDA device on at least one PE" + (why.empty() ? std::string() : " (here: " + why + ")");
    case kTooFewGpus:
      return "more PEs on a node than GPUs (here " + std::to_string(local) + " PEs, " + std::to_string(gpus) +
             " GPUs); set TSHMEM_ALLOW_SHARED_GPU=1 to share GPUs";
  }
  return "unknown skip code";
}

bool no_pe_has_gpu() {
  std::string why;
  const int mine = visible_gpus(&why) > 0 ? 1 : 0;
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any == 0;
}

std::string backend_name(const ::testing::TestParamInfo<std::string> &info) { return info.param; }

void GpuBackendTest::SetUp() {
  TSHMEM_SKIP_WITHOUT_GPUS();
  ScopedEnv backend("TSHMEM_MEM_BACKEND", GetParam().c_str());
  ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", "64M");
  ScopedEnv timeout("TSHMEM_WAIT_TIMEOUT_MS", "250");
  const int rc = tshmem_init();
  const std::string error = tshmemx_last_error();
  ASSERT_TRUE(all_pes(rc == 0)) << "tshmem_init on backend " << GetParam() << ": " << error;
  me_ = tshmem_my_pe();
  n_ = tshmem_n_pes();
}

void GpuBackendTest::TearDown() {
  if (tshmem_my_pe() >= 0) tshmem_finalize();  // init agreed on every PE, so finalize is collective
}

void GpuLifecycleTest::SetUp() { TSHMEM_SKIP_WITHOUT_GPUS(); }

}  // namespace tshmem_test
