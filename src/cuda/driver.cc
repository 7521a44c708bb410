#include "cuda/driver.h"

#include <cstring>
#include <mutex>

namespace tshmemi {
namespace {

struct LoadedTable {
  CuDriverTable table;
  Status status = TSHMEM_SUCCESS;
  std::string message;
};

const char *query_result_text(cudaDriverEntryPointQueryResult result) {
  switch (result) {
    case cudaDriverEntryPointSuccess: return "found";
    case cudaDriverEntryPointSymbolNotFound: return "symbol not found in the driver";
    case cudaDriverEntryPointVersionNotSufficent: return "the driver is older than this entry point's version";
  }
  return "unknown query result";
}

// Resolves one entry point at the ABI version of the prototype we call.
bool resolve(const char *name, unsigned version, void **slot, std::string *why) {
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t rc = cudaGetDriverEntryPointByVersion(name, slot, version, cudaEnableDefault, &query);
  if (rc == cudaSuccess && query == cudaDriverEntryPointSuccess && *slot != nullptr) return true;
  *why = rc != cudaSuccess ? format("cudaGetDriverEntryPointByVersion(\"%s\", version %u): %s (%s)", name, version,
                                    cudaGetErrorName(rc), cudaGetErrorString(rc))
                           : format("cudaGetDriverEntryPointByVersion(\"%s\", version %u): %s", name, version,
                                    query_result_text(query));
  *slot = nullptr;
  cudaGetLastError();  // the failure is reported through our status, not left for the application
  return false;
}

// "src/mem/vmm_backend.cc" rather than the build machine's absolute path.
const char *short_path(const char *file) {
  const char *src = std::strstr(file, "/src/");
  return src != nullptr ? src + 1 : file;
}

LoadedTable &loaded() {
  static LoadedTable instance;
  return instance;
}

}  // namespace

Status cu_driver_load() {
  static std::once_flag once;
  LoadedTable &state = loaded();
  std::call_once(once, [&state] {
    std::string why;
    bool ok = true;
#define TSHMEMI_CU_RESOLVE(name, version) \
  if (ok) ok = resolve(#name, version, reinterpret_cast<void **>(&state.table.name), &why);
    TSHMEMI_CU_ENTRY_POINTS(TSHMEMI_CU_RESOLVE)
#undef TSHMEMI_CU_RESOLVE
    if (!ok) {
      state.table = CuDriverTable{};  // all or nothing: no half-filled table
      state.status = TSHMEM_ERR_CUDA;
      state.message = "CUDA driver API unavailable: " + why;
    }
  });
  if (state.status != TSHMEM_SUCCESS) return set_error_message(state.status, state.message);
  return TSHMEM_SUCCESS;
}

const CuDriverTable &cu_driver() { return loaded().table; }

Status cu_error(CUresult result, const char *call_text, const char *file, int line) {
  const char *name = nullptr;
  const char *text = nullptr;
  const CuDriverTable &table = cu_driver();
  if (table.cuGetErrorName == nullptr || table.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (table.cuGetErrorString == nullptr || table.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  return set_error(TSHMEM_ERR_CUDA, "%s failed: %s (%s) [%s:%d]", call_text, name ? name : "CUresult",
                   text ? text : format("%d", static_cast<int>(result)).c_str(), short_path(file), line);
}

Status cuda_error(cudaError_t result, const char *call_text, const char *file, int line) {
  cudaGetLastError();  // clear the runtime's non-sticky last error: our status carries it
  return set_error(TSHMEM_ERR_CUDA, "%s failed: %s (%s) [%s:%d]", call_text, cudaGetErrorName(result),
                   cudaGetErrorString(result), short_path(file), line);
}

}  // namespace tshmemi
