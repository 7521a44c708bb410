// Host-initiated remote memory access: putmem, getmem, their stream-ordered forms, quiet, barrier.
// The remote address is computed here and only here on the host: peer_base[pe] + (local - heap_base).
#include "context.h"

namespace tshmemi {
namespace {

// Validates a transfer and returns the peer-side address of `symmetric` on `pe`.
Status remote_address(Context &ctx, const char *call, const void *symmetric, const void *local, size_t bytes, int pe,
                      void **remote) {
  TSHMEM_CHECK(check_pe(ctx, call, pe));
  if (bytes == 0) return *remote = nullptr, TSHMEM_SUCCESS;
  if (local == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: local buffer is NULL for %zu bytes", call, bytes);
  if (!ctx.heap->contains(symmetric, bytes))
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: [%p, +%zu bytes) is not inside the symmetric heap [%p, +%llu)", call,
                     symmetric, bytes, ctx.mem->local_base(), static_cast<unsigned long long>(ctx.heap->size()));
  const uint64_t base = ctx.peers.base(pe);
  if (base == 0)
    return set_error(TSHMEM_ERR_UNREACHABLE_PE, "%s: PE %d is on another node: no load/store path from PE %d", call, pe,
                     ctx.peers.my_pe());
  *remote = reinterpret_cast<void *>(base + ctx.heap->offset_of(symmetric));
  return TSHMEM_SUCCESS;
}

int put(const char *call, void *dest, const void *src, size_t bytes, int pe, tshmemx_stream_t stream, bool on_stream) {
  Context *ctx = require_context(call);
  if (ctx == nullptr) return TSHMEM_ERR_NOT_INITIALIZED;
  void *remote = nullptr;
  TSHMEM_CHECK(remote_address(*ctx, call, dest, src, bytes, pe, &remote));
  if (bytes == 0) return TSHMEM_SUCCESS;
  return on_stream ? ctx->mem->copy_on_stream(remote, src, bytes, stream) : ctx->mem->copy(remote, src, bytes);
}

int get(const char *call, void *dest, const void *src, size_t bytes, int pe, tshmemx_stream_t stream, bool on_stream) {
  Context *ctx = require_context(call);
  if (ctx == nullptr) return TSHMEM_ERR_NOT_INITIALIZED;
  void *remote = nullptr;
  TSHMEM_CHECK(remote_address(*ctx, call, src, dest, bytes, pe, &remote));
  if (bytes == 0) return TSHMEM_SUCCESS;
  return on_stream ? ctx->mem->copy_on_stream(dest, remote, bytes, stream) : ctx->mem->copy(dest, remote, bytes);
}

}  // namespace
}  // namespace tshmemi

using namespace tshmemi;

extern "C" {

TSHMEM_API int tshmem_putmem(void *dest, const void *src, size_t nbytes, int pe) {
  return put("tshmem_putmem", dest, src, nbytes, pe, nullptr, false);
}
TSHMEM_API int tshmem_getmem(void *dest, const void *src, size_t nbytes, int pe) {
  return get("tshmem_getmem", dest, src, nbytes, pe, nullptr, false);
}
TSHMEM_API int tshmemx_putmem_on_stream(void *dest, const void *src, size_t nbytes, int pe, tshmemx_stream_t stream) {
  return put("tshmemx_putmem_on_stream", dest, src, nbytes, pe, stream, true);
}
TSHMEM_API int tshmemx_getmem_on_stream(void *dest, const void *src, size_t nbytes, int pe, tshmemx_stream_t stream) {
  return get("tshmemx_getmem_on_stream", dest, src, nbytes, pe, stream, true);
}

TSHMEM_API void tshmem_quiet(void) {
  Context *ctx = require_context("tshmem_quiet");
  if (ctx != nullptr) ctx->mem->quiet();
}

TSHMEM_API void tshmem_barrier_all(void) {
  Context *ctx = require_context("tshmem_barrier_all");
  if (ctx != nullptr) ctx->heap->rendezvous(CollectiveKind::kBarrier);
}

TSHMEM_API void tshmem_sync_all(void) { tshmem_barrier_all(); }

}  // extern "C"
