// The multicast driver entry points: a second table, separate from src/cuda/driver.h, so that the
// multicast functions are resolved only where the policy allows them (design.md, "NVLink multicast").
//
// Rules of this file:
//   - nothing here is touched unless nvls_policy (nvls.h) has first found that no variable forbids
//     multicast: with TSHMEM_DISABLE_NVLS=1, NVSHMEM_DISABLE_NVLS=1 or NCCL_NVLS_ENABLE=0 the table is never
//     resolved and never called;
//   - every resolution attempt and every call through the table is counted (nvls_driver_calls), so a test
//     proves the rule above by counting, not by reading the code;
//   - a test can replace the resolver (nvls_set_resolver_for_testing) to exercise the allowed path on a
//     machine without a GPU, with stub functions instead of the driver.
// The generic entry points the multicast region also needs (cuMemMap, cuMemSetAccess, ...) are resolved
// again here, into this table, so that every driver call of the multicast path is counted in one place.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "common/error.h"

// X(name, ABI version of the prototype we call).
#define TSHMEMI_NVLS_ENTRY_POINTS(X)     \
  X(cuGetErrorString, 6000)              \
  X(cuGetErrorName, 6000)                \
  X(cuDeviceGet, 2000)                   \
  X(cuDeviceGetAttribute, 2000)          \
  X(cuMulticastGetGranularity, 12010)    \
  X(cuMulticastCreate, 12010)            \
  X(cuMulticastAddDevice, 12010)         \
  X(cuMulticastBindAddr, 12010)          \
  X(cuMulticastUnbind, 12010)            \
  X(cuMemRelease, 10020)                 \
  X(cuMemAddressReserve, 10020)          \
  X(cuMemAddressFree, 10020)             \
  X(cuMemMap, 10020)                     \
  X(cuMemUnmap, 10020)                   \
  X(cuMemSetAccess, 10020)               \
  X(cuMemExportToShareableHandle, 10020) \
  X(cuMemImportFromShareableHandle, 10020)

namespace tshmemi {

struct NvlsDriverTable {
#define TSHMEMI_NVLS_PFN(name, version) PFN_##name##_v##version name = nullptr;
  TSHMEMI_NVLS_ENTRY_POINTS(TSHMEMI_NVLS_PFN)
#undef TSHMEMI_NVLS_PFN
};

/// Resolves one entry point into *slot; false (and *slot = nullptr) when it cannot.
using NvlsResolver = bool (*)(const char *name, unsigned version, void **slot);

/// Resolves the table (all or nothing). Counted: each entry point tried adds one to nvls_driver_calls().
/// A failure is TSHMEM_ERR_CUDA naming the entry point. A successful table is kept; a failed one is retried
/// on the next call. Thread-safe.
Status nvls_driver_load();

/// The table; valid after nvls_driver_load() succeeded.
const NvlsDriverTable &nvls_driver();

/// Resolution attempts + calls through the table since the process started (or the last reset).
uint64_t nvls_driver_calls();
void nvls_reset_driver_calls();
/// Counts one call (used by TSHMEMI_NVLS).
void nvls_count_call();

/// Test hook: resolve through `resolver` instead of cudaGetDriverEntryPointByVersion (nullptr restores the
/// real one). Forgets the loaded table either way.
void nvls_set_resolver_for_testing(NvlsResolver resolver);

/// Records a failed multicast driver call, like cu_error (names the call, the driver's text, file:line).
Status nvls_cu_error(CUresult result, const char *call_text, const char *file, int line);

}  // namespace tshmemi

/// Calls through the multicast table, counting the call; the expression is the CUresult.
#define TSHMEMI_NVLS(call) (::tshmemi::nvls_count_call(), ::tshmemi::nvls_driver().call)

/// As TSHMEMI_NVLS, returning TSHMEM_ERR_CUDA naming the call on failure.
#define TSHMEMI_NVLS_CHECK(call)                                                        \
  do {                                                                                  \
    const CUresult tshmemi_nvls_result_ = TSHMEMI_NVLS(call);                           \
    if (tshmemi_nvls_result_ != CUDA_SUCCESS)                                           \
      return ::tshmemi::nvls_cu_error(tshmemi_nvls_result_, #call, __FILE__, __LINE__); \
  } while (0)
