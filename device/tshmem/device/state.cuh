/*
 * The device state as every device function sees it, and how it gets there without -rdc.
 *
 * Default build: every translation unit that includes the device API owns a `static __constant__` copy of
 * tshmemi_device_state and, from a static initializer, registers a fill callback defined in the same unit
 * (so the copy is filled through that unit's own CUDA runtime, cudart_static included). tshmem_init fills
 * every registered copy; a unit registered later (a shared library loaded after init) is filled on arrival;
 * a unit in a library that is unloaded unregisters from its static destructor.
 *
 * -DTSHMEM_CUMODULE (a module loaded at run time, e.g. JIT code): the unit defines the C symbol
 * `tshmemi_device_state_c` instead and registers nothing; tshmemx_cumodule_init(module) fills it through
 * cuModuleGetGlobal. With -DTSHMEM_CUMODULE_EXTERN the symbol is only declared (an -rdc module whose other
 * unit defines it).
 *
 * By-value delivery: a kernel may instead take the state as `const __grid_constant__ tshmemi_device_state`
 * (from tshmemx_device_view) and pass it as the trailing `st` argument of any tshmem:: function; every
 * function defaults `st` to tshmemi::state(), the constant copy. Both paths run the same code.
 */
#ifndef TSHMEM_DEVICE_STATE_CUH
#define TSHMEM_DEVICE_STATE_CUH

#include "tshmem/device/defines.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
#include <cuda_runtime.h>

#if defined(TSHMEM_CUMODULE)

#if defined(TSHMEM_CUMODULE_EXTERN)
extern "C" __constant__ tshmemi_device_state tshmemi_device_state_c;
#else
extern "C" {
/// The module's copy, filled by tshmemx_cumodule_init (found by this exact name).
__constant__ tshmemi_device_state tshmemi_device_state_c;
}
#endif

namespace tshmemi {
/// The state every device function reads by default.
static __device__ __forceinline__ const tshmemi_device_state &state() { return tshmemi_device_state_c; }
}  // namespace tshmemi

#else  // !TSHMEM_CUMODULE: per-unit copy plus registration

namespace tshmemi {
namespace {

/// This unit's copy of the device state.
__constant__ tshmemi_device_state tshmemi_state_c;

/// Fill callback (tshmemi_state_fill_fn): copies `state` into this unit's copy on `cuda_device`, through
/// this unit's runtime; the calling thread's current device is restored. Returns a cudaError_t value.
int fill_state(int cuda_device, const tshmemi_device_state *state) {
  int previous = -1;
  cudaError_t rc = cudaGetDevice(&previous);
  if (rc != cudaSuccess) return static_cast<int>(rc);
  if (previous != cuda_device && (rc = cudaSetDevice(cuda_device)) != cudaSuccess) return static_cast<int>(rc);
  rc = cudaMemcpyToSymbol(tshmemi_state_c, state, sizeof(tshmemi_device_state));
  if (previous != cuda_device) {
    const cudaError_t restore = cudaSetDevice(previous);
    if (rc == cudaSuccess) rc = restore;
  }
  return static_cast<int>(rc);
}

/// Registers fill_state at static-init time (no CUDA call there) and unregisters at unload.
class StateRegistration {
 public:
  StateRegistration()
      : token_(tshmemi_register_device_state(&fill_state, TSHMEMI_DEVICE_STATE_VERSION,
                                             static_cast<uint32_t>(sizeof(tshmemi_device_state)))) {}
  ~StateRegistration() { tshmemi_unregister_device_state(token_); }
  StateRegistration(const StateRegistration &) = delete;
  StateRegistration &operator=(const StateRegistration &) = delete;

 private:
  void *token_;
};

StateRegistration state_registration;

}  // namespace

/// The state every device function reads by default: this unit's constant copy.
static __device__ __forceinline__ const tshmemi_device_state &state() { return tshmemi_state_c; }

}  // namespace tshmemi

#endif  // TSHMEM_CUMODULE
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_STATE_CUH
