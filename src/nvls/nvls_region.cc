// The multicast region: one multicast object per node, the whole symmetric heap bound to it (a vmm heap, backed as
// it is used, is backed whole first), mapped next to the heap. COMPILE-ONLY so far: multicast is forbidden on the
// project's GPU test hosts (it can put a shared host's GPUs out of service), so this path has never run. It follows the
// driver's documented order:
//
//   1. local rank 0 creates the object (cuMulticastCreate: numDevices = PEs on the node, size = heap,
//      POSIX file-descriptor handles) and exports it as a descriptor;
//   2. the descriptor crosses to the node's other PEs exactly as the heap's do (exchange_fds_node_local:
//      abstract Unix socket, SCM_RIGHTS, peer credentials checked); they import it;
//   3. every PE adds its own device (cuMulticastAddDevice)           -- agreement = barrier: all added
//   4. every PE binds its own heap's physical backing by address     -- agreement = barrier: all bound
//      (cuMulticastBindAddr at multicast offset 0: heap offset o is multicast offset o on every PE)
//   5. every PE reserves VA, maps the object, grants its device access -- agreement
//   6. the binding is recorded through the collective check: size and granularity agreed.
// Every step ends in agree_on_status, so a failure anywhere is seen everywhere; the PEs then undo in reverse
// order together (destroy) and run without multicast.
#include <fcntl.h>

#include <cstring>

#include "bootstrap/agree.h"
#include "bootstrap/collective_check.h"
#include "cuda/device_guard.h"
#include "mem/handle_exchange.h"
#include "nvls/nvls.h"
#include "nvls/nvls_driver.h"
#include "state/device_state_builder.h"
#include "state/registry.h"

namespace tshmemi {
namespace {

constexpr CUmemAllocationHandleType kHandleType = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

void warn_on_failure(CUresult result, const char *what) {
  if (result != CUDA_SUCCESS) {
    nvls_cu_error(result, what, __FILE__, __LINE__);
    TSHMEMI_LOG(kWarn, kLogNvls, "multicast teardown: %s", last_error_message().c_str());
  }
}

class McRegion final : public NvlsRegion {
 public:
  McRegion(int cuda_device, uint64_t heap_base, uint64_t size, uint64_t granularity)
      : cuda_device_(cuda_device), heap_base_(heap_base), size_(size), granularity_(granularity) {}
  ~McRegion() override { undo_local(); }

  uint64_t mc_base() const override { return mapped_ ? static_cast<uint64_t>(va_) : 0; }
  uint64_t size() const override { return size_; }

  Status destroy(Bootstrap &boot) override {
    DeviceGuard guard;
    Status first = guard.enter(cuda_device_);
    if (first == TSHMEM_SUCCESS) {
      const cudaError_t synced = cudaDeviceSynchronize();  // no kernel of ours still uses the mapping
      if (synced != cudaSuccess)
        first = cuda_error(synced, "cudaDeviceSynchronize (multicast teardown)", __FILE__, __LINE__);
    }
    unmap();
    const Status unmapped = boot.barrier();  // nobody reaches the object through a mapping any more
    unbind();
    const Status unbound = boot.barrier();  // every PE's memory has left the object
    release();
    if (first != TSHMEM_SUCCESS) return first;
    return unmapped != TSHMEM_SUCCESS ? unmapped : unbound;
  }

  // Step 1 (local rank 0): create and export.
  Status create(int local_n_pes, UniqueFd *exported) {
    CUmulticastObjectProp prop;
    std::memset(&prop, 0, sizeof(prop));
    prop.numDevices = static_cast<unsigned>(local_n_pes);
    prop.size = static_cast<size_t>(size_);
    prop.handleTypes = kHandleType;
    TSHMEMI_NVLS_CHECK(cuMulticastCreate(&handle_, &prop));
    has_handle_ = true;
    int fd = -1;
    TSHMEMI_NVLS_CHECK(cuMemExportToShareableHandle(&fd, handle_, kHandleType, 0));
    exported->reset(fd);
    return TSHMEM_SUCCESS;
  }

  // Step 2 (the node's other PEs): import the leader's object.
  Status import(int fd) {
    TSHMEMI_NVLS_CHECK(
        cuMemImportFromShareableHandle(&handle_, reinterpret_cast<void *>(static_cast<uintptr_t>(fd)), kHandleType));
    has_handle_ = true;
    return TSHMEM_SUCCESS;
  }

  // Step 3: this PE's device joins the object.
  Status add_device() {
    TSHMEMI_NVLS_CHECK(cuDeviceGet(&device_, cuda_device_));
    TSHMEMI_NVLS_CHECK(cuMulticastAddDevice(handle_, device_));
    return TSHMEM_SUCCESS;
  }

  // Step 4: this PE's heap backs the object at offset 0 (the whole heap: offsets coincide).
  Status bind() {
    TSHMEMI_NVLS_CHECK(
        cuMulticastBindAddr(handle_, 0, static_cast<CUdeviceptr>(heap_base_), static_cast<size_t>(size_), 0));
    bound_ = true;
    return TSHMEM_SUCCESS;
  }

  // Step 5: map the object into this process, readable and writable by this PE's device.
  Status map() {
    TSHMEMI_NVLS_CHECK(cuMemAddressReserve(&va_, static_cast<size_t>(size_), static_cast<size_t>(granularity_), 0, 0));
    reserved_ = true;
    TSHMEMI_NVLS_CHECK(cuMemMap(va_, static_cast<size_t>(size_), 0, handle_, 0));
    mapped_ = true;
    CUmemAccessDesc access;
    std::memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device_;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    TSHMEMI_NVLS_CHECK(cuMemSetAccess(va_, static_cast<size_t>(size_), &access, 1));
    return TSHMEM_SUCCESS;
  }

 private:
  void unmap() {
    if (mapped_) warn_on_failure(TSHMEMI_NVLS(cuMemUnmap(va_, static_cast<size_t>(size_))), "cuMemUnmap (multicast)");
    mapped_ = false;
    if (reserved_)
      warn_on_failure(TSHMEMI_NVLS(cuMemAddressFree(va_, static_cast<size_t>(size_))), "cuMemAddressFree (multicast)");
    reserved_ = false;
    va_ = 0;
  }
  void unbind() {
    if (bound_)
      warn_on_failure(TSHMEMI_NVLS(cuMulticastUnbind(handle_, device_, 0, static_cast<size_t>(size_))),
                      "cuMulticastUnbind");
    bound_ = false;
  }
  void release() {
    if (has_handle_) warn_on_failure(TSHMEMI_NVLS(cuMemRelease(handle_)), "cuMemRelease (multicast)");
    has_handle_ = false;
  }
  // Without the collective order (a context torn down without destroy): local undo only.
  void undo_local() {
    unmap();
    unbind();
    release();
  }

  int cuda_device_;
  uint64_t heap_base_;
  uint64_t size_;
  uint64_t granularity_;
  CUmemGenericAllocationHandle handle_ = 0;
  CUdevice device_ = 0;
  CUdeviceptr va_ = 0;
  bool has_handle_ = false, bound_ = false, reserved_ = false, mapped_ = false;
};

// Steps 1-6; every step agreed. On failure the caller runs destroy() on every PE.
Status create_region(Bootstrap &boot, const NvlsPolicyInput &input, McRegion &region, uint64_t granularity) {
  const bool leader = boot.local_rank() == 0;
  DeviceGuard guard;
  TSHMEM_CHECK(agree_on_status(boot, guard.enter(input.cuda_device), "multicast: selecting the device"));

  // 1. The leader creates; the others offer a placeholder descriptor (the exchange is all-to-all).
  UniqueFd offered;
  Status status = TSHMEM_SUCCESS;
  if (leader) {
    status = region.create(boot.local_size(), &offered);
  } else {
    offered.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!offered.valid()) status = set_error(TSHMEM_ERR_SYSTEM, "multicast: open(/dev/null): %s", std::strerror(errno));
  }
  TSHMEM_CHECK(agree_on_status(boot, status, "multicast: creating the node's multicast object"));

  // 2. The leader's descriptor reaches every PE of the node; they import it.
  std::vector<PeerFd> received;
  TSHMEM_CHECK(exchange_fds_node_local(boot, offered.get(), region.size(), input.env->init_timeout_ms, &received));
  offered.reset();
  if (!leader) {
    const int leader_pe = boot.local_pes().front();
    status = set_error(TSHMEM_ERR_INTERNAL, "multicast: no descriptor from the node's leader PE %d", leader_pe);
    for (PeerFd &peer : received)
      if (peer.pe == leader_pe) status = region.import(peer.fd.get());
  }
  received.clear();  // the imported handle holds the object; the descriptors are closed
  TSHMEM_CHECK(agree_on_status(boot, status, "multicast: importing the node's multicast object"));

  // 3-5, each a barrier by agreement.
  TSHMEM_CHECK(agree_on_status(boot, region.add_device(), "multicast: adding every node-local device"));
  TSHMEM_CHECK(agree_on_status(boot, region.bind(), "multicast: binding every PE's heap"));
  TSHMEM_CHECK(agree_on_status(boot, region.map(), "multicast: mapping the multicast object"));

  // 6. Same size and granularity on every PE, through a collective check of its own (a divergent PE is named).
  CollectiveCheck check(boot);
  CollectiveRequest request("tshmem_init (multicast region)");
  request.arg("granularity", static_cast<int64_t>(granularity)).arg("size", static_cast<int64_t>(region.size()));
  return check.agree(request);
}

Status republish_state(int cuda_device, uint64_t mc_base) {
  tshmemi_device_state state = registry_current();
  if ((state.flags & TSHMEMI_STATE_INITIALIZED) == 0) return TSHMEM_SUCCESS;  // no device state (shm backend)
  return registry_publish(cuda_device, with_multicast(state, mc_base));
}

}  // namespace

Status nvls_init(Bootstrap &boot, const NvlsPolicyInput &input, std::unique_ptr<NvlsRegion> *out, std::string *reason) {
  const NvlsDecision local = nvls_local_policy(input);

  // Every PE's verdict, and the largest granularity, in one allreduce (max(g) = ~min(~g)).
  const int64_t mine[2] = {local.use ? 1 : 0, ~static_cast<int64_t>(local.granularity)};
  int64_t agreed[2] = {0, 0};
  TSHMEM_CHECK(boot.allreduce(mine, agreed, 2, ReduceOp::kMin));
  const uint64_t granularity = static_cast<uint64_t>(~agreed[1]);
  if (agreed[0] == 0 || granularity == 0 || input.heap_size % granularity != 0) {
    *reason = local.use ? std::string("another PE cannot or may not use multicast") : local.reason;
    TSHMEMI_LOG(kInfo, kLogNvls, "multicast off: %s", reason->c_str());
    return TSHMEM_SUCCESS;
  }

  // The region binds the whole heap, so every symmetric address has its multicast twin and multimem needs no bound:
  // a heap backed as it is used is backed whole first. A heap that cannot be runs without multicast.
  if (input.back_whole_heap && input.back_whole_heap() != TSHMEM_SUCCESS) {
    *reason = "the whole heap could not be backed with memory for the multicast object: " + last_error_message();
    TSHMEMI_LOG(kWarn, kLogNvls, "multicast off: %s", reason->c_str());
    clear_last_error();
    return TSHMEM_SUCCESS;
  }
  auto region = std::make_unique<McRegion>(input.cuda_device, input.heap_base, input.heap_size, granularity);
  Status status = create_region(boot, input, *region, granularity);
  if (status == TSHMEM_SUCCESS)
    status = agree_on_status(boot, republish_state(input.cuda_device, region->mc_base()),
                             "multicast: publishing the multicast base");
  if (status != TSHMEM_SUCCESS) {
    // Every PE agreed on this failure: all undo together and continue with the unicast paths.
    *reason = "setup failed: " + last_error_message();
    TSHMEMI_LOG(kWarn, kLogNvls, "multicast off: %s", reason->c_str());
    TSHMEM_CHECK(region->destroy(boot));
    TSHMEM_CHECK(republish_state(input.cuda_device, 0));
    clear_last_error();
    return TSHMEM_SUCCESS;
  }
  *reason = "on";
  TSHMEMI_LOG(kInfo, kLogNvls, "multicast on: %llu bytes at %#llx (granularity %llu)",
              static_cast<unsigned long long>(region->size()), static_cast<unsigned long long>(region->mc_base()),
              static_cast<unsigned long long>(granularity));
  *out = std::move(region);
  return TSHMEM_SUCCESS;
}

void nvls_finalize(Bootstrap &boot, std::unique_ptr<NvlsRegion> *region) {
  if (!*region) return;
  const Status status = (*region)->destroy(boot);
  if (status != TSHMEM_SUCCESS) TSHMEMI_LOG(kWarn, kLogNvls, "multicast teardown: %s", last_error_message().c_str());
  region->reset();
}

}  // namespace tshmemi
