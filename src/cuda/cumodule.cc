// tshmemx_cumodule_init: fills the device state of a module loaded at run time (JIT code, generated
// kernels). Such a module, compiled with -DTSHMEM_CUMODULE, declares the state as a non-static
//   __constant__ tshmemi_device_state tshmemi_device_state_c;
// (the exported name agreed with the device API; under -rdc a `__device__` variable, for the reason
// device/tshmem/device/state.cuh gives), which cuModuleGetGlobal finds by name in either memory space.
//
// The module is filled with the state of the moment; it is not in the registry, so tshmem_finalize does
// not withdraw it: call tshmemx_cumodule_init again after a new tshmem_init.
#include "cuda/cumodule.h"

#include "cuda/driver.h"
#include "state/registry.h"

namespace tshmemi {
namespace {

constexpr const char *kModuleStateSymbol = "tshmemi_device_state_c";

}  // namespace

Status fill_module_state(tshmemx_cumodule_t module_handle, const char *call) {
  CUmodule module = module_handle;  // tshmemx_cumodule_t is struct CUmod_st *, i.e. CUmodule
  TSHMEM_CHECK(cu_driver_load());

  CUdeviceptr address = 0;
  size_t bytes = 0;
  const CUresult found = TSHMEMI_CU(cuModuleGetGlobal(&address, &bytes, module, kModuleStateSymbol));
  if (found == CUDA_ERROR_NOT_FOUND)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: the module has no device symbol %s (compile it with -DTSHMEM_CUMODULE so that the "
                     "tshmem device headers export it)",
                     call, kModuleStateSymbol);
  if (found != CUDA_SUCCESS)
    return cu_error(found, "cuModuleGetGlobal(module, \"tshmemi_device_state_c\")", __FILE__, __LINE__);
  if (bytes != sizeof(tshmemi_device_state))
    return set_error(
        TSHMEM_ERR_CONFIG,
        "%s: the module's %s is %zu bytes, this library's tshmemi_device_state is %zu (state version %#x): "
        "rebuild the module against this tshmem",
        call, kModuleStateSymbol, bytes, sizeof(tshmemi_device_state), TSHMEMI_DEVICE_STATE_VERSION);
  const tshmemi_device_state state = registry_current();
  // The address belongs to the module's context (the current one); UVA lets the runtime resolve it.
  TSHMEM_CUDA_CHECK(cudaMemcpy(reinterpret_cast<void *>(address), &state, sizeof(state), cudaMemcpyDefault));
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
