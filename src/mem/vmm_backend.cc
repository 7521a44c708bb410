// The `vmm` backend: the heap is one cuMemCreate allocation per PE, exportable as a POSIX file
// descriptor. Each PE maps its own allocation and every node-local peer's into separate VA reservations
// and grants its own device read/write access to all of them.
//
//   create:   cuMemCreate(POSIX_FD) -> reserve VA -> cuMemMap -> cuMemSetAccess -> export fd
//             -> fds cross over the node-local socket (handle_exchange.cc)
//             -> per peer: import -> reserve VA -> map -> set access
//   destroy:  cudaDeviceSynchronize; every PE unmaps its peers; barrier; each unmaps and releases its own.
//
// Each step ends in agreement (run_step, init_steps.h), so a failure on one PE fails create on all; they then run the
// same ordered teardown, and create returns with nothing mapped anywhere (local_base() == nullptr).
#include <cstring>

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
    if (reserved_) warn_on_failure(TSHMEMI_CU(cuMemAddressFree(va_, size_)), "cuMemAddressFree");
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

  /// Reserves a VA range of the allocation's size, maps the allocation there and grants `device` access.
  Status map(size_t alignment, int device) {
    TSHMEM_CU_CHECK(cuMemAddressReserve(&va_, size_, alignment, 0, 0));
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
  size_t size_ = 0;
  bool has_handle_ = false, reserved_ = false, mapped_ = false;
};

class VmmBackend final : public GpuMemBackend {
 public:
  VmmBackend(int cuda_device, int64_t init_timeout_ms)
      : GpuMemBackend(cuda_device), init_timeout_ms_(init_timeout_ms) {}
  ~VmmBackend() override {
    // Normally destroy() ran; this only covers a context torn down without it (local unmaps, no barrier).
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
    TSHMEM_CHECK(own->map(granularity_, device_));
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
      if (status == TSHMEM_SUCCESS) status = mapping->map(granularity_, device_);
      if (status != TSHMEM_SUCCESS)
        return set_error_message(status, format("PE %d's heap: %s", peer.pe, last_error_message().c_str()));
      peer.fd.reset();  // the imported handle keeps the allocation alive
      peer_bases_[static_cast<size_t>(peer.pe)] = mapping->base();
      peers_.push_back(std::move(mapping));
    }
    return TSHMEM_SUCCESS;
  }

  Status teardown(Bootstrap &boot) { return ordered_teardown(boot, "vmm"); }
  void release_peers() override { peers_.clear(); }
  void release_own() override { own_.reset(); }

  int64_t init_timeout_ms_;
  size_t granularity_ = 0;
  std::unique_ptr<VmmMapping> own_;
  std::vector<std::unique_ptr<VmmMapping>> peers_;
};

}  // namespace

Status make_vmm_backend(int cuda_device, int64_t init_timeout_ms, std::unique_ptr<MemBackend> *out) {
  *out = std::make_unique<VmmBackend>(cuda_device, init_timeout_ms);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
