// tshmemx_cumodule_init's C entry point: the checks that need the live context, then cuda/cumodule.h fills the
// module. (Without CUDA, cuda/gpu_runtime_none.cc defines the symbol.)
#include <exception>

#include "context.h"
#include "cuda/cumodule.h"

namespace tshmemi {
namespace {

Status cumodule_init(tshmemx_cumodule_t module) {
  const char *call = "tshmemx_cumodule_init";
  if (module == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: module is NULL", call);
  ContextRef ctx = require_context(call);
  if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
  if (!ctx->device_state)
    return set_error(TSHMEM_ERR_CONFIG, "%s: the %s backend keeps the heap in host memory: there is no device state",
                     call, ctx->mem->name());
  return fill_module_state(module, call);
}

}  // namespace
}  // namespace tshmemi

extern "C" TSHMEM_API int tshmemx_cumodule_init(tshmemx_cumodule_t module) {
  try {
    return tshmemi::cumodule_init(module);
  } catch (const std::exception &e) {
    return tshmemi::set_error(TSHMEM_ERR_INTERNAL, "tshmemx_cumodule_init: unexpected exception: %s", e.what());
  } catch (...) {
    return tshmemi::set_error(TSHMEM_ERR_INTERNAL, "tshmemx_cumodule_init: unexpected exception");
  }
}
