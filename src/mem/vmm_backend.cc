// The `vmm` backend: the heap is one cuMemCreate allocation per PE, exportable as a POSIX file
// descriptor. Each PE maps its own allocation and every node-local peer's into separate VA reservations
// and grants its own device read/write access to all of them.
//
//   create:   cuMemCreate(POSIX_FD) -> reserve VA -> cuMemMap -> cuMemSetAccess -> export fd
//             -> fds cross over the node-local socket (handle_exchange.cc)
//             -> per peer: import -> reserve VA -> map -> set access
//   destroy:  cudaDeviceSynchronize; every PE unmaps its peers; barrier; each unmaps and releases its own.
//
// Every view (own and peers') reserves twice the heap's VA: the heap, then the registration range, where
// tshmemx_buffer_register_symmetric maps an application's cuMemCreate allocation (POSIX fd handle type) at the
// same offset in every view: retained (cuMemRetainAllocationHandle), exported, crossed to the node peers like the
// heap's descriptor, imported and mapped. Unregistering unmaps every view and releases the handles.
//
// Each step ends in agreement (run_step, init_steps.h), so a failure on one PE fails create on all; they then run the
// same ordered teardown, and create returns with nothing mapped anywhere (local_base() == nullptr).
#include <cstring>
#include <map>

#include "bootstrap/agree.h"
#include "cuda/device_guard.h"
#include "cuda/driver.h"
#include "cuda/gpu_mem_backend.h"
#include "init_steps.h"
#include "mem/handle_exchange.h"

namespace tshmemi {
namespace {

constexpr CUmemAllocationHandleType kHandleType = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

void warn_on_failure(CUresult result, const char *what) {
  if (result != CUDA_SUCCESS) {
    cu_error(result, what, __FILE__, __LINE__);
    TSHMEMI_LOG(kWarn, kLogMem, "vmm teardown: %s", last_error_message().c_str());
  }
}

// One physical allocation (own or imported) mapped into this process. Whatever was done is undone in
// reverse order on destruction: unmap, free the VA range, release the handle.
class VmmMapping {
 public:
  VmmMapping() = default;
  VmmMapping(const VmmMapping &) = delete;
  VmmMapping &operator=(const VmmMapping &) = delete;
  ~VmmMapping() {
    if (mapped_) warn_on_failure(TSHMEMI_CU(cuMemUnmap(va_, size_)), "cuMemUnmap");
    if (reserved_) warn_on_failure(TSHMEMI_CU(cuMemAddressFree(va_, reserved_bytes_)), "cuMemAddressFree");
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

  /// Reserves a VA range of the allocation's size plus `extra` bytes (the registration range), maps the
  /// allocation at its start and grants `device` access.
  Status map(size_t alignment, int device, size_t extra) {
    reserved_bytes_ = size_ + extra;
    TSHMEM_CU_CHECK(cuMemAddressReserve(&va_, reserved_bytes_, alignment, 0, 0));
    reserved_ = true;
    TSHMEM_CU_CHECK(cuMemMap(va_, size_, 0, handle_, 0));
    mapped_ = true;
    CUmemAccessDesc access;
    std::memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    TSHMEM_CU_CHECK(cuMemSetAccess(va_, size_, &access, 1));
    return TSHMEM_SUCCESS;
  }

  Status export_fd(UniqueFd *out) {
    int fd = -1;
    TSHMEM_CU_CHECK(cuMemExportToShareableHandle(&fd, handle_, kHandleType, 0));
    out->reset(fd);
    return TSHMEM_SUCCESS;
  }

  void *base() const { return mapped_ ? reinterpret_cast<void *>(va_) : nullptr; }
  size_t size() const { return size_; }

 private:
  CUmemGenericAllocationHandle handle_ = 0;
  CUdeviceptr va_ = 0;
  size_t size_ = 0, reserved_bytes_ = 0;
  bool has_handle_ = false, reserved_ = false, mapped_ = false;
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
    std::memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
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
    registrations_.clear();  // mapped inside the views' reservations: unmapped first
    abandon_registration();
    peers_.clear();
    own_.reset();
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

  uint64_t registration_capacity() const override { return own_ != nullptr ? own_->size() : 0; }
  uint64_t registration_base() const override { return own_ != nullptr ? own_->size() : 0; }
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
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapOwn,
        [&] {
          Status status = guard.enter(device_);
          if (status == TSHMEM_SUCCESS) status = cu_driver_load();  // the driver API, before the first cuMem call
          return status == TSHMEM_SUCCESS ? create_own(heap_size, &exported) : status;
        },
        "vmm backend"));
    peer_bases_[static_cast<size_t>(boot.rank())] = own_base_;  // the own slot is the own base

    std::vector<PeerFd> received;
    TSHMEM_CHECK(exchange_fds_node_local(boot, exported.get(), own_->size(), init_timeout_ms_, &received));
    exported.reset();  // every peer holds its own reference now
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapExchange, [] { return TSHMEM_SUCCESS; }, "vmm backend"));

    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapPeers, [&] { return map_peers(heap_size, received); }, "vmm backend"));
    return TSHMEM_SUCCESS;
  }

  Status create_own(uint64_t heap_size, UniqueFd *exported) {
    CUmemAllocationProp prop;
    std::memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;  // the runtime's device index is the driver's ordinal
    prop.requestedHandleTypes = kHandleType;
    size_t minimum = 0, recommended = 0;
    TSHMEM_CU_CHECK(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    TSHMEM_CU_CHECK(cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    granularity_ = (minimum != 0 && recommended % minimum == 0) ? recommended : minimum;
    if (granularity_ == 0)
      return set_error(TSHMEM_ERR_CUDA, "cuMemGetAllocationGranularity on device %d returned 0", device_);
    const uint64_t rounded = (heap_size + granularity_ - 1) / granularity_ * granularity_;

    auto own = std::make_unique<VmmMapping>();
    TSHMEM_CHECK(own->create(rounded, prop));
    TSHMEM_CHECK(own->map(granularity_, device_, rounded));  // + the registration range
    TSHMEM_CHECK(own->export_fd(exported));
    own_ = std::move(own);
    own_base_ = own_->base();
    return TSHMEM_SUCCESS;
  }

  Status map_peers(uint64_t heap_size, std::vector<PeerFd> &received) {
    for (PeerFd &peer : received) {
      if (peer.bytes < heap_size)
        return set_error(TSHMEM_ERR_INTERNAL,
                         "vmm backend: PE %d announced a %llu-byte allocation, less than the %llu-byte heap", peer.pe,
                         static_cast<unsigned long long>(peer.bytes), static_cast<unsigned long long>(heap_size));
      auto mapping = std::make_unique<VmmMapping>();
      Status status = mapping->import(peer.fd.get(), peer.bytes);
      // The view reserves what the own view does: the heap, then the registration range at the same offset.
      const uint64_t extra = 2 * own_->size() > peer.bytes ? 2 * own_->size() - peer.bytes : 0;
      if (status == TSHMEM_SUCCESS) status = mapping->map(granularity_, device_, extra);
      if (status != TSHMEM_SUCCESS)
        return set_error_message(status, format("PE %d's heap: %s", peer.pe, last_error_message().c_str()));
      peer.fd.reset();  // the imported handle keeps the allocation alive
      peer_bases_[static_cast<size_t>(peer.pe)] = mapping->base();
      peers_.push_back(std::move(mapping));
    }
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
    peers_.clear();
  }
  void release_own() override { own_.reset(); }

  int64_t init_timeout_ms_;
  size_t granularity_ = 0;
  std::unique_ptr<VmmMapping> own_;
  std::vector<std::unique_ptr<VmmMapping>> peers_;
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
