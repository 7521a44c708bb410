/*
 * tshmem device API: the guard macro, the C constants (comparison and signal operators) and the scope tags.
 *
 * Host-only translation units may include this header (and every other device header): everything that
 * is device code sits under TSHMEM_DEVICE_COMPILE, which is defined exactly when nvcc compiles the unit.
 */
#ifndef TSHMEM_DEVICE_DEFINES_CUH
#define TSHMEM_DEVICE_DEFINES_CUH

#include <stddef.h>
#include <stdint.h>

#include "tshmem/device/state_types.h"

/// The one guard for device-only code: defined when nvcc compiles this unit (both of its passes).
#if defined(__CUDACC__)
#define TSHMEM_DEVICE_COMPILE 1
#endif

/// Bound-check the PE of every device call (trap with a message). The CMake target tshmem::device sets it
/// from the option TSHMEM_DEVICE_PE_CHECK; standalone users get the check unless they define it to 0.
#ifndef TSHMEM_DEVICE_PE_CHECK
#define TSHMEM_DEVICE_PE_CHECK 1
#endif

#include "tshmem/device/op_types.h"  // TSHMEM_CMP_*, TSHMEM_SIGNAL_* (shared with the C API)

#ifdef TSHMEM_DEVICE_COMPILE
/// Every device function of the API: inlined into the caller, so each unit carries its own copy.
#define TSHMEMI_DEVICE __device__ __forceinline__
/// Cold paths (trap messages): one out-of-line copy per unit, kept out of the hot loop.
#define TSHMEMI_DEVICE_COLD static __device__ __noinline__
#endif

#ifdef __cplusplus
namespace tshmem {

/// Scope tags for put/get/put_signal: which threads call together and share the work.
struct thread_scope {};  ///< One thread does the whole operation.
struct warp_scope {};    ///< All 32 lanes of a warp call with the same arguments, converged.
struct block_scope {};   ///< All threads of the block call with the same arguments (it synchronises the block).

/// For `static_assert(dependent_false<T>, ...)` closing an `if constexpr` chain.
template <class T>
inline constexpr bool dependent_false = false;

template <class T>
struct type_identity {
  using type = T;
};
/// Keeps a value parameter out of template deduction: p(long *, 5, pe) deduces T = long from the pointer.
template <class T>
using nondeduced_t = typename type_identity<T>::type;

}  // namespace tshmem
#endif

#endif  // TSHMEM_DEVICE_DEFINES_CUH
