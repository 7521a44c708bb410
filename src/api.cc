// The exported C API: argument checks and the exception fence. Logic lives in the components.
#include <cstdlib>

#include "context.h"

namespace tshmemi {
namespace {

void *allocate(const char *call, HeapCall kind, uint64_t size, uint64_t alignment) {
  return guarded(
      call,
      [&]() -> void * {
        ContextRef ctx = require_context(call);
        if (!ctx) return nullptr;
        void *block = nullptr;
        if (ctx->heap->allocate(kind, size, alignment, &block) != TSHMEM_SUCCESS) return nullptr;
        return block;
      },
      nullptr);
}

}  // namespace
}  // namespace tshmemi

using namespace tshmemi;

extern "C" {

TSHMEM_API int tshmem_init(void) {
  return guarded(
      "tshmem_init",
      [] {
        int provided = 0;
        return static_cast<int>(init_context(0, nullptr, TSHMEM_THREAD_SINGLE, &provided));
      },
      static_cast<int>(TSHMEM_ERR_INTERNAL));
}

TSHMEM_API int tshmem_init_thread(int requested, int *provided) {
  return guarded(
      "tshmem_init_thread", [&] { return static_cast<int>(init_context(0, nullptr, requested, provided)); },
      static_cast<int>(TSHMEM_ERR_INTERNAL));
}

TSHMEM_API void tshmem_query_thread(int *provided) {
  guarded(
      "tshmem_query_thread", [&] { return static_cast<int>(query_thread_level(provided)); }, 0);
}

TSHMEM_API int tshmemx_init_attr(unsigned flags, tshmemx_init_attr_t *attr) {
  return guarded(
      "tshmemx_init_attr",
      [&]() -> int {
        if ((flags & ~static_cast<unsigned>(TSHMEMX_INIT_WITH_MPI_COMM | TSHMEMX_INIT_NVSHMEM_ENV)) != 0)
          return set_error(TSHMEM_ERR_INVALID_ARG,
                           "tshmemx_init_attr: unknown flags %#x (known: TSHMEMX_INIT_WITH_MPI_COMM, "
                           "TSHMEMX_INIT_NVSHMEM_ENV)",
                           flags);
        if (flags & TSHMEMX_INIT_WITH_MPI_COMM) {
          if (attr == nullptr)
            return set_error(TSHMEM_ERR_INVALID_ARG, "tshmemx_init_attr: TSHMEMX_INIT_WITH_MPI_COMM needs an attr");
          if (attr->magic != TSHMEMX_INIT_ATTR_MAGIC || attr->size < sizeof(tshmemx_init_attr_t) ||
              attr->version != TSHMEMX_INIT_ATTR_VERSION)
            return set_error(TSHMEM_ERR_INVALID_ARG,
                             "tshmemx_init_attr: attr not initialised with TSHMEMX_INIT_ATTR_INITIALIZER "
                             "(magic %#x, size %zu, version %u; expected %#x, %zu, %u)",
                             attr->magic, attr->size, attr->version, TSHMEMX_INIT_ATTR_MAGIC,
                             sizeof(tshmemx_init_attr_t), TSHMEMX_INIT_ATTR_VERSION);
          if (attr->mpi_comm == nullptr)
            return set_error(TSHMEM_ERR_INVALID_ARG,
                             "tshmemx_init_attr: attr->mpi_comm is NULL (it must point to an MPI_Comm)");
        }
        int provided = 0;
        return init_context(flags, attr ? attr->mpi_comm : nullptr, TSHMEM_THREAD_SINGLE, &provided);
      },
      static_cast<int>(TSHMEM_ERR_INTERNAL));
}

TSHMEM_API int tshmemx_init_callbacks(unsigned flags, const tshmemx_bootstrap_callbacks_t *callbacks) {
  return guarded(
      "tshmemx_init_callbacks",
      [&]() -> int {
        if ((flags & ~static_cast<unsigned>(TSHMEMX_INIT_NVSHMEM_ENV)) != 0)
          return set_error(TSHMEM_ERR_INVALID_ARG,
                           "tshmemx_init_callbacks: unknown flags %#x (known: TSHMEMX_INIT_NVSHMEM_ENV)", flags);
        if (callbacks == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "tshmemx_init_callbacks: callbacks is NULL");
        if (callbacks->magic != TSHMEMX_BOOTSTRAP_CALLBACKS_MAGIC ||
            callbacks->size < sizeof(tshmemx_bootstrap_callbacks_t) ||
            callbacks->version != TSHMEMX_BOOTSTRAP_CALLBACKS_VERSION)
          return set_error(TSHMEM_ERR_INVALID_ARG,
                           "tshmemx_init_callbacks: callbacks not initialised with "
                           "TSHMEMX_BOOTSTRAP_CALLBACKS_INITIALIZER (magic %#x, size %zu, version %u; expected %#x, "
                           "%zu, %u)",
                           callbacks->magic, callbacks->size, callbacks->version, TSHMEMX_BOOTSTRAP_CALLBACKS_MAGIC,
                           sizeof(tshmemx_bootstrap_callbacks_t), TSHMEMX_BOOTSTRAP_CALLBACKS_VERSION);
        int provided = 0;
        return init_context(flags, nullptr, TSHMEM_THREAD_SINGLE, &provided, callbacks);
      },
      static_cast<int>(TSHMEM_ERR_INTERNAL));
}

TSHMEM_API void tshmemx_note_next_collective(const char *description, const char *local_error) {
  guarded(
      "tshmemx_note_next_collective",
      [&] {
        if (description == nullptr && local_error == nullptr)
          drop_collective_note();
        else
          note_next_collective(description ? description : "", local_error ? local_error : "");
        return 0;
      },
      0);
}

TSHMEM_API void tshmem_finalize(void) {
  guarded(
      "tshmem_finalize",
      [] {
        finalize_context();
        return 0;
      },
      0);
}

TSHMEM_API int tshmem_my_pe(void) {
  ContextRef ctx = context();
  return ctx ? ctx->peers.my_pe() : -1;
}
TSHMEM_API int tshmem_n_pes(void) {
  ContextRef ctx = context();
  return ctx ? ctx->peers.n_pes() : -1;
}

TSHMEM_API void tshmem_info_get_version(int *major, int *minor) {
  if (major) *major = TSHMEM_MAJOR_VERSION;
  if (minor) *minor = TSHMEM_MINOR_VERSION;
}

TSHMEM_API void *tshmem_malloc(size_t size) { return allocate("tshmem_malloc", HeapCall::kMalloc, size, 0); }

TSHMEM_API void *tshmem_calloc(size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / size) {
    // Still collective: every PE must make the call so that none is left waiting.
    return allocate("tshmem_calloc", HeapCall::kCalloc, UINT64_MAX, 0);
  }
  return allocate("tshmem_calloc", HeapCall::kCalloc, count * size, 0);
}

TSHMEM_API void *tshmem_align(size_t alignment, size_t size) {
  return allocate("tshmem_align", HeapCall::kAlign, size, alignment);
}

TSHMEM_API void tshmem_free(void *ptr) {
  guarded(
      "tshmem_free",
      [&] {
        ContextRef ctx = require_context("tshmem_free");
        if (ctx) ctx->heap->release(ptr);
        return 0;
      },
      0);
}

TSHMEM_API void tshmem_global_exit(int status) {
  Bootstrap *boot = nullptr;
  {
    ContextRef ctx = context();
    if (ctx && ctx->boot) boot = ctx->boot.get();
  }
  if (boot != nullptr) boot->abort(status);  // not under the lifetime lock: abort does not return
  std::exit(status);
}

TSHMEM_API const char *tshmemx_backend_name(void) {
  ContextRef ctx = context();
  return ctx ? ctx->mem->name() : nullptr;
}
TSHMEM_API void *tshmemx_heap_base(void) {
  ContextRef ctx = context();
  return ctx ? ctx->mem->local_base() : nullptr;
}
TSHMEM_API size_t tshmemx_heap_size(void) {
  ContextRef ctx = context();
  return ctx ? ctx->heap->size() : 0;
}
TSHMEM_API size_t tshmemx_heap_backed_bytes(void) {
  ContextRef ctx = context();
  return ctx ? ctx->mem->backed_bytes(ctx->heap->size()) : 0;
}
TSHMEM_API int tshmemx_local_pe(void) {
  ContextRef ctx = context();
  return ctx ? ctx->boot->local_rank() : -1;
}
TSHMEM_API int tshmemx_local_n_pes(void) {
  ContextRef ctx = context();
  return ctx ? ctx->boot->local_size() : -1;
}
TSHMEM_API int tshmemx_cuda_device(void) {
  ContextRef ctx = context();
  return ctx ? ctx->cuda_device : -1;
}

TSHMEM_API void *tshmemx_peer_base(int pe) {
  ContextRef ctx = require_context("tshmemx_peer_base");
  if (!ctx || check_pe(*ctx, "tshmemx_peer_base", pe) != TSHMEM_SUCCESS) return nullptr;
  return reinterpret_cast<void *>(ctx->peers.base(pe));
}

}  // extern "C"
