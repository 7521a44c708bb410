// How a copy of the device state is filled and its fill registered with libtshmem: shared by each unit's copy
// without -rdc (state.cuh) and the one copy of an -rdc program (libtshmem_device.a, device/state_rdc.cu).
// Internal linkage throughout: each copy is filled through the CUDA runtime of the binary that holds it
// (cudart_static included), never through another binary's same-named function.
#ifndef TSHMEM_DEVICE_IMPL_STATE_FILL_CUH
#define TSHMEM_DEVICE_IMPL_STATE_FILL_CUH

#include <cuda_runtime.h>

#include "tshmem/device/state_types.h"

namespace tshmemi {
namespace {

/// Copies `state` into `copy` on `cuda_device` through this binary's runtime; the calling thread's current device
/// is restored. With TSHMEMI_STATE_LOAD_KERNELS (the off-node proxy runs under lazy loading) it also loads every
/// kernel of the module that holds `module_kernel`. Returns a cudaError_t value.
template <class Copy>
int fill_copy(const Copy &copy, const void *module_kernel, int cuda_device, const tshmemi_device_state *state) {
  int previous = -1;
  cudaError_t rc = cudaGetDevice(&previous);
  if (rc != cudaSuccess) return static_cast<int>(rc);
  if (previous != cuda_device && (rc = cudaSetDevice(cuda_device)) != cudaSuccess) return static_cast<int>(rc);
  rc = cudaMemcpyToSymbol(copy, state, sizeof(tshmemi_device_state));
  if (rc == cudaSuccess && (state->flags & TSHMEMI_STATE_LOAD_KERNELS)) {
    cudaFunction_t anchor = nullptr;
    if (cudaGetFuncBySymbol(&anchor, module_kernel) == cudaSuccess)
      tshmemi_load_unit_kernels(anchor);
    else
      (void)cudaGetLastError();  // best effort: the copy works; only the module's unloaded kernels stay a hazard
  }
  if (previous != cuda_device) {
    const cudaError_t restore = cudaSetDevice(previous);
    if (rc == cudaSuccess) rc = restore;
  }
  return static_cast<int>(rc);
}

/// Registers `Fill` (a tshmemi_state_fill_fn) at static-init time (no CUDA call there) and unregisters at unload.
template <tshmemi_state_fill_fn Fill>
class StateRegistration {
 public:
  StateRegistration()
      : token_(tshmemi_register_device_state(Fill, TSHMEMI_DEVICE_STATE_VERSION,
                                             static_cast<uint32_t>(sizeof(tshmemi_device_state)))) {}
  ~StateRegistration() { tshmemi_unregister_device_state(token_); }
  StateRegistration(const StateRegistration &) = delete;
  StateRegistration &operator=(const StateRegistration &) = delete;

 private:
  void *token_;
};

}  // namespace
}  // namespace tshmemi

#endif  // TSHMEM_DEVICE_IMPL_STATE_FILL_CUH
