#include "heap/registration.h"

#include <algorithm>
#include <mutex>

namespace tshmemi {
namespace {

constexpr const char *kRegister = "tshmemx_buffer_register_symmetric";
constexpr const char *kUnregister = "tshmemx_buffer_unregister_symmetric";

/// Registrations of one PE run one at a time (the prepared handle is the backend's single pending slot).
std::mutex &registration_mutex() {
  static std::mutex mutex;
  return mutex;
}

/// The lowest offset of the registration range where `bytes` fit between the live registrations (first fit).
bool first_fit(const std::vector<SymmetricHeap::Registered> &live, uint64_t base, uint64_t capacity, uint64_t bytes,
               uint64_t *offset) {
  std::vector<SymmetricHeap::Registered> sorted = live;
  std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.offset < b.offset; });
  uint64_t at = 0;
  for (const auto &r : sorted) {
    const uint64_t begin = r.offset - base;
    if (begin >= at && begin - at >= bytes) break;
    at = std::max(at, begin + r.bytes);
  }
  if (at > capacity || capacity - at < bytes) return false;
  *offset = at;
  return true;
}

/// A (un)registration as the collective check compares it across PEs: the size, and the offset in the
/// registration range, which names the buffer.
CollectiveRequest registration_request(const char *call, size_t size) {
  CollectiveRequest request(call);
  request.arg("size", static_cast<int64_t>(size));
  request.offset_is_argument = true;
  request.offset_label = "at registration offset";
  return request;
}

/// This PE's verdict on a registration and the offset it would use; nothing held on failure.
Status check_register(MemBackend &mem, const SymmetricHeap &heap, void *buf, size_t size, int flags, uint64_t *offset) {
  if (buf == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: buf is NULL", kRegister);
  if (size == 0) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: size is 0: a buffer has at least one byte", kRegister);
  if (flags != 0)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: flags = %d: no flag is defined; pass 0", kRegister, flags);
  const uint64_t capacity = mem.registration_capacity(), granularity = mem.registration_granularity();
  if (capacity == 0 || granularity == 0)
    return set_error(TSHMEM_ERR_CONFIG,
                     "%s: the %s backend cannot register buffers (only vmm maps a cuMemCreate allocation into the "
                     "peers' views): run with TSHMEM_MEM_BACKEND=vmm",
                     kRegister, mem.name());
  if (size % granularity != 0)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: size %zu is not a multiple of the allocation granularity, %llu bytes "
                     "(cuMemGetAllocationGranularity, recommended)",
                     kRegister, size, static_cast<unsigned long long>(granularity));
  if (reinterpret_cast<uintptr_t>(buf) % granularity != 0)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: buf = %p is not aligned to the allocation granularity, %llu bytes",
                     kRegister, buf, static_cast<unsigned long long>(granularity));
  const std::vector<SymmetricHeap::Registered> live = heap.registered();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(buf);
  for (const auto &r : live) {
    const uintptr_t other = reinterpret_cast<uintptr_t>(r.user);
    if (begin < other + r.bytes && other < begin + size)
      return set_error(TSHMEM_ERR_INVALID_ARG,
                       "%s: buf [%p, +%zu) overlaps a buffer registered before, [%p, +%llu): unregister it first",
                       kRegister, buf, size, r.user, static_cast<unsigned long long>(r.bytes));
  }
  if (!first_fit(live, mem.registration_base(), capacity, size, offset)) {
    uint64_t used = 0;
    for (const auto &r : live) used += r.bytes;
    return set_error(TSHMEM_ERR_OUT_OF_MEMORY,
                     "%s: size %zu does not fit the registration range (%llu bytes, the heap's size; %llu in use): "
                     "unregister a buffer or raise TSHMEM_SYMMETRIC_SIZE",
                     kRegister, size, static_cast<unsigned long long>(capacity), static_cast<unsigned long long>(used));
  }
  return mem.prepare_registration(kRegister, buf, size);
}

}  // namespace

Status register_symmetric(MemBackend &mem, SymmetricHeap &heap, Bootstrap &boot, CollectiveCheck &check, void *buf,
                          size_t size, int flags, void **out) {
  *out = nullptr;
  const std::lock_guard<std::mutex> lock(registration_mutex());
  CollectiveRequest request = registration_request(kRegister, size);
  uint64_t offset = 0;
  const Status local = check_register(mem, heap, buf, size, flags, &offset);
  if (local == TSHMEM_SUCCESS) {
    request.offset = static_cast<int64_t>(offset);
  } else {
    request.local_status = local;
    request.local_error = last_error_message();
  }
  const Status agreed = check.agree(request);  // every PE the same verdict, disagreeing PEs named
  if (agreed != TSHMEM_SUCCESS) {
    mem.abandon_registration();
    return agreed;
  }
  const uint64_t at = mem.registration_base() + offset;
  TSHMEM_CHECK(mem.map_registration(boot, offset, size));  // agreed inside
  heap.add_registered({at, size, buf});
  *out = static_cast<char *>(mem.local_base()) + at;
  return TSHMEM_SUCCESS;
}

Status unregister_symmetric(MemBackend &mem, SymmetricHeap &heap, CollectiveCheck &check, void *addr, size_t size) {
  const std::lock_guard<std::mutex> lock(registration_mutex());
  CollectiveRequest request = registration_request(kUnregister, size);
  Status local = TSHMEM_SUCCESS;
  const SymmetricHeap::Registered *found = nullptr;
  const std::vector<SymmetricHeap::Registered> live = heap.registered();
  const uintptr_t base = reinterpret_cast<uintptr_t>(mem.local_base());
  for (const auto &r : live)
    if (addr != nullptr && reinterpret_cast<uintptr_t>(addr) == base + r.offset) found = &r;
  if (addr == nullptr) {
    local = set_error(TSHMEM_ERR_INVALID_ARG, "%s: addr is NULL", kUnregister);
  } else if (found == nullptr) {
    local = set_error(TSHMEM_ERR_INVALID_ARG,
                      "%s: addr = %p is no registered buffer (pass the address tshmemx_buffer_register_symmetric "
                      "returned; %zu buffers are registered)",
                      kUnregister, addr, live.size());
  } else if (found->bytes != size) {
    local = set_error(TSHMEM_ERR_INVALID_ARG, "%s: size %zu differs from the %llu bytes registered at %p", kUnregister,
                      size, static_cast<unsigned long long>(found->bytes), addr);
  } else {
    request.offset = static_cast<int64_t>(found->offset - mem.registration_base());
  }
  if (local != TSHMEM_SUCCESS) {
    request.local_status = local;
    request.local_error = last_error_message();
  }
  TSHMEM_CHECK(check.agree(request));
  const uint64_t offset = found->offset;
  heap.remove_registered(offset);
  return mem.unmap_registration(offset - mem.registration_base());
}

}  // namespace tshmemi
