#include "nvls/nvls_driver.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace tshmemi {
namespace {

struct NvlsLoader {
  std::mutex mutex;
  NvlsDriverTable table;
  bool loaded = false;
  NvlsResolver resolver = nullptr;  // nullptr: the CUDA runtime's entry-point query
};

NvlsLoader &loader() {
  static NvlsLoader instance;
  return instance;
}

std::atomic<uint64_t> g_calls{0};

bool runtime_resolve(const char *name, unsigned version, void **slot) {
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t rc = cudaGetDriverEntryPointByVersion(name, slot, version, cudaEnableDefault, &query);
  if (rc == cudaSuccess && query == cudaDriverEntryPointSuccess && *slot != nullptr) return true;
  cudaGetLastError();  // reported through our status, not left for the application
  *slot = nullptr;
  return false;
}

const char *short_path(const char *file) {
  const char *src = std::strstr(file, "/src/");
  return src != nullptr ? src + 1 : file;
}

}  // namespace

Status nvls_driver_load() {
  NvlsLoader &state = loader();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.loaded) return TSHMEM_SUCCESS;
  const NvlsResolver resolve = state.resolver != nullptr ? state.resolver : &runtime_resolve;
  NvlsDriverTable table;
  const char *missing = nullptr;
#define TSHMEMI_NVLS_RESOLVE(name, version)                                                \
  if (missing == nullptr) {                                                                \
    g_calls.fetch_add(1, std::memory_order_relaxed);                                       \
    if (!resolve(#name, version, reinterpret_cast<void **>(&table.name))) missing = #name; \
  }
  TSHMEMI_NVLS_ENTRY_POINTS(TSHMEMI_NVLS_RESOLVE)
#undef TSHMEMI_NVLS_RESOLVE
  if (missing != nullptr)
    return set_error(TSHMEM_ERR_CUDA, "multicast: the driver entry point %s could not be resolved (driver too old?)",
                     missing);
  state.table = table;
  state.loaded = true;
  return TSHMEM_SUCCESS;
}

const NvlsDriverTable &nvls_driver() { return loader().table; }

uint64_t nvls_driver_calls() { return g_calls.load(std::memory_order_relaxed); }
void nvls_reset_driver_calls() { g_calls.store(0, std::memory_order_relaxed); }
void nvls_count_call() { g_calls.fetch_add(1, std::memory_order_relaxed); }

void nvls_set_resolver_for_testing(NvlsResolver resolver) {
  NvlsLoader &state = loader();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.resolver = resolver;
  state.table = NvlsDriverTable{};
  state.loaded = false;
}

Status nvls_cu_error(CUresult result, const char *call_text, const char *file, int line) {
  // The error-text entry points are part of this table: asking them is not a multicast call, and it is
  // only reached after a multicast call, so it is not counted.
  const NvlsDriverTable &table = nvls_driver();
  const char *name = nullptr;
  const char *text = nullptr;
  if (table.cuGetErrorName == nullptr || table.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (table.cuGetErrorString == nullptr || table.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  return set_error(TSHMEM_ERR_CUDA, "%s failed: %s (%s) [%s:%d]", call_text, name ? name : "CUresult",
                   text ? text : format("%d", static_cast<int>(result)).c_str(), short_path(file), line);
}

}  // namespace tshmemi
