// The proxy on a host-memory heap (shm): copies are memcpy, atomics are the CPU's, on memory every PE of
// the node maps — atomic with respect to their own atomics on the same words.
#include <cstdlib>
#include <cstring>

#include "transport/proxy_memory.h"

namespace tshmemi {
namespace {

template <class T>
T host_amo(T *word, unsigned kind, T value, T compare) {
  T old = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  if (amo_kind::op(kind) == amo_kind::kRead) return old;
  // One compare-exchange loop serves every kind; the kinds are defined once (amo_kind::result).
  while (!__atomic_compare_exchange_n(word, &old, amo_kind::result<T>(kind, old, value, compare), false,
                                      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
  }
  return old;
}

class HostProxyMemory final : public ProxyMemory {
 public:
  Status bind_thread() override { return TSHMEM_SUCCESS; }
  Status alloc_staging(size_t bytes, void **out) override {
    *out = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (*out == nullptr) return set_error(TSHMEM_ERR_OUT_OF_MEMORY, "proxy staging: %zu bytes of host memory", bytes);
    return TSHMEM_SUCCESS;
  }
  void free_staging(void *staging) override { std::free(staging); }
  Status alloc_device_side(tshmemi_proxy_channel *, int, tshmemi_proxy_device_side **out) override {
    *out = nullptr;
    return TSHMEM_SUCCESS;
  }
  Status copy(ProxyLane, void *dst, const void *src, size_t bytes, bool *queued) override {
    std::memcpy(dst, src, bytes);
    *queued = false;
    return TSHMEM_SUCCESS;
  }
  Status apply_store(void *word, const void *staging, unsigned width) override {
    if (width == 4)
      __atomic_store_n(static_cast<uint32_t *>(word), *static_cast<const uint32_t *>(staging), __ATOMIC_RELEASE);
    else
      __atomic_store_n(static_cast<uint64_t *>(word), *static_cast<const uint64_t *>(staging), __ATOMIC_RELEASE);
    return TSHMEM_SUCCESS;
  }
  Status apply_put(void *heap_dst, const void *staging, size_t bytes) override {
    std::memcpy(heap_dst, staging, bytes);
    return TSHMEM_SUCCESS;
  }
  Status apply_amo(void *word, unsigned amo, unsigned width, uint64_t value, uint64_t compare, uint64_t *old,
                   bool) override {
    __atomic_thread_fence(__ATOMIC_RELEASE);  // earlier puts before the atomic (a signal after its data)
    const uint64_t was = width == 4 ? host_amo<uint32_t>(static_cast<uint32_t *>(word), amo,
                                                         static_cast<uint32_t>(value), static_cast<uint32_t>(compare))
                                    : host_amo<uint64_t>(static_cast<uint64_t *>(word), amo, value, compare);
    if (old != nullptr) *old = was;
    return TSHMEM_SUCCESS;
  }
  // Every copy is complete on return: a point is only a fence that orders them before what follows.
  Status mark(ProxyLane, uint64_t *point) override {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    *point = 0;
    return TSHMEM_SUCCESS;
  }
  Status passed(ProxyLane, uint64_t, bool *done) override {
    *done = true;
    return TSHMEM_SUCCESS;
  }
};

}  // namespace

Status make_host_proxy_memory(std::unique_ptr<ProxyMemory> *out) {
  *out = std::make_unique<HostProxyMemory>();
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
