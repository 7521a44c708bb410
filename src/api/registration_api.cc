// The buffer registration's C entry points (heap/registration.h does the work).
#include "context.h"
#include "heap/registration.h"
#include "tshmem/tshmem.h"

using namespace tshmemi;

extern "C" {

TSHMEM_API void *tshmemx_buffer_register_symmetric(void *buf, size_t size, int flags) {
  const char *call = "tshmemx_buffer_register_symmetric";
  return guarded(
      call,
      [&]() -> void * {
        ContextRef ctx = require_context(call);
        if (!ctx) return nullptr;
        void *registered = nullptr;
        (void)register_symmetric(*ctx->mem, *ctx->heap, *ctx->boot, *ctx->check, buf, size, flags, &registered);
        return registered;
      },
      static_cast<void *>(nullptr));
}

TSHMEM_API int tshmemx_buffer_unregister_symmetric(void *addr, size_t size) {
  const char *call = "tshmemx_buffer_unregister_symmetric";
  return guarded_status(call, [&]() -> Status {
    ContextRef ctx = require_context(call);
    if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
    return unregister_symmetric(*ctx->mem, *ctx->heap, *ctx->check, addr, size);
  });
}

}  // extern "C"
