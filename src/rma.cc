// Host-initiated remote memory access: ptr, accessibility queries, putmem, getmem, their stream-ordered
// forms, quiet, barrier.
// The remote address is computed here and only here on the host (peer_address: peer_base[pe] + heap
// offset, for tshmem_ptr and the transfers); a PE of another node (peer_base 0) is reached at the same heap
// offset through the off-node proxy (ctx.host_rma).
#include "context.h"

namespace tshmemi {
namespace {

// Where a transfer goes: an address this PE can load and store (its own heap, a node-local peer's), or an
// offset in the heap of a PE of another node, reached through the off-node transport.
struct Target {
  void *remote = nullptr;
  uint64_t heap_offset = 0;
  bool off_node = false;
};

// The one host formula: where this PE sees `pe`'s copy of heap offset `offset` (its own base for itself, a
// mapped peer heap on this node), or nullptr for a PE of another node.
void *peer_address(const Context &ctx, int pe, uint64_t offset) {
  const uint64_t base = ctx.peers.base(pe);
  return base != 0 ? reinterpret_cast<void *>(base + offset) : nullptr;
}

// Host put/get reach `pe`: by load/store, or through the off-node transport.
bool reachable(const Context &ctx, int pe) {
  return pe >= 0 && pe < ctx.peers.n_pes() && (ctx.peers.base(pe) != 0 || ctx.host_rma != nullptr);
}

// Validates a transfer and resolves where `symmetric` lives on `pe`.
Status resolve(Context &ctx, const char *call, const void *symmetric, const void *local, size_t bytes, int pe,
               Target *target) {
  TSHMEM_CHECK(check_pe(ctx, call, pe));
  if (bytes == 0) return TSHMEM_SUCCESS;
  if (local == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: local buffer is NULL for %zu bytes", call, bytes);
  // tshmem's own region (device barrier counters) is no target: a put there would break a device barrier.
  TSHMEM_CHECK(ctx.heap->check_user_range(call, "the symmetric address", symmetric, bytes));
  target->heap_offset = ctx.heap->offset_of(symmetric);
  target->remote = peer_address(ctx, pe, target->heap_offset);
  if (target->remote != nullptr) return TSHMEM_SUCCESS;
  if (!ctx.heap->contains(symmetric, bytes))  // a registered buffer: mapped on this node only
    return set_error(TSHMEM_ERR_UNREACHABLE_PE,
                     "%s: PE %d is on another node: a registered buffer (tshmemx_buffer_register_symmetric) is "
                     "reachable from its own node only; the off-node proxy serves the heap",
                     call, pe);
  if (ctx.host_rma == nullptr)
    return set_error(TSHMEM_ERR_UNREACHABLE_PE, "%s: PE %d is on another node and unreachable from PE %d: %s", call, pe,
                     ctx.peers.my_pe(),
                     ctx.offnode_reason.empty() ? "no off-node transport" : ctx.offnode_reason.c_str());
  target->off_node = true;
  return TSHMEM_SUCCESS;
}

// Off-node, "on a stream" orders the transfer after the work already queued by waiting for it here (the
// proxy is a host thread); the transfer itself is done, as a blocking one, when the call returns.
Status off_node_put(Context &ctx, uint64_t heap_offset, const void *src, size_t bytes, int pe, bool on_stream) {
  if (on_stream) TSHMEM_CHECK(ctx.mem->quiet());
  return ctx.host_rma->put(heap_offset, src, bytes, pe);
}

int put(const char *call, void *dest, const void *src, size_t bytes, int pe, tshmemx_stream_t stream, bool on_stream) {
  ContextRef ctx = require_context(call);
  if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
  Target target;
  TSHMEM_CHECK(resolve(*ctx, call, dest, src, bytes, pe, &target));
  if (bytes == 0) return TSHMEM_SUCCESS;
  if (target.off_node) return off_node_put(*ctx, target.heap_offset, src, bytes, pe, on_stream);
  return on_stream ? ctx->mem->copy_on_stream(target.remote, src, bytes, stream)
                   : ctx->mem->copy(target.remote, src, bytes);
}

int get(const char *call, void *dest, const void *src, size_t bytes, int pe, tshmemx_stream_t stream, bool on_stream) {
  ContextRef ctx = require_context(call);
  if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
  Target target;
  TSHMEM_CHECK(resolve(*ctx, call, src, dest, bytes, pe, &target));
  if (bytes == 0) return TSHMEM_SUCCESS;
  if (target.off_node) {
    if (on_stream) TSHMEM_CHECK(ctx->mem->quiet());  // after the work before it (see off_node_put)
    return ctx->host_rma->get(dest, target.heap_offset, bytes, pe);
  }
  return on_stream ? ctx->mem->copy_on_stream(dest, target.remote, bytes, stream)
                   : ctx->mem->copy(dest, target.remote, bytes);
}

}  // namespace
}  // namespace tshmemi

using namespace tshmemi;

extern "C" {

TSHMEM_API void *tshmem_ptr(const void *dest, int pe) {
  ContextRef ctx = require_context("tshmem_ptr");
  if (!ctx || check_pe(*ctx, "tshmem_ptr", pe) != TSHMEM_SUCCESS) return nullptr;
  if (!ctx->heap->contains_symmetric(dest, 1)) {
    set_error(TSHMEM_ERR_INVALID_ARG, "tshmem_ptr: %p is not in the symmetric heap or a registered buffer", dest);
    return nullptr;
  }
  return peer_address(*ctx, pe, ctx->heap->offset_of(dest));  // NULL off-node: not an error (OpenSHMEM)
}

// Queries, as OpenSHMEM's shmem_pe_accessible / shmem_addr_accessible: 0 or 1, never an error.
TSHMEM_API int tshmem_pe_accessible(int pe) {
  ContextRef ctx = context();
  return ctx && reachable(*ctx, pe) ? 1 : 0;
}

TSHMEM_API int tshmem_addr_accessible(const void *addr, int pe) {
  ContextRef ctx = context();
  return ctx && ctx->heap->contains_symmetric(addr, 1) && reachable(*ctx, pe) ? 1 : 0;
}

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
  ContextRef ctx = require_context("tshmem_quiet");
  if (!ctx) return;
  ctx->mem->quiet();
  if (ctx->host_rma) {
    ctx->host_rma->quiet();  // puts to other nodes complete at their targets
    ctx->host_rma->sync();   // and what other nodes put here is visible to this PE's loads
  }
}

TSHMEM_API void tshmem_barrier_all(void) {
  ContextRef ctx = require_context("tshmem_barrier_all");
  if (ctx) ctx->heap->rendezvous(CollectiveKind::kBarrier);
}

TSHMEM_API void tshmem_sync_all(void) { tshmem_barrier_all(); }

}  // extern "C"
