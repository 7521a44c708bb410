// The `vmm` backend: every PE reserves the VA of the whole heap for itself and for each node-local peer at init, and
// backs it with memory in chunks (cuMemCreate, exportable as a POSIX file descriptor) as allocations reach it. Each
// chunk is mapped at the same offset in the owner's view and in every node peer's view of the owner, so peer bases
// never move and kernels need no update when the heap grows (docs/design.md, "A GPU heap backed as it is used").
//
//   create:   reserve VA (own view) -> first chunk: cuMemCreate(POSIX_FD) -> cuMemMap -> cuMemSetAccess -> export fd
//             -> fds cross over the node-local socket (handle_exchange.cc)
//             -> per peer: reserve VA (its view) -> import -> map at the chunk's offset -> set access
//   back:     (an allocation past the backed part, collective) the next chunk, as above, each stage agreed
//   destroy:  cudaDeviceSynchronize; every PE unmaps its peers' chunks and frees their views; barrier; each unmaps and
//             releases its own chunks and frees its view.
//
// Every view (own and peers') reserves twice the heap's VA: the heap, then the registration range, where
// tshmemx_buffer_register_symmetric maps an application's cuMemCreate allocation (POSIX fd handle type) at the
// same offset in every view: retained (cuMemRetainAllocationHandle), exported, crossed to the node peers like the
// heap's descriptors, imported and mapped. Unregistering unmaps every view and releases the handles.
//
// Each step ends in agreement (run_step, init_steps.h; agree_on_status), so a failure on one PE fails it on all;
// create then runs the same ordered teardown and returns with nothing mapped anywhere (local_base() == nullptr), and
// a failed back() drops the chunk it was making on every PE, leaving the heap as it was.
#include <cstring>
#include <map>

#include "bootstrap/agree.h"
#include "cuda/device_guard.h"
#include "cuda/driver.h"
#include "cuda/gpu_mem_backend.h"
#include "init_steps.h"
#include "mem/backing_plan.h"
#include "mem/handle_exchange.h"
#include "tshmem/device/internal_regions.h"  // TSHMEM_INTERNAL_HEAP_BYTES

namespace tshmemi {
namespace {

constexpr CUmemAllocationHandleType kHandleType = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

/// User heap backed at init, past tshmem's own region at the heap's start: small, so init costs the same whatever
/// the heap's size; allocations past it grow the backed part (BackingPlan).
constexpr uint64_t kFirstUserBytes = 32ull << 20;

void warn_on_failure(CUresult result, const char *what) {
  if (result != CUDA_SUCCESS) {
    cu_error(result, what, __FILE__, __LINE__);
    TSHMEMI_LOG(kWarn, kLogMem, "vmm teardown: %s", last_error_message().c_str());
  }
}

void grant_access(CUmemAccessDesc *access, int device) {
  std::memset(access, 0, sizeof(*access));
  access->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access->location.id = device;
  access->flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

// A reserved VA range (one view: a heap and its registration range), freed on destruction. Whatever is mapped in
// it must be unmapped first.
class VaRange {
 public:
  VaRange() = default;
  VaRange(const VaRange &) = delete;
  VaRange &operator=(const VaRange &) = delete;
  ~VaRange() {
    if (va_ != 0) warn_on_failure(TSHMEMI_CU(cuMemAddressFree(va_, bytes_)), "cuMemAddressFree");
  }

  Status reserve(size_t bytes, size_t alignment) {
    TSHMEM_CU_CHECK(cuMemAddressReserve(&va_, bytes, alignment, 0, 0));
    bytes_ = bytes;
    return TSHMEM_SUCCESS;
  }
  CUdeviceptr va() const { return va_; }

 private:
  CUdeviceptr va_ = 0;
  size_t bytes_ = 0;
};

// One physical allocation (this PE's own chunk, or a peer's imported) mapped at one address of a view. Undone in
// reverse order on destruction: unmap, release the handle.
class MappedChunk {
 public:
  MappedChunk() = default;
  MappedChunk(const MappedChunk &) = delete;
  MappedChunk &operator=(const MappedChunk &) = delete;
  ~MappedChunk() {
    if (mapped_) warn_on_failure(TSHMEMI_CU(cuMemUnmap(va_, size_)), "cuMemUnmap");
    if (has_handle_) warn_on_failure(TSHMEMI_CU(cuMemRelease(handle_)), "cuMemRelease");
  }

  Status create(size_t size, const CUmemAllocationProp &prop) {
    TSHMEM_CU_CHECK(cuMemCreate(&handle_, size, &prop, 0));
    has_handle_ = true;
    size_ = size;
    return TSHMEM_SUCCESS;
  }

  Status import(int fd, size_t size) {
    TSHMEM_CU_CHECK(
        cuMemImportFromShareableHandle(&handle_, reinterpret_cast<void *>(static_cast<uintptr_t>(fd)), kHandleType));
    has_handle_ = true;
    size_ = size;
    return TSHMEM_SUCCESS;
  }

  /// Maps the allocation at `va` (inside a reserved view) and grants `device` access.
  Status map(CUdeviceptr va, int device) {
    TSHMEM_CU_CHECK(cuMemMap(va, size_, 0, handle_, 0));
    va_ = va;
    mapped_ = true;
    CUmemAccessDesc access;
    grant_access(&access, device);
    TSHMEM_CU_CHECK(cuMemSetAccess(va_, size_, &access, 1));
    return TSHMEM_SUCCESS;
  }

  Status export_fd(UniqueFd *out) {
    int fd = -1;
    TSHMEM_CU_CHECK(cuMemExportToShareableHandle(&fd, handle_, kHandleType, 0));
    out->reset(fd);
    return TSHMEM_SUCCESS;
  }

 private:
  CUmemGenericAllocationHandle handle_ = 0;
  CUdeviceptr va_ = 0;
  size_t size_ = 0;
  bool has_handle_ = false, mapped_ = false;
};

/// One chunk of the heap while it is being made on every PE: this PE's own part and its views of the peers' parts.
/// Dropped (unmapped, released) unless committed.
struct PendingChunk {
  BackingPlan::Range range;
  std::unique_ptr<MappedChunk> own;
  std::vector<std::unique_ptr<MappedChunk>> peers;
};

/// One registered buffer as this PE holds it: the handles (first the own retained one, then the peers' imported
/// ones) and the views they are mapped into, each `bytes` long. Undone in reverse on destruction.
class Registration {
 public:
  explicit Registration(uint64_t bytes) : bytes_(bytes) {}
  Registration(const Registration &) = delete;
  Registration &operator=(const Registration &) = delete;
  ~Registration() {
    for (CUdeviceptr va : mapped_) warn_on_failure(TSHMEMI_CU(cuMemUnmap(va, bytes_)), "cuMemUnmap (registration)");
    for (CUmemGenericAllocationHandle h : handles_)
      warn_on_failure(TSHMEMI_CU(cuMemRelease(h)), "cuMemRelease (registration)");
  }

  /// Keeps `handle` until destruction.
  void hold(CUmemGenericAllocationHandle handle) { handles_.push_back(handle); }
  CUmemGenericAllocationHandle own_handle() const { return handles_.front(); }

  /// Maps `handle` (held) at `va`, inside a view's registration range, and grants `device` access.
  Status map(CUmemGenericAllocationHandle handle, CUdeviceptr va, int device) {
    TSHMEM_CU_CHECK(cuMemMap(va, bytes_, 0, handle, 0));
    mapped_.push_back(va);
    CUmemAccessDesc access;
    grant_access(&access, device);
    TSHMEM_CU_CHECK(cuMemSetAccess(va, bytes_, &access, 1));
    return TSHMEM_SUCCESS;
  }

 private:
  uint64_t bytes_;
  std::vector<CUmemGenericAllocationHandle> handles_;
  std::vector<CUdeviceptr> mapped_;
};

class VmmBackend final : public GpuMemBackend {
 public:
  VmmBackend(int cuda_device, int64_t init_timeout_ms)
      : GpuMemBackend(cuda_device), init_timeout_ms_(init_timeout_ms) {}
  ~VmmBackend() override {
    // Normally destroy() ran; this only covers a context torn down without it (local unmaps, no barrier).
    release_peers();
    release_own();
  }

  const char *name() const override { return "vmm"; }

  Status create(Bootstrap &boot, uint64_t heap_size) override {
    const Status status = create_steps(boot, heap_size);
    if (status != TSHMEM_SUCCESS) {
      // Every PE agreed on this failure: all of them undo their mappings together, in order.
      const std::string message = last_error_message();
      teardown(boot);
      set_error_message(status, message);
    }
    return status;
  }

  Status destroy(Bootstrap &boot) override { return teardown(boot); }

  uint64_t backed_bytes(uint64_t heap_bytes) const override {
    return plan_ != nullptr ? std::min(plan_->backed_bytes(), heap_bytes) : 0;
  }
  bool backed(uint64_t offset, uint64_t bytes) const override {
    return plan_ != nullptr && plan_->backed(offset, bytes);
  }

  Status back(Bootstrap &boot, uint64_t begin, uint64_t end, const char *call) override {
    if (plan_ == nullptr) return set_error(TSHMEM_ERR_INTERNAL, "%s: the vmm heap does not exist", call);
    DeviceGuard guard;
    TSHMEM_CHECK(guard.enter(device_));
    // The same plan on every PE, so every PE makes the same chunks in the same order.
    for (const BackingPlan::Range &range : plan_->plan(begin, end, true)) {
      Status status = add_chunk(boot, range, call);
      // Where a geometric step cannot be backed, exactly what [begin, end) needs may still be.
      const uint64_t needed_end =
          std::min(plan_->heap_bytes(), (end + plan_->granularity() - 1) / plan_->granularity() * plan_->granularity());
      if (status != TSHMEM_SUCCESS && range.end() > needed_end && range.offset < needed_end) {
        TSHMEMI_LOG(kInfo, kLogMem, "%s: backing [%llu, %llu) failed (%s); backing only [%llu, %llu)", call,
                    static_cast<unsigned long long>(range.offset), static_cast<unsigned long long>(range.end()),
                    last_error_message().c_str(), static_cast<unsigned long long>(range.offset),
                    static_cast<unsigned long long>(needed_end));
        status = add_chunk(boot, {range.offset, needed_end - range.offset}, call);
      }
      TSHMEM_CHECK(status);
    }
    return TSHMEM_SUCCESS;
  }

  uint64_t registration_capacity() const override { return plan_ != nullptr ? plan_->heap_bytes() : 0; }
  uint64_t registration_base() const override { return plan_ != nullptr ? plan_->heap_bytes() : 0; }
  uint64_t registration_granularity() const override { return granularity_; }

  Status prepare_registration(const char *call, void *buf, uint64_t bytes) override {
    abandon_registration();
    DeviceGuard guard;
    TSHMEM_CHECK(guard.enter(device_));
    CUmemGenericAllocationHandle handle = 0;
    const CUresult retained = TSHMEMI_CU(cuMemRetainAllocationHandle(&handle, buf));
    if (retained != CUDA_SUCCESS) {
      cu_error(retained, "cuMemRetainAllocationHandle", __FILE__, __LINE__);
      TSHMEMI_LOG(kInfo, kLogMem, "%s: %s", call, last_error_message().c_str());
      return set_error(TSHMEM_ERR_INVALID_ARG,
                       "%s: buf = %p is not a CUDA VMM allocation (cuMemCreate + cuMemMap); cudaMalloc or host "
                       "memory cannot be registered",
                       call, buf);
    }
    auto reg = std::make_unique<Registration>(bytes);
    reg->hold(handle);  // released with `reg` on every early return
    CUmemAllocationProp prop;
    std::memset(&prop, 0, sizeof(prop));
    TSHMEM_CU_CHECK(cuMemGetAllocationPropertiesFromHandle(&prop, handle));
    if ((prop.requestedHandleTypes & kHandleType) == 0)
      return set_error(
          TSHMEM_ERR_INVALID_ARG,
          "%s: buf = %p was created without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (requestedHandleTypes "
          "0x%x): peers cannot import it",
          call, buf, static_cast<unsigned>(prop.requestedHandleTypes));
    if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop.location.id != device_)
      return set_error(TSHMEM_ERR_INVALID_ARG, "%s: buf = %p is not memory of this PE's device %d", call, buf, device_);
    int fd = -1;
    TSHMEM_CU_CHECK(cuMemExportToShareableHandle(&fd, handle, kHandleType, 0));
    pending_fd_.reset(fd);
    pending_ = std::move(reg);
    return TSHMEM_SUCCESS;
  }

  void abandon_registration() override {
    pending_.reset();
    pending_fd_.reset();
  }

  Status map_registration(Bootstrap &boot, uint64_t offset, uint64_t bytes) override {
    std::vector<PeerFd> received;
    const Status exchanged = exchange_fds_node_local(boot, pending_fd_.get(), bytes, init_timeout_ms_, &received);
    pending_fd_.reset();
    std::unique_ptr<Registration> reg = std::move(pending_);
    if (exchanged != TSHMEM_SUCCESS) return exchanged;  // agreed inside, on every PE
    const Status local = reg != nullptr ? map_views(*reg, offset, received)
                                        : set_error(TSHMEM_ERR_INTERNAL, "map_registration: nothing prepared");
    // On failure every PE returns the same message, and `reg` unmaps whatever this PE mapped.
    TSHMEM_CHECK(agree_on_status(boot, local, "tshmemx_buffer_register_symmetric (mapping the views)"));
    registrations_[offset] = std::move(reg);
    return TSHMEM_SUCCESS;
  }

  Status unmap_registration(uint64_t offset) override {
    TSHMEM_CHECK(quiet());  // no kernel of this PE still reaches the buffer through these views
    DeviceGuard guard;
    TSHMEM_CHECK(guard.enter(device_));
    registrations_.erase(offset);
    return TSHMEM_SUCCESS;
  }

 private:
  Status create_steps(Bootstrap &boot, uint64_t heap_size) {
    DeviceGuard guard;
    peer_bases_.assign(static_cast<size_t>(boot.size()), nullptr);
    UniqueFd exported;
    PendingChunk first;
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapOwn,
        [&] {
          Status status = guard.enter(device_);
          if (status == TSHMEM_SUCCESS) status = cu_driver_load();  // the driver API, before the first cuMem call
          if (status == TSHMEM_SUCCESS) status = reserve_own(heap_size);
          if (status != TSHMEM_SUCCESS) return status;
          // The first chunk: tshmem's own region at the heap's start, and the first user bytes.
          const uint64_t first_bytes =
              std::min(plan_->heap_bytes(), round_up(TSHMEM_INTERNAL_HEAP_BYTES + kFirstUserBytes));
          first.range = {0, first_bytes};
          return create_own_chunk(&first, &exported);
        },
        "vmm backend"));
    own_base_ = reinterpret_cast<void *>(own_view_->va());
    peer_bases_[static_cast<size_t>(boot.rank())] = own_base_;  // the own slot is the own base

    std::vector<PeerFd> received;
    TSHMEM_CHECK(exchange_fds_node_local(boot, exported.get(), first.range.bytes, init_timeout_ms_, &received));
    exported.reset();  // every peer holds its own reference now
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapExchange, [] { return TSHMEM_SUCCESS; }, "vmm backend"));

    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapPeers,
        [&] {
          const Status reserved = reserve_peer_views(received);
          return reserved == TSHMEM_SUCCESS ? map_peer_chunks(&first, received) : reserved;
        },
        "vmm backend"));
    commit(&first);
    return TSHMEM_SUCCESS;
  }

  uint64_t round_up(uint64_t bytes) const { return (bytes + granularity_ - 1) / granularity_ * granularity_; }

  Status reserve_own(uint64_t heap_size) {
    std::memset(&prop_, 0, sizeof(prop_));
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device_;  // the runtime's device index is the driver's ordinal
    prop_.requestedHandleTypes = kHandleType;
    size_t minimum = 0, recommended = 0;
    TSHMEM_CU_CHECK(cuMemGetAllocationGranularity(&minimum, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    TSHMEM_CU_CHECK(cuMemGetAllocationGranularity(&recommended, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    granularity_ = (minimum != 0 && recommended % minimum == 0) ? recommended : minimum;
    if (granularity_ == 0)
      return set_error(TSHMEM_ERR_CUDA, "cuMemGetAllocationGranularity on device %d returned 0", device_);
    const uint64_t rounded = round_up(heap_size);
    plan_ = std::make_unique<BackingPlan>(rounded, granularity_);
    auto view = std::make_unique<VaRange>();
    TSHMEM_CHECK(view->reserve(2 * rounded, granularity_));  // the heap, then the registration range
    own_view_ = std::move(view);
    return TSHMEM_SUCCESS;
  }

  /// One view per node peer, as large as the own one, at a fixed address for the life of the heap: the peer table.
  Status reserve_peer_views(const std::vector<PeerFd> &received) {
    for (const PeerFd &peer : received) {
      auto view = std::make_unique<VaRange>();
      const Status status = view->reserve(2 * plan_->heap_bytes(), granularity_);
      if (status != TSHMEM_SUCCESS)
        return set_error_message(
            status, format("PE %d's heap (reserving its view): %s", peer.pe, last_error_message().c_str()));
      peer_bases_[static_cast<size_t>(peer.pe)] = reinterpret_cast<void *>(view->va());
      peer_views_[peer.pe] = std::move(view);
    }
    return TSHMEM_SUCCESS;
  }

  /// Local: creates this PE's part of `chunk`, maps it into the own view at its offset and exports it.
  Status create_own_chunk(PendingChunk *chunk, UniqueFd *exported) {
    auto own = std::make_unique<MappedChunk>();
    TSHMEM_CHECK(own->create(chunk->range.bytes, prop_));
    TSHMEM_CHECK(own->map(own_view_->va() + chunk->range.offset, device_));
    TSHMEM_CHECK(own->export_fd(exported));
    chunk->own = std::move(own);
    return TSHMEM_SUCCESS;
  }

  /// Local: imports each node peer's part of `chunk` and maps it at the chunk's offset in that peer's view.
  Status map_peer_chunks(PendingChunk *chunk, std::vector<PeerFd> &received) {
    for (PeerFd &peer : received) {
      if (peer.bytes != chunk->range.bytes)
        return set_error(TSHMEM_ERR_INTERNAL,
                         "vmm backend: PE %d announced a %llu-byte chunk at heap offset %llu, this PE made %llu bytes",
                         peer.pe, static_cast<unsigned long long>(peer.bytes),
                         static_cast<unsigned long long>(chunk->range.offset),
                         static_cast<unsigned long long>(chunk->range.bytes));
      const auto view = peer_views_.find(peer.pe);
      if (view == peer_views_.end())
        return set_error(TSHMEM_ERR_INTERNAL, "vmm backend: no view of PE %d's heap", peer.pe);
      auto mapping = std::make_unique<MappedChunk>();
      Status status = mapping->import(peer.fd.get(), peer.bytes);
      if (status == TSHMEM_SUCCESS) status = mapping->map(view->second->va() + chunk->range.offset, device_);
      if (status != TSHMEM_SUCCESS)
        return set_error_message(status, format("PE %d's heap: %s", peer.pe, last_error_message().c_str()));
      peer.fd.reset();  // the imported handle keeps the allocation alive
      chunk->peers.push_back(std::move(mapping));
    }
    return TSHMEM_SUCCESS;
  }

  void commit(PendingChunk *chunk) {
    own_chunks_.push_back(std::move(chunk->own));
    for (auto &peer : chunk->peers) peer_chunks_.push_back(std::move(peer));
    chunk->peers.clear();
    plan_->add(chunk->range);
    TSHMEMI_LOG(
        kInfo, kLogMem, "heap backed at [%llu, %llu): %llu of %llu bytes backed",
        static_cast<unsigned long long>(chunk->range.offset), static_cast<unsigned long long>(chunk->range.end()),
        static_cast<unsigned long long>(plan_->backed_bytes()), static_cast<unsigned long long>(plan_->heap_bytes()));
  }

  /// Collective: `range` created on every PE, exported, crossed to the node peers and mapped in every view, each
  /// stage agreed. On failure every PE drops the chunk (its mappings and handles) and returns the same message.
  Status add_chunk(Bootstrap &boot, const BackingPlan::Range &range, const char *call) {
    PendingChunk chunk;
    chunk.range = range;
    const std::string what =
        format("%s: backing heap bytes [%llu, %llu) with device memory", call,
               static_cast<unsigned long long>(range.offset), static_cast<unsigned long long>(range.end()));
    UniqueFd exported;
    TSHMEM_CHECK(agree_on_status(boot, create_own_chunk(&chunk, &exported), what.c_str()));
    std::vector<PeerFd> received;
    TSHMEM_CHECK(exchange_fds_node_local(boot, exported.get(), range.bytes, init_timeout_ms_, &received));
    exported.reset();
    TSHMEM_CHECK(agree_on_status(boot, map_peer_chunks(&chunk, received), what.c_str()));
    commit(&chunk);
    return TSHMEM_SUCCESS;
  }

  /// The prepared buffer's handle mapped into this PE's own view and, imported from each node peer's
  /// descriptor, the peers' buffers into their views, all at `offset` of the registration range.
  Status map_views(Registration &reg, uint64_t offset, std::vector<PeerFd> &received) {
    DeviceGuard guard;
    TSHMEM_CHECK(guard.enter(device_));
    const uint64_t at = registration_base() + offset;
    TSHMEM_CHECK(reg.map(reg.own_handle(), reinterpret_cast<CUdeviceptr>(own_base_) + at, device_));
    for (PeerFd &peer : received) {
      CUmemGenericAllocationHandle handle = 0;
      TSHMEM_CU_CHECK(cuMemImportFromShareableHandle(
          &handle, reinterpret_cast<void *>(static_cast<uintptr_t>(peer.fd.get())), kHandleType));
      reg.hold(handle);
      peer.fd.reset();
      const Status mapped =
          reg.map(handle, reinterpret_cast<CUdeviceptr>(peer_bases_[static_cast<size_t>(peer.pe)]) + at, device_);
      if (mapped != TSHMEM_SUCCESS)
        return set_error_message(mapped,
                                 format("PE %d's registered buffer: %s", peer.pe, last_error_message().c_str()));
    }
    return TSHMEM_SUCCESS;
  }

  Status teardown(Bootstrap &boot) { return ordered_teardown(boot, "vmm"); }
  void release_peers() override {
    registrations_.clear();  // every view of every registered buffer, before the views' reservations go
    abandon_registration();
    peer_chunks_.clear();  // unmapped before their views are freed
    peer_views_.clear();
  }
  void release_own() override {
    own_chunks_.clear();
    own_view_.reset();
    plan_.reset();
  }

  int64_t init_timeout_ms_;
  size_t granularity_ = 0;
  CUmemAllocationProp prop_{};
  std::unique_ptr<BackingPlan> plan_;  ///< what is backed; the same on every PE
  std::unique_ptr<VaRange> own_view_;
  std::map<int, std::unique_ptr<VaRange>> peer_views_;  ///< by PE
  std::vector<std::unique_ptr<MappedChunk>> own_chunks_, peer_chunks_;
  std::unique_ptr<Registration> pending_;  ///< prepared, not yet mapped (holds the retained own handle)
  UniqueFd pending_fd_;
  std::map<uint64_t, std::unique_ptr<Registration>> registrations_;  ///< by offset in the registration range
};

}  // namespace

Status make_vmm_backend(int cuda_device, int64_t init_timeout_ms, std::unique_ptr<MemBackend> *out) {
  *out = std::make_unique<VmmBackend>(cuda_device, init_timeout_ms);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
