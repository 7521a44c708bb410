#include "heap/heap.h"

#include "bootstrap/agree.h"
#include "heap/reserved_rule.h"

namespace tshmemi {
namespace {

const char *call_name(HeapCall call) {
  switch (call) {
    case HeapCall::kMalloc: return "tshmem_malloc";
    case HeapCall::kCalloc: return "tshmem_calloc";
    case HeapCall::kAlign: return "tshmem_align";
  }
  return "tshmem_malloc";
}

}  // namespace

SymmetricHeap::SymmetricHeap(CollectiveCheck &check, MemBackend &backend, uint64_t size, uint64_t reserved,
                             uint64_t reserved_end)
    : check_(check),
      backend_(backend),
      base_(reinterpret_cast<uintptr_t>(backend.local_base())),
      size_(size),
      reserved_(reserved),
      reserved_end_(reserved_end),
      allocator_(reserved, reserved_end, kMinAlignment) {}

bool SymmetricHeap::contains(const void *ptr, uint64_t bytes) const {
  const uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  return address >= base_ && address - base_ <= size_ && bytes <= size_ - (address - base_);
}

bool SymmetricHeap::contains_symmetric(const void *ptr, uint64_t bytes) const {
  if (contains(ptr, bytes)) return true;
  const uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  if (address < base_) return false;
  const uint64_t offset = address - base_;
  const std::lock_guard<std::mutex> lock(registered_mutex_);
  for (const Registered &r : registered_)
    if (offset >= r.offset && offset - r.offset <= r.bytes && bytes <= r.bytes - (offset - r.offset)) return true;
  return false;
}

void SymmetricHeap::add_registered(const Registered &r) {
  const std::lock_guard<std::mutex> lock(registered_mutex_);
  registered_.push_back(r);
}

void SymmetricHeap::remove_registered(uint64_t offset) {
  const std::lock_guard<std::mutex> lock(registered_mutex_);
  for (auto it = registered_.begin(); it != registered_.end(); ++it)
    if (it->offset == offset) {
      registered_.erase(it);
      return;
    }
}

std::vector<SymmetricHeap::Registered> SymmetricHeap::registered() const {
  const std::lock_guard<std::mutex> lock(registered_mutex_);
  return registered_;
}

Status SymmetricHeap::check_user_range(const char *call, const char *what, const void *ptr, uint64_t bytes) const {
  if (!contains(ptr, bytes) && contains_symmetric(ptr, bytes)) return TSHMEM_SUCCESS;  // a registered buffer
  if (!contains(ptr, bytes))
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: %s [%p, +%llu bytes) is not inside the symmetric heap [%p, +%llu)",
                     call, what, ptr, static_cast<unsigned long long>(bytes), reinterpret_cast<void *>(base_),
                     static_cast<unsigned long long>(size_));
  const char *region = reserved_region_touched(offset_of(ptr), bytes, reserved_, reserved_end_);
  if (region != nullptr && region[0] == 's')
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: %s [%p, +%llu bytes) overlaps tshmem's reserved region at the start of the heap [%p, +%llu) "
                     "(TSHMEM_INTERNAL_HEAP_BYTES): only memory from tshmem_malloc/calloc/align may be accessed",
                     call, what, ptr, static_cast<unsigned long long>(bytes), reinterpret_cast<void *>(base_),
                     static_cast<unsigned long long>(reserved_));
  if (region != nullptr)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: %s [%p, +%llu bytes) overlaps tshmem's reserved region at the end of the heap [%p, +%llu) "
                     "(the collectives' area of a job that spans nodes): only memory from tshmem_malloc/calloc/align "
                     "may be accessed",
                     call, what, ptr, static_cast<unsigned long long>(bytes),
                     reinterpret_cast<void *>(base_ + reserved_end_),
                     static_cast<unsigned long long>(size_ - reserved_end_));
  if (!backend_.backed(offset_of(ptr), bytes))
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: %s [%p, +%llu bytes) lies past the part of the heap backed by memory (%llu of %llu bytes: "
                     "the %s heap is backed as tshmem_malloc/calloc/align reach it): only memory from "
                     "tshmem_malloc/calloc/align may be accessed",
                     call, what, ptr, static_cast<unsigned long long>(bytes),
                     static_cast<unsigned long long>(backend_.backed_bytes(size_)),
                     static_cast<unsigned long long>(size_), backend_.name());
  return TSHMEM_SUCCESS;
}

Status SymmetricHeap::back_block(HeapCall call, uint64_t offset, uint64_t size, uint64_t alignment) {
  std::string what = call_name(call);
  what += call == HeapCall::kAlign
              ? format("(alignment = %llu, size = %llu)", static_cast<unsigned long long>(alignment),
                       static_cast<unsigned long long>(size))
              : format("(size = %llu)", static_cast<unsigned long long>(size));
  Bootstrap &boot = check_.bootstrap();
  Status status = backend_.back(boot, 0, offset + size, call_name(call));
  if (status == TSHMEM_SUCCESS && call == HeapCall::kCalloc) {
    // Every PE's block is zero before any PE returns and may write into a peer's.
    const Status zeroed = backend_.zero(reinterpret_cast<void *>(base_ + offset), size);
    status = agree_on_status(boot, zeroed, what.c_str());
  }
  if (status == TSHMEM_SUCCESS) return TSHMEM_SUCCESS;
  // The same message on every PE: the agreed one, and the rule.
  const std::string cause = last_error_message();
  return set_error_message(
      status == TSHMEM_ERR_CUDA ? TSHMEM_ERR_OUT_OF_MEMORY : status,
      format("%s: the block [%llu, %llu) of the %llu-byte heap cannot be backed by device memory (%llu bytes are): %s. "
             "TSHMEM_SYMMETRIC_SIZE reserves the heap's addresses; its memory is created as allocations reach it, so "
             "a heap can run out of device memory before its size: free device memory or symmetric blocks, or "
             "allocate less. Nothing was allocated",
             what.c_str(), static_cast<unsigned long long>(offset), static_cast<unsigned long long>(offset + size),
             static_cast<unsigned long long>(size_), static_cast<unsigned long long>(backend_.backed_bytes(size_)),
             cause.c_str()));
}

Status SymmetricHeap::allocate(HeapCall call, uint64_t size, uint64_t alignment, void **out) {
  const std::lock_guard<std::mutex> collective(collective_mutex_);
  *out = nullptr;
  CollectiveRequest request(call_name(call));
  if (call == HeapCall::kAlign) request.arg("alignment", static_cast<int64_t>(alignment));
  request.arg("size", static_cast<int64_t>(size));
  if (call == HeapCall::kAlign && (alignment == 0 || (alignment & (alignment - 1)) != 0)) {
    request.local_status = TSHMEM_ERR_INVALID_ARG;
    request.local_error = format("alignment %llu is not a power of two", static_cast<unsigned long long>(alignment));
  } else if (call == HeapCall::kAlign && alignment > size_) {
    request.local_status = TSHMEM_ERR_INVALID_ARG;
    request.local_error = format("alignment %llu exceeds the heap size %llu",
                                 static_cast<unsigned long long>(alignment), static_cast<unsigned long long>(size_));
  } else if (size > static_cast<uint64_t>(INT64_MAX)) {
    request.local_status = TSHMEM_ERR_OUT_OF_MEMORY;
    request.local_error = format("size %llu is larger than any heap", static_cast<unsigned long long>(size));
  } else if (size > 0) {
    // Tentative allocation: zeroed now (so calloc needs no second barrier), rolled back on disagreement.
    const auto offset = allocator_.allocate(size, alignment);
    if (!offset) {
      request.local_status = TSHMEM_ERR_OUT_OF_MEMORY;
      request.local_error = format(
          "the symmetric heap is exhausted (%llu bytes free, largest free block %llu, heap %llu; "
          "raise TSHMEM_SYMMETRIC_SIZE)",
          static_cast<unsigned long long>(allocator_.bytes_free()),
          static_cast<unsigned long long>(allocator_.largest_free()), static_cast<unsigned long long>(size_));
    } else {
      request.offset = static_cast<int64_t>(*offset);
      if (call == HeapCall::kCalloc && backend_.backed(*offset, size)) {  // else zeroed once backed
        const Status zeroed = backend_.zero(reinterpret_cast<void *>(base_ + *offset), size);
        if (zeroed != TSHMEM_SUCCESS) {
          request.local_status = zeroed;
          request.local_error = last_error_message();
        }
      }
    }
  }
  const Status agreed = check_.agree(request);
  if (agreed != TSHMEM_SUCCESS) {
    if (request.offset >= 0) allocator_.release(static_cast<uint64_t>(request.offset));  // roll back
    return agreed;
  }
  // Past the backed part (the same on every PE: the same offset, the same backed part), the heap grows first.
  if (request.offset >= 0 && !backend_.backed(static_cast<uint64_t>(request.offset), size)) {
    const Status backed = back_block(call, static_cast<uint64_t>(request.offset), size, alignment);
    if (backed != TSHMEM_SUCCESS) {
      allocator_.release(static_cast<uint64_t>(request.offset));  // roll back, on every PE
      return backed;
    }
  }
  if (request.offset >= 0) *out = reinterpret_cast<void *>(base_ + static_cast<uint64_t>(request.offset));
  TSHMEMI_LOG(kInfo, kLogHeap, "%s", request.describe().c_str());
  return TSHMEM_SUCCESS;
}

Status SymmetricHeap::release(void *ptr) {
  const std::lock_guard<std::mutex> collective(collective_mutex_);
  CollectiveRequest request("tshmem_free");  // for a live block: its size, and its offset names it
  request.offset_is_argument = true;
  request.offset_label = "at heap offset";
  if (ptr != nullptr) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
    const auto block = contains(ptr, 0) ? allocator_.block_size(address - base_) : std::nullopt;
    if (!block) {
      request.local_status = TSHMEM_ERR_INVALID_ARG;
      request.local_error = contains(ptr, 0)
                                ? format("%p (heap offset %llu) is not the start of a live block (freed twice?)", ptr,
                                         static_cast<unsigned long long>(address - base_))
                                : format("%p is outside the symmetric heap [%p, %p)", ptr,
                                         reinterpret_cast<void *>(base_), reinterpret_cast<void *>(base_ + size_));
    } else {
      request.arg("size", static_cast<int64_t>(*block));
      request.offset = static_cast<int64_t>(address - base_);
    }
  }
  // Complete this PE's outstanding transfers before anyone's block can be reused.
  const Status quiet = quiet_all();
  if (quiet != TSHMEM_SUCCESS && request.local_status == TSHMEM_SUCCESS) {
    request.local_status = quiet;
    request.local_error = last_error_message();
  }
  TSHMEM_CHECK(check_.agree(request));
  if (request.offset >= 0) allocator_.release(static_cast<uint64_t>(request.offset));
  return TSHMEM_SUCCESS;
}

Status SymmetricHeap::quiet_all() {
  TSHMEM_CHECK(backend_.quiet());
  return offnode_quiet_ ? offnode_quiet_() : TSHMEM_SUCCESS;
}

}  // namespace tshmemi
