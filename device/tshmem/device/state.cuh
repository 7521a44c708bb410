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
 * needs one copy, not one per unit. Every unit declares the copy `extern __constant__`; its one definition, its fill
 * callback and its registration live in the static device library libtshmem_device.a (device/state_rdc.cu), which
 * tshmem::device, `pkg-config --libs tshmem` and tshmem::nvshmem put on the link line, as NVSHMEM's
 * libnvshmem_device.a holds its state. Each unit refers to the archive from device code (an anchor kernel naming
 * the copy) and from host code (a static initializer), so both links take its object. All of it has hidden
 * visibility, so an -rdc shared library (its own device program, linking its own copy of the archive) keeps its own
 * copy and registration instead of binding to the executable's. Assumes one device link per binary (what CMake's
 * CUDA_SEPARABLE_COMPILATION does). A device link without the archive fails with an undefined reference to
 * `tshmemi::binary::state_in_libtshmem_device`: the name says what to link.
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

#if !defined(TSHMEM_CUMODULE) && !defined(__CUDACC_RDC__)
#include "tshmem/device/impl/state_fill.cuh"
#endif

#if defined(TSHMEM_CUMODULE)

#if defined(TSHMEM_CUMODULE_EXTERN) && defined(__CUDACC_RDC__)
extern "C" __device__ tshmemi_device_state tshmemi_device_state_c;
#elif defined(TSHMEM_CUMODULE_EXTERN)
extern "C" __constant__ tshmemi_device_state tshmemi_device_state_c;
#elif defined(__CUDACC_RDC__)
/// The module's copy, filled by tshmemx_cumodule_init; one per module however many units define it (a
/// global-namespace variable's symbol is its plain name, so cuModuleGetGlobal finds it). In global memory:
/// nvlink would lay out every unit's weak __constant__ copy in the bank (docs/design.md).
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

#elif defined(__CUDACC_RDC__)  // -rdc: the binary's one copy, in libtshmem_device.a

#if __cplusplus < 201703L
#error "tshmem device API under -rdc needs C++17 (inline variables): compile with -std=c++17"
#endif

// Hidden: an -rdc shared library is its own device program and keeps its own copy and registration.
#define TSHMEMI_BINARY_NAMESPACE_BEGIN inline namespace binary __attribute__((visibility("hidden"))) {
#define TSHMEMI_BINARY_NAMESPACE_END }
namespace tshmemi {
TSHMEMI_BINARY_NAMESPACE_BEGIN

/// This binary's copy, in constant memory: defined once, in libtshmem_device.a (device/state_rdc.cu), whose object
/// also fills it and registers the fill (after the CUDA runtime has registered the whole device program: the
/// archive's object comes after the units on the link line, so its static initializers run after theirs).
extern __constant__ tshmemi_device_state state_in_libtshmem_device;

/// A kernel of every unit, never launched, that names the copy: the device link takes the archive's definition.
template <int>
__global__ void unit_anchor(const void **copy) {
  *copy = &state_in_libtshmem_device;
}

/// Defined in libtshmem_device.a; does nothing. Every unit calls it during static initialisation, so the host link
/// takes the archive's object (the state's shadow, the fill, the registration) too; its argument instantiates the
/// anchor kernel above.
int link_libtshmem_device(const void *unit_kernel);
inline const int libtshmem_device_linked = link_libtshmem_device(reinterpret_cast<const void *>(&unit_anchor<0>));

TSHMEMI_BINARY_NAMESPACE_END
#undef TSHMEMI_BINARY_NAMESPACE_BEGIN
#undef TSHMEMI_BINARY_NAMESPACE_END

/// The state every device function reads by default: the copy above.
static __device__ __forceinline__ const tshmemi_device_state &state() { return state_in_libtshmem_device; }

}  // namespace tshmemi

#else  // no -rdc: this unit's copy plus its registration

namespace tshmemi {
namespace {

/// This unit's copy, in constant memory.
__constant__ tshmemi_device_state tshmemi_state_c;

/// A kernel of this unit's module, never launched: the fill names the module by it (fill_copy).
template <int>
__global__ void unit_anchor() {}

/// Fill callback (tshmemi_state_fill_fn) of the copy above, through this unit's runtime.
int fill_state(int cuda_device, const tshmemi_device_state *state) {
  return fill_copy(tshmemi_state_c, reinterpret_cast<const void *>(&unit_anchor<0>), cuda_device, state);
}

StateRegistration<&fill_state> state_registration;

}  // namespace

/// The state every device function reads by default: the copy above.
static __device__ __forceinline__ const tshmemi_device_state &state() { return tshmemi_state_c; }

}  // namespace tshmemi

#endif  // TSHMEM_CUMODULE
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_STATE_CUH
