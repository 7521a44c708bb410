/*
 * The device state as every device function sees it, and how it gets there in each build mode.
 *
 * Default build (no -rdc): every translation unit that includes the device API owns a `static __constant__`
 * copy of tshmemi_device_state and, from a static initializer, registers a fill callback defined in the same
 * unit (so the copy is filled through that unit's own CUDA runtime, cudart_static included). Each unit is its
 * own device program, so each needs its own copy. tshmem_init fills every registered copy; a unit registered
 * later (a shared library loaded after init) is filled on arrival; a unit in a library that is unloaded
 * unregisters from its static destructor.
 *
 * Separate compilation (-rdc, __CUDACC_RDC__): all units of a binary are device-linked into one program, which
 * needs one copy, not one per unit. Every unit declares the copy `extern __constant__`; its one definition lives
 * in the static device library libtshmem_device.a (device/state_rdc.cu), which tshmem::device, `pkg-config
 * --libs tshmem` and tshmem::nvshmem put on the link line, as NVSHMEM's libnvshmem_device.a holds its state.
 * The fill callback and its registration are C++17 inline variables (one per binary for the host linker). Both
 * have hidden visibility, so an -rdc shared library (its own device program, linking its own copy of the
 * archive) keeps its own copy and registration instead of binding to the executable's. Assumes one device
 * link per binary (what CMake's CUDA_SEPARABLE_COMPILATION does). A device link without the archive fails
 * with an undefined reference to `tshmemi::binary::state_in_libtshmem_device`: the name says what to link.
 *
 * -DTSHMEM_CUMODULE (a module loaded at run time, e.g. JIT code): the unit defines the C symbol
 * `tshmemi_device_state_c` instead and registers nothing; tshmemx_cumodule_init(module) fills it through
 * cuModuleGetGlobal. Under -rdc the definition is inline and `__device__` (one per module, any number of
 * units, no library to link); -DTSHMEM_CUMODULE_EXTERN only declares it (for a unit whose module defines it
 * elsewhere).
 *
 * By-value delivery: a kernel may instead take the state as `const __grid_constant__ tshmemi_device_state`
 * (from tshmemx_device_view) and pass it as the trailing `st` argument of any tshmem:: function; every
 * function defaults `st` to tshmemi::state(), the unit's or binary's copy. Both paths run the same code.
 */
#ifndef TSHMEM_DEVICE_STATE_CUH
#define TSHMEM_DEVICE_STATE_CUH

#include "tshmem/device/defines.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
#include <cuda_runtime.h>

#if defined(TSHMEM_CUMODULE)

#if defined(TSHMEM_CUMODULE_EXTERN) && defined(__CUDACC_RDC__)
extern "C" __device__ tshmemi_device_state tshmemi_device_state_c;
#elif defined(TSHMEM_CUMODULE_EXTERN)
extern "C" __constant__ tshmemi_device_state tshmemi_device_state_c;
#elif defined(__CUDACC_RDC__)
/// The module's copy, filled by tshmemx_cumodule_init; one per module however many units define it (a
/// global-namespace variable's symbol is its plain name, so cuModuleGetGlobal finds it). In global memory
/// for the reason given above: weak __constant__ copies would each take bank space.
inline __device__ tshmemi_device_state tshmemi_device_state_c;
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

#else  // !TSHMEM_CUMODULE: a copy plus its registration

// One registration scheme, two linkages: per unit (anonymous namespace) without -rdc; per binary (inline
// variables, hidden so that each shared library keeps its own) under -rdc.
#if defined(__CUDACC_RDC__)
#if __cplusplus < 201703L
#error "tshmem device API under -rdc needs C++17 (inline variables): compile with -std=c++17"
#endif
#define TSHMEMI_STATE_NAMESPACE_BEGIN inline namespace binary __attribute__((visibility("hidden"))) {
#define TSHMEMI_STATE_INLINE inline
#else
#define TSHMEMI_STATE_NAMESPACE_BEGIN namespace {
#define TSHMEMI_STATE_INLINE
#endif

namespace tshmemi {
TSHMEMI_STATE_NAMESPACE_BEGIN

#if defined(__CUDACC_RDC__)
/// This binary's copy, in constant memory: defined once, in libtshmem_device.a (device/state_rdc.cu).
extern __constant__ tshmemi_device_state state_in_libtshmem_device;
#define TSHMEMI_STATE_COPY state_in_libtshmem_device
#else
/// This unit's copy, in constant memory.
__constant__ tshmemi_device_state tshmemi_state_c;
#define TSHMEMI_STATE_COPY tshmemi_state_c
#endif

/// A kernel of this unit's (binary's) module, so that the fill can name the module: with the off-node proxy
/// running under lazy loading, the fill loads all of the module's kernels (TSHMEMI_STATE_LOAD_KERNELS). Never
/// launched. It names the copy so that every unit's device code refers to it: under -rdc that reference is
/// what makes the device link take the archive's definition, which the host side of fill_state needs too.
template <int>
__global__ void unit_anchor(const void **copy) {
  *copy = &TSHMEMI_STATE_COPY;
}

/// Fill callback (tshmemi_state_fill_fn): copies `state` into the copy above on `cuda_device`, through this
/// unit's runtime; the calling thread's current device is restored. Returns a cudaError_t value.
TSHMEMI_STATE_INLINE int fill_state(int cuda_device, const tshmemi_device_state *state) {
  int previous = -1;
  cudaError_t rc = cudaGetDevice(&previous);
  if (rc != cudaSuccess) return static_cast<int>(rc);
  if (previous != cuda_device && (rc = cudaSetDevice(cuda_device)) != cudaSuccess) return static_cast<int>(rc);
  rc = cudaMemcpyToSymbol(TSHMEMI_STATE_COPY, state, sizeof(tshmemi_device_state));
  if (rc == cudaSuccess && (state->flags & TSHMEMI_STATE_LOAD_KERNELS)) {
    cudaFunction_t anchor = nullptr;
    if (cudaGetFuncBySymbol(&anchor, reinterpret_cast<const void *>(&unit_anchor<0>)) == cudaSuccess)
      tshmemi_load_unit_kernels(anchor);
    else
      (void)cudaGetLastError();  // best effort: the unit works; only its unloaded kernels stay a hazard
  }
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

TSHMEMI_STATE_INLINE StateRegistration state_registration;

}  // namespace (anonymous, or binary)

/// The state every device function reads by default: the copy above.
static __device__ __forceinline__ const tshmemi_device_state &state() { return TSHMEMI_STATE_COPY; }

}  // namespace tshmemi

#undef TSHMEMI_STATE_NAMESPACE_BEGIN
#undef TSHMEMI_STATE_INLINE
#undef TSHMEMI_STATE_COPY

#endif  // TSHMEM_CUMODULE
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_STATE_CUH
