#include "cuda/gpu_warmup.h"

#include <cuda_runtime_api.h>

#include <thread>

#include "cuda/driver.h"
#include "cuda/gpu_runtime.h"
#include "cuda/module_loading.h"

namespace tshmemi {

struct GpuWarmup::Started {
  std::thread thread;
  int local_rank = -1;
  int device = -1;         // where the thread started CUDA (-1: it did not)
  bool made_here = false;  // the device's context was not active before the thread made it
  bool settled = false;

  void run(const EnvOptions &env) {
    int visible = 0;
    if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
      cudaGetLastError();  // no GPU: select_gpu reports it
      return;
    }
    const int chosen = device_for_local_rank(env, local_rank, visible);
    if (chosen < 0) return;  // TSHMEM_DEVICE out of range: select_gpu reports it
    CUdevice handle = 0;
    unsigned flags = 0;
    int active = 1;
    if (cu_driver_load() != TSHMEM_SUCCESS || TSHMEMI_CU(cuDeviceGet(&handle, chosen)) != CUDA_SUCCESS ||
        TSHMEMI_CU(cuDevicePrimaryCtxGetState(handle, &flags, &active)) != CUDA_SUCCESS)
      return;
    if (active) return;  // the application started CUDA there: nothing to gain
    if (cudaSetDevice(chosen) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
      cudaGetLastError();  // select_gpu meets the same failure and names it
      return;
    }
    device = chosen;
    made_here = true;
  }
};

GpuWarmup::GpuWarmup() : started_(std::make_unique<Started>()) {}

std::unique_ptr<GpuWarmup> GpuWarmup::start(const EnvOptions &env) noexcept {
  const LauncherPlacement &at = env.launcher;
  if (at.local_rank < 0 || at.local_size <= 0 || at.size <= 0) return nullptr;
  // The bootstrap's node: the host's processes, or consecutive groups of TSHMEM_DEBUG_NODE_SIZE of them.
  const int node_size = env.debug_node_size > 0 ? static_cast<int>(env.debug_node_size) : 0;
  const int local_rank = node_size > 0 ? at.local_rank % node_size : at.local_rank;
  const bool spans_nodes = at.local_size != at.size || (node_size > 0 && node_size < at.local_size);
  // The module-loading choice of a job over nodes is made before CUDA starts, as init would make it.
  if (spans_nodes) prefer_eager_module_loading();
  try {
    std::unique_ptr<GpuWarmup> warmup(new GpuWarmup());
    Started *started = warmup->started_.get();
    started->local_rank = local_rank;
    started->thread = std::thread([started, env] { started->run(env); });
    return warmup;
  } catch (...) {  // no thread: select_gpu starts CUDA itself, as without
    return nullptr;
  }
}

void GpuWarmup::join() {
  if (started_->thread.joinable()) started_->thread.join();
}

void GpuWarmup::settle(int device) {
  Started &s = *started_;
  if (s.settled) return;
  s.settled = true;
  join();
  if (!s.made_here || s.device == device) return;
  // The launcher's local rank was not the bootstrap's (or init failed first): the context made ahead goes, and
  // this thread's current device stays what it was.
  int current = -1;
  const bool had_current = cudaGetDevice(&current) == cudaSuccess;
  if (cudaSetDevice(s.device) == cudaSuccess) cudaDeviceReset();
  if (had_current && device >= 0) cudaSetDevice(current);
  cudaGetLastError();
  TSHMEMI_LOG(kInfo, kLogCuda, "CUDA started ahead on device %d, which select_gpu did not pick (%d): released",
              s.device, device);
}

GpuWarmup::~GpuWarmup() { settle(-1); }

}  // namespace tshmemi
