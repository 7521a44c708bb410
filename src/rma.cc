// Host-initiated remote memory access: ptr, accessibility queries, putmem, getmem, put with signal, signal
// waits, their stream-ordered forms, quiet, barrier.
// The remote address is computed here and only here on the host (peer_address: peer_base[pe] + heap
// offset, for tshmem_ptr and the transfers); a PE of another node (peer_base 0, decided once at init) is reached at
// the same heap offset through the off-node transport chosen at init (ctx.proxy: the transport's own host calls,
// or the proxy's host channel).
#include <chrono>
#include <thread>

#include "bootstrap/bounded_wait.h"
#include "context.h"
#if TSHMEM_HAVE_CUDA
#include "cuda/signal_gpu.h"
#endif
#include "tshmem/device/defines.cuh"  // TSHMEM_CMP_*, TSHMEM_SIGNAL_*

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
  return pe >= 0 && pe < ctx.peers.n_pes() && (ctx.peers.base(pe) != 0 || ctx.proxy != nullptr);
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
  if (ctx.proxy == nullptr)
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
  return ctx.proxy->put(heap_offset, src, bytes, pe);
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
    return ctx->proxy->get(dest, target.heap_offset, bytes, pe);
  }
  return on_stream ? ctx->mem->copy_on_stream(dest, target.remote, bytes, stream)
                   : ctx->mem->copy(dest, target.remote, bytes);
}

const char *cmp_name(int cmp) {
  switch (cmp) {
    case TSHMEM_CMP_EQ: return "==";
    case TSHMEM_CMP_NE: return "!=";
    case TSHMEM_CMP_GT: return ">";
    case TSHMEM_CMP_LE: return "<=";
    case TSHMEM_CMP_LT: return "<";
    case TSHMEM_CMP_GE: return ">=";
  }
  return nullptr;
}

bool compare(uint64_t found, int cmp, uint64_t value) {
  switch (cmp) {
    case TSHMEM_CMP_EQ: return found == value;
    case TSHMEM_CMP_NE: return found != value;
    case TSHMEM_CMP_GT: return found > value;
    case TSHMEM_CMP_LE: return found <= value;
    case TSHMEM_CMP_LT: return found < value;
    case TSHMEM_CMP_GE: return found >= value;
  }
  return false;
}

// A signal word: 8-byte aligned, where user blocks live.
Status check_signal_word(const Context &ctx, const char *call, const uint64_t *sig_addr) {
  if (reinterpret_cast<uintptr_t>(sig_addr) % sizeof(uint64_t) != 0)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: sig_addr %p is not 8-byte aligned", call,
                     static_cast<const void *>(sig_addr));
  return ctx.heap->check_user_range(call, "sig_addr", sig_addr, sizeof(uint64_t));
}

// The data, then the signal. The shm heap is host memory: the signal is a release atomic on the peer's word
// after the copy. A GPU heap: the copy, then a one-thread kernel's signal_op, in stream order.
int put_signal(const char *call, void *dest, const void *src, size_t bytes, uint64_t *sig_addr, uint64_t signal,
               int sig_op, int pe, tshmemx_stream_t stream, bool on_stream) {
  ContextRef ctx = require_context(call);
  if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
  if (sig_op != TSHMEM_SIGNAL_SET && sig_op != TSHMEM_SIGNAL_ADD)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: sig_op = %d is not a signal operator (TSHMEM_SIGNAL_SET = 0, TSHMEM_SIGNAL_ADD = 1)", call,
                     sig_op);
  TSHMEM_CHECK(check_signal_word(*ctx, call, sig_addr));
  Target target;
  TSHMEM_CHECK(resolve(*ctx, call, dest, src, bytes, pe, &target));
  void *const remote_sig = peer_address(*ctx, pe, ctx->heap->offset_of(sig_addr));
  if (remote_sig == nullptr) {
    // A PE of another node: the data and then the signal through the off-node transport (the signal word is in
    // the heap; a registered buffer is reachable from its own node only).
    if (!ctx->heap->contains(sig_addr, sizeof(uint64_t)))
      return set_error(TSHMEM_ERR_UNREACHABLE_PE,
                       "%s: PE %d is on another node: sig_addr %p is in a registered buffer, reachable from its own "
                       "node only; the off-node transport serves the heap",
                       call, pe, static_cast<void *>(sig_addr));
    if (ctx->proxy == nullptr)
      return set_error(TSHMEM_ERR_UNREACHABLE_PE, "%s: PE %d is on another node and unreachable from PE %d: %s", call,
                       pe, ctx->peers.my_pe(),
                       ctx->offnode_reason.empty() ? "no off-node transport" : ctx->offnode_reason.c_str());
    if (on_stream) TSHMEM_CHECK(ctx->mem->quiet());  // after the work queued before it (see off_node_put)
    const unsigned op = sig_op == TSHMEM_SIGNAL_SET ? TSHMEMI_PROXY_SIGNAL_SET : TSHMEMI_PROXY_SIGNAL_ADD;
    // Without data, dest is any address (an empty torch tensor's is NULL): resolve() checked it only with bytes.
    return ctx->proxy->put_signal(call, target.heap_offset, src, bytes, ctx->heap->offset_of(sig_addr), signal, op, pe);
  }
  if (!ctx->mem->device_memory()) {
    if (bytes > 0) TSHMEM_CHECK(ctx->mem->copy(target.remote, src, bytes));
    auto *word = static_cast<uint64_t *>(remote_sig);
    if (sig_op == TSHMEM_SIGNAL_SET)
      __atomic_store_n(word, signal, __ATOMIC_RELEASE);
    else
      __atomic_fetch_add(word, signal, __ATOMIC_RELEASE);
    return TSHMEM_SUCCESS;
  }
#if TSHMEM_HAVE_CUDA
  struct Args {
    Context *ctx;
    Target target;
    const void *src;
    size_t bytes;
    uint64_t *sig_addr;
    uint64_t signal;
    int sig_op, pe;
  } args{ctx.get(), target, src, bytes, sig_addr, signal, sig_op, pe};
  auto launch = [](void *arg, tshmemx_stream_t s) -> Status {
    const Args &a = *static_cast<const Args *>(arg);
    if (a.bytes > 0) TSHMEM_CHECK(a.ctx->mem->copy_on_stream(a.target.remote, a.src, a.bytes, s));
    return gpu_signal_op_on_stream(a.sig_addr, a.signal, a.sig_op, a.pe, s);
  };
  if (on_stream) return launch(&args, stream);
  return gpu_run_blocking(call, launch, &args);
#else
  (void)stream, (void)on_stream;
  return set_error(TSHMEM_ERR_INTERNAL, "%s: a device heap in a build without CUDA", call);
#endif
}

int signal_wait_until(const char *call, uint64_t *sig_addr, int cmp, uint64_t value, int64_t timeout_ms,
                      uint64_t *found, tshmemx_stream_t stream, bool on_stream) {
  ContextRef ctx = require_context(call);
  if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
  if (cmp_name(cmp) == nullptr)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: cmp = %d is not a comparison (TSHMEM_CMP_EQ, NE, GT, LE, LT, GE = 0 .. 5)", call, cmp);
  TSHMEM_CHECK(check_signal_word(*ctx, call, sig_addr));
  if (timeout_ms < 0)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: timeout_ms = %lld < 0", call, (long long)timeout_ms);
  if (on_stream) {
#if TSHMEM_HAVE_CUDA
    if (ctx->mem->device_memory()) return gpu_signal_wait_on_stream(sig_addr, cmp, value, stream);
#endif
    (void)stream;
    return set_error(TSHMEM_ERR_CONFIG, "%s: stream-ordered waits run on the GPU: the %s backend has no GPU heap", call,
                     ctx->mem->name());
  }
  // Polled from the host: a plain load of host memory (shm), a small copy of device memory (GPU heaps), backing
  // off to 50 us between reads, so that the wait is bounded and costs a core little.
  const auto start = std::chrono::steady_clock::now();
  uint64_t now = 0;
  for (int spins = 0;; ++spins) {
    if (!ctx->mem->device_memory()) {
      now = __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
    } else {
#if TSHMEM_HAVE_CUDA
      TSHMEM_CHECK(gpu_signal_read(sig_addr, &now));
#endif
    }
    if (compare(now, cmp, value)) break;
    const int64_t waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    if (timeout_ms > 0 && waited >= timeout_ms)
      return set_error(TSHMEM_ERR_TIMEOUT,
                       "%s: waited %lld ms (the bound) for the signal word at %p (heap offset %llu) on PE %d to be %s "
                       "%llu; it holds %llu",
                       call, static_cast<long long>(waited), static_cast<void *>(sig_addr),
                       static_cast<unsigned long long>(ctx->heap->offset_of(sig_addr)), ctx->peers.my_pe(),
                       cmp_name(cmp), static_cast<unsigned long long>(value), static_cast<unsigned long long>(now));
    progress_while_waiting();  // what other PEs' operations on this PE need from it (bounded_wait.h)
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(spins > 10000 ? 50 : 1));
  }
  if (found != nullptr) *found = now;
  return TSHMEM_SUCCESS;
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

TSHMEM_API int tshmemx_ptr_checked(const void *dest, size_t bytes, int pe, void **out) {
  const char *call = "tshmemx_ptr_checked";
  return guarded_status(call, [&]() -> int {
    if (out == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: out is NULL", call);
    *out = nullptr;
    ContextRef ctx = require_context(call);
    if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
    TSHMEM_CHECK(check_pe(*ctx, call, pe));
    if (!ctx->heap->contains_symmetric(dest, bytes))
      return set_error(TSHMEM_ERR_INVALID_ARG,
                       "%s: [%p, +%zu bytes) is not inside the symmetric heap or one registered buffer", call, dest,
                       bytes);
    *out = peer_address(*ctx, pe, ctx->heap->offset_of(dest));
    if (*out != nullptr) return TSHMEM_SUCCESS;
    const std::vector<int> &node = ctx->boot->node_of_pe();
    const int me = ctx->peers.my_pe();
    const std::string how =
        ctx->proxy != nullptr
            ? std::string("host and stream put/get reach it through the off-node proxy")
            : "put and get cannot reach it either: " +
                  (ctx->offnode_reason.empty() ? std::string("no off-node transport") : ctx->offnode_reason);
    return set_error(TSHMEM_ERR_UNREACHABLE_PE,
                     "%s: PE %d is on another node (node %d; PE %d is on node %d): no load or store reaches its memory "
                     "from here; %s",
                     call, pe, node[static_cast<size_t>(pe)], me, node[static_cast<size_t>(me)], how.c_str());
  });
}

TSHMEM_API int tshmemx_putmem_signal(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal,
                                     int sig_op, int pe) {
  const char *call = "tshmemx_putmem_signal";
  return guarded_status(
      call, [&] { return put_signal(call, dest, src, nbytes, sig_addr, signal, sig_op, pe, nullptr, false); });
}
TSHMEM_API int tshmemx_putmem_signal_on_stream(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr,
                                               uint64_t signal, int sig_op, int pe, tshmemx_stream_t stream) {
  const char *call = "tshmemx_putmem_signal_on_stream";
  return guarded_status(
      call, [&] { return put_signal(call, dest, src, nbytes, sig_addr, signal, sig_op, pe, stream, true); });
}
TSHMEM_API int tshmemx_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t value, int64_t timeout_ms,
                                         uint64_t *found) {
  const char *call = "tshmemx_signal_wait_until";
  return guarded_status(
      call, [&] { return signal_wait_until(call, sig_addr, cmp, value, timeout_ms, found, nullptr, false); });
}
TSHMEM_API int tshmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp, uint64_t value,
                                                   tshmemx_stream_t stream) {
  const char *call = "tshmemx_signal_wait_until_on_stream";
  return guarded_status(call, [&] { return signal_wait_until(call, sig_addr, cmp, value, 0, nullptr, stream, true); });
}

TSHMEM_API void tshmem_quiet(void) {
  ContextRef ctx = require_context("tshmem_quiet");
  if (!ctx) return;
  ctx->mem->quiet();
  if (ctx->proxy) {
    ctx->proxy->quiet();  // puts to other nodes complete at their targets
    ctx->proxy->sync();   // and what other nodes put here is visible to this PE's loads
  }
}

TSHMEM_API void tshmem_barrier_all(void) {
  ContextRef ctx = require_context("tshmem_barrier_all");
  if (ctx) ctx->rendezvous->barrier_all();
}

TSHMEM_API void tshmem_sync_all(void) { tshmem_barrier_all(); }

}  // extern "C"
