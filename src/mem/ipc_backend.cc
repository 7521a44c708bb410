// The `ipc` backend: the heap is one cudaMalloc allocation per PE, shared with node-local peers through
// legacy CUDA IPC handles (cudaIpcGetMemHandle / cudaIpcOpenMemHandle), all-gathered over the node-local
// bootstrap (handle_exchange.cc). The fallback where VMM file-descriptor handles are unavailable.
//
//   create:   cudaMalloc -> cudaIpcGetMemHandle -> handles all-gathered -> per peer cudaIpcOpenMemHandle
//   destroy:  cudaDeviceSynchronize; every PE closes its peers' handles; barrier; each frees its own.
// Each step ends in agreement (run_step, init_steps.h); on failure every PE runs the same ordered teardown.
#include "bootstrap/agree.h"
#include "cuda/device_guard.h"
#include "cuda/gpu_mem_backend.h"
#include "init_steps.h"
#include "mem/handle_exchange.h"

namespace tshmemi {
namespace {

// cudaMalloc rounds large allocations to 2 MiB pages anyway; rounding ourselves keeps the heap the only
// thing in its allocation, so an IPC handle never exposes a neighbour's memory.
constexpr uint64_t kIpcGranularity = 2ull << 20;

void warn_on_failure(cudaError_t result, const char *what) {
  if (result != cudaSuccess) {
    cuda_error(result, what, __FILE__, __LINE__);
    TSHMEMI_LOG(kWarn, kLogMem, "ipc teardown: %s", last_error_message().c_str());
  }
}

struct CudaFreeDeleter {
  void operator()(void *p) const { warn_on_failure(cudaFree(p), "cudaFree(own heap)"); }
};
struct IpcCloseDeleter {
  void operator()(void *p) const { warn_on_failure(cudaIpcCloseMemHandle(p), "cudaIpcCloseMemHandle(peer heap)"); }
};

class IpcBackend final : public GpuMemBackend {
 public:
  explicit IpcBackend(int cuda_device) : GpuMemBackend(cuda_device) {}
  ~IpcBackend() override {
    peers_.clear();
    own_.reset();
  }

  const char *name() const override { return "ipc"; }

  Status create(Bootstrap &boot, uint64_t heap_size) override {
    const Status status = create_steps(boot, heap_size);
    if (status != TSHMEM_SUCCESS) {
      const std::string message = last_error_message();
      teardown(boot);  // every PE agreed on the failure: all undo together
      set_error_message(status, message);
    }
    return status;
  }

  Status destroy(Bootstrap &boot) override { return teardown(boot); }

 private:
  Status create_steps(Bootstrap &boot, uint64_t heap_size) {
    DeviceGuard guard;
    peer_bases_.assign(static_cast<size_t>(boot.size()), nullptr);
    cudaIpcMemHandle_t own_handle{};
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapOwn,
        [&] {
          const Status entered = guard.enter(device_);
          return entered == TSHMEM_SUCCESS ? create_own(heap_size, &own_handle) : entered;
        },
        "ipc backend"));
    peer_bases_[static_cast<size_t>(boot.rank())] = own_base_;  // the own slot is the own base

    std::vector<cudaIpcMemHandle_t> handles;
    const Status exchanged = exchange_ipc_handles_node_local(boot, own_handle, &handles);  // collective: every PE
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapExchange, [&] { return exchanged; }, "ipc backend"));
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapPeers, [&] { return open_peers(boot, handles); }, "ipc backend"));
    return TSHMEM_SUCCESS;
  }

  Status create_own(uint64_t heap_size, cudaIpcMemHandle_t *handle) {
    const uint64_t rounded = (heap_size + kIpcGranularity - 1) / kIpcGranularity * kIpcGranularity;
    void *base = nullptr;
    TSHMEM_CUDA_CHECK(cudaMalloc(&base, rounded));
    own_.reset(base);
    TSHMEM_CUDA_CHECK(cudaIpcGetMemHandle(handle, base));
    own_base_ = base;
    return TSHMEM_SUCCESS;
  }

  Status open_peers(Bootstrap &boot, const std::vector<cudaIpcMemHandle_t> &handles) {
    const std::vector<int> &local_pes = boot.local_pes();
    for (size_t lr = 0; lr < local_pes.size(); ++lr) {
      const int pe = local_pes[lr];
      if (pe == boot.rank()) continue;
      void *base = nullptr;
      const cudaError_t rc = cudaIpcOpenMemHandle(&base, handles[lr], cudaIpcMemLazyEnablePeerAccess);
      if (rc != cudaSuccess) {
        cuda_error(rc, "cudaIpcOpenMemHandle", __FILE__, __LINE__);
        return set_error_message(TSHMEM_ERR_CUDA, format("PE %d's heap: %s", pe, last_error_message().c_str()));
      }
      peers_.emplace_back(base);
      peer_bases_[static_cast<size_t>(pe)] = base;
    }
    return TSHMEM_SUCCESS;
  }

  Status teardown(Bootstrap &boot) { return ordered_teardown(boot, "ipc"); }
  void release_peers() override { peers_.clear(); }
  void release_own() override { own_.reset(); }

  std::unique_ptr<void, CudaFreeDeleter> own_;
  std::vector<std::unique_ptr<void, IpcCloseDeleter>> peers_;
};

}  // namespace

Status make_ipc_backend(int cuda_device, std::unique_ptr<MemBackend> *out) {
  *out = std::make_unique<IpcBackend>(cuda_device);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
