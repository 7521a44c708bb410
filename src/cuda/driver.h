// The CUDA driver API, reached without linking libcuda: every entry point tshmem uses is resolved once
// through cudaGetDriverEntryPointByVersion into one table (NCCL's cudawrap, one line per entry point).
// A binary built with tshmem therefore loads on a machine without a driver; the first driver call there
// fails with a message instead of the loader refusing the program.
//
// <cuda.h> and <cudaTypedefs.h> are included for the types and PFN_* prototypes only.
//
// Multicast (cuMulticast*) is deliberately absent: it belongs to src/nvls/ and must never be resolved
// or called where multicast is forbidden (see design.md, "NVLink multicast").
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include "common/error.h"

// X(name, ABI version of the prototype): the version is the CUDA release that introduced the prototype
// we call (PFN_<name>_v<version> in cudaTypedefs.h), so a newer driver still hands us that ABI.
#define TSHMEMI_CU_ENTRY_POINTS(X)                 \
  X(cuGetErrorString, 6000)                        \
  X(cuGetErrorName, 6000)                          \
  X(cuMemGetAllocationGranularity, 10020)          \
  X(cuMemCreate, 10020)                            \
  X(cuMemRelease, 10020)                           \
  X(cuMemAddressReserve, 10020)                    \
  X(cuMemAddressFree, 10020)                       \
  X(cuMemMap, 10020)                               \
  X(cuMemUnmap, 10020)                             \
  X(cuMemSetAccess, 10020)                         \
  X(cuMemExportToShareableHandle, 10020)           \
  X(cuMemImportFromShareableHandle, 10020)         \
  X(cuMemRetainAllocationHandle, 11000)            \
  X(cuMemGetAllocationPropertiesFromHandle, 10020) \
  X(cuModuleGetGlobal, 3020)                       \
  X(cuModuleGetLoadingMode, 11070)                 \
  X(cuFuncGetModule, 11000)                        \
  X(cuModuleGetFunctionCount, 12040)               \
  X(cuModuleEnumerateFunctions, 12040)             \
  X(cuFuncLoad, 12040)                             \
  X(cuDeviceGet, 2000)                             \
  X(cuDevicePrimaryCtxGetState, 7000)              \
  X(cuDeviceGetAttribute, 2000)

namespace tshmemi {

/// One pointer per entry point, named as the driver function (cuda.h's versioning macros, such as
/// cuModuleGetGlobal -> cuModuleGetGlobal_v2, rename the member and its uses alike).
struct CuDriverTable {
#define TSHMEMI_CU_PFN(name, version) PFN_##name##_v##version name = nullptr;
  TSHMEMI_CU_ENTRY_POINTS(TSHMEMI_CU_PFN)
#undef TSHMEMI_CU_PFN
};

/// Resolves the table, once per process (thread-safe); later calls return the first outcome.
/// TSHMEM_ERR_CUDA names the entry point that could not be resolved and why.
Status cu_driver_load();

/// The table. Only valid after cu_driver_load() succeeded.
const CuDriverTable &cu_driver();

/// Records a failed driver call: "<call text> failed: CUDA_ERROR_X (driver's text) [file:line]".
Status cu_error(CUresult result, const char *call_text, const char *file, int line);
/// Same for a runtime call.
Status cuda_error(cudaError_t result, const char *call_text, const char *file, int line);

}  // namespace tshmemi

/// Calls a driver entry point through the table; the expression is the CUresult.
///   CUresult r = TSHMEMI_CU(cuMemUnmap(va, size));
#define TSHMEMI_CU(call) (::tshmemi::cu_driver().call)

/// Calls a driver entry point through the table and returns TSHMEM_ERR_CUDA naming the call on failure.
///   TSHMEM_CU_CHECK(cuMemMap(va, size, 0, handle, 0));
#define TSHMEM_CU_CHECK(call)                                                                                          \
  do {                                                                                                                 \
    const CUresult tshmemi_cu_result_ = TSHMEMI_CU(call);                                                              \
    if (tshmemi_cu_result_ != CUDA_SUCCESS) return ::tshmemi::cu_error(tshmemi_cu_result_, #call, __FILE__, __LINE__); \
  } while (0)

/// Calls a CUDA runtime function and returns TSHMEM_ERR_CUDA naming the call on failure.
#define TSHMEM_CUDA_CHECK(call)                                                      \
  do {                                                                               \
    const cudaError_t tshmemi_cuda_result_ = (call);                                 \
    if (tshmemi_cuda_result_ != cudaSuccess)                                         \
      return ::tshmemi::cuda_error(tshmemi_cuda_result_, #call, __FILE__, __LINE__); \
  } while (0)
