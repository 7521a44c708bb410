#include "cuda/module_loading.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <vector>

#include "cuda/driver.h"
#include "tshmem/device/state_types.h"
#include "tshmem/tshmem.h"

namespace tshmemi {
namespace {

// Loads every kernel of the module that holds `function` (a CUfunction), those already loaded excepted.
Status load_module_of(CUfunction function) {
  TSHMEM_CHECK(cu_driver_load());
  CUmodule module = nullptr;
  TSHMEM_CU_CHECK(cuFuncGetModule(&module, function));
  unsigned count = 0;
  TSHMEM_CU_CHECK(cuModuleGetFunctionCount(&count, module));
  std::vector<CUfunction> functions(count);
  if (count > 0) TSHMEM_CU_CHECK(cuModuleEnumerateFunctions(functions.data(), count, module));
  for (CUfunction f : functions) TSHMEM_CU_CHECK(cuFuncLoad(f));
  return TSHMEM_SUCCESS;
}

}  // namespace

void prefer_eager_module_loading() {
  // setenv before any CUDA call of this process's tshmem_init: CUDA reads the variable when it starts. The
  // application's own choice stands.
  if (std::getenv("CUDA_MODULE_LOADING") == nullptr) setenv("CUDA_MODULE_LOADING", "EAGER", 0);
}

bool lazy_module_loading() {
  if (cu_driver_load() != TSHMEM_SUCCESS) return false;
  CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
  return TSHMEMI_CU(cuModuleGetLoadingMode(&mode)) == CUDA_SUCCESS && mode == CU_MODULE_LAZY_LOADING;
}

}  // namespace tshmemi

extern "C" TSHMEM_API void tshmemi_load_unit_kernels(void *cu_function) {
  // Best effort: a unit whose kernels cannot be loaded now still works; only the hazard stays.
  if (cu_function != nullptr && tshmemi::load_module_of(static_cast<CUfunction>(cu_function)) != TSHMEM_SUCCESS)
    TSHMEMI_LOG(kWarn, kLogCuda, "loading a unit's kernels before they can stall the off-node proxy: %s",
                tshmemi::last_error_message().c_str());
}
