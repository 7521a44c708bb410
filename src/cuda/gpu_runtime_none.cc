// gpu_runtime.h for builds without CUDA: only the shm backend exists.
#include "cuda/gpu_runtime.h"
#include "cuda/gpu_warmup.h"

namespace tshmemi {

bool gpu_available() { return false; }
std::string gpu_unavailable_reason() { return "tshmem was built without CUDA"; }
Status select_gpu(const EnvOptions &, Bootstrap &, GpuChoice *) {
  return set_error(TSHMEM_ERR_CUDA, "select_gpu: tshmem was built without CUDA");
}
int device_for_local_rank(const EnvOptions &, int, int) { return -1; }

// No CUDA to start: never made.
struct GpuWarmup::Started {};
GpuWarmup::GpuWarmup() = default;
std::unique_ptr<GpuWarmup> GpuWarmup::start(const EnvOptions &) noexcept { return nullptr; }
GpuWarmup::~GpuWarmup() = default;
void GpuWarmup::join() {}
void GpuWarmup::settle(int) {}

Status create_device_state(const DeviceStateInputs &, std::unique_ptr<DeviceState> *) {
  return set_error(TSHMEM_ERR_CUDA, "create_device_state: tshmem was built without CUDA");
}

}  // namespace tshmemi

extern "C" TSHMEM_API int tshmemx_cumodule_init(tshmemx_cumodule_t) {
  return tshmemi::set_error(TSHMEM_ERR_CUDA, "tshmemx_cumodule_init: tshmem was built without CUDA");
}

// No device state is filled without CUDA, so no fill asks for this; it exists because units compiled with the
// device API reference it whatever the library was built with.
extern "C" TSHMEM_API void tshmemi_load_unit_kernels(void *) {}
