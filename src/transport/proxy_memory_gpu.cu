// The proxy on a GPU heap (vmm, ipc): staging is pinned host memory; every copy and atomic goes on the proxy's
// own non-blocking stream (never the legacy default stream, which would wait for a kernel that is itself
// waiting for the proxy). Atomics run as a one-thread kernel, so they are atomic with respect to the GPU's own.
#include <cuda_runtime.h>

#include "transport/proxy_memory.h"

namespace tshmemi {
namespace {

template <class T>
__global__ void amo_kernel(T *word, unsigned amo, T value, T compare, unsigned long long *old_out) {
  T old;
  if ((amo & 15u) == 0) {
    old = atomicAdd(word, T(0));
  } else if ((amo & 15u) == 8) {
    old = atomicCAS(word, compare, value);
  } else if ((amo & 15u) == 1 || (amo & 15u) == 7) {
    old = atomicExch(word, value);
  } else if ((amo & 15u) == 2) {
    old = atomicAdd(word, value);
  } else {
    T seen = *reinterpret_cast<volatile T *>(word);
    do {
      old = seen;
      seen = atomicCAS(word, old, amo_result<T>(amo, old, value, compare));
    } while (seen != old);
  }
  __threadfence_system();
  *old_out = static_cast<unsigned long long>(old);
}

#define TSHMEMI_PROXY_CUDA(call)                                                                                \
  do {                                                                                                          \
    const cudaError_t proxy_rc_ = (call);                                                                       \
    if (proxy_rc_ != cudaSuccess)                                                                               \
      return set_error(TSHMEM_ERR_CUDA, "off-node proxy: %s failed: %s", #call, cudaGetErrorString(proxy_rc_)); \
  } while (0)

class GpuProxyMemory final : public ProxyMemory {
 public:
  explicit GpuProxyMemory(int device) : device_(device) {}
  ~GpuProxyMemory() override {
    if (result_ != nullptr) cudaFreeHost(result_);
    if (counter_ != nullptr) cudaFree(counter_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  Status create() {
    TSHMEMI_PROXY_CUDA(cudaSetDevice(device_));
    TSHMEMI_PROXY_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TSHMEMI_PROXY_CUDA(cudaHostAlloc(reinterpret_cast<void **>(&result_), sizeof(*result_), cudaHostAllocMapped));
    // Load the atomic kernels now. With lazy module loading (CUDA's default) the first launch would load them
    // then, and a load may wait for the kernels running in this context: a kernel spinning on a barrier or a
    // fetch that this very launch is to satisfy would never finish (NVIDIA's lazy-loading notes: kernels that
    // rely on running concurrently can deadlock).
    cudaFuncAttributes attributes{};
    TSHMEMI_PROXY_CUDA(cudaFuncGetAttributes(&attributes, amo_kernel<unsigned>));
    TSHMEMI_PROXY_CUDA(cudaFuncGetAttributes(&attributes, amo_kernel<unsigned long long>));
    return TSHMEM_SUCCESS;
  }

  Status bind_thread() override {
    TSHMEMI_PROXY_CUDA(cudaSetDevice(device_));
    return TSHMEM_SUCCESS;
  }
  Status alloc_staging(size_t bytes, void **out) override {
    TSHMEMI_PROXY_CUDA(cudaHostAlloc(out, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    return TSHMEM_SUCCESS;
  }
  void free_staging(void *staging) override { cudaFreeHost(staging); }
  Status alloc_device_counter(uint64_t **out) override {
    TSHMEMI_PROXY_CUDA(cudaMalloc(reinterpret_cast<void **>(&counter_), sizeof(uint64_t)));
    TSHMEMI_PROXY_CUDA(cudaMemset(counter_, 0, sizeof(uint64_t)));
    *out = counter_;
    return TSHMEM_SUCCESS;
  }

  Status read(void *staging, const void *src, size_t bytes) override {
    TSHMEMI_PROXY_CUDA(cudaMemcpyAsync(staging, src, bytes, cudaMemcpyDefault, stream_));
    TSHMEMI_PROXY_CUDA(cudaStreamSynchronize(stream_));
    return TSHMEM_SUCCESS;
  }
  Status write(void *dst, const void *staging, size_t bytes) override {
    TSHMEMI_PROXY_CUDA(cudaMemcpyAsync(dst, staging, bytes, cudaMemcpyDefault, stream_));
    TSHMEMI_PROXY_CUDA(cudaStreamSynchronize(stream_));
    return TSHMEM_SUCCESS;
  }
  Status apply_put(void *heap_dst, const void *staging, size_t bytes) override {
    TSHMEMI_PROXY_CUDA(cudaMemcpyAsync(heap_dst, staging, bytes, cudaMemcpyHostToDevice, stream_));
    return TSHMEM_SUCCESS;
  }
  Status apply_amo(void *word, unsigned amo, unsigned width, uint64_t value, uint64_t compare, uint64_t *old) override {
    unsigned long long *result_device = nullptr;
    TSHMEMI_PROXY_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void **>(&result_device), result_, 0));
    if (width == 4)
      amo_kernel<unsigned><<<1, 1, 0, stream_>>>(static_cast<unsigned *>(word), amo, static_cast<unsigned>(value),
                                                 static_cast<unsigned>(compare), result_device);
    else
      amo_kernel<unsigned long long>
          <<<1, 1, 0, stream_>>>(static_cast<unsigned long long *>(word), amo, value, compare, result_device);
    TSHMEMI_PROXY_CUDA(cudaGetLastError());
    TSHMEMI_PROXY_CUDA(cudaStreamSynchronize(stream_));
    *old = *result_;
    return TSHMEM_SUCCESS;
  }
  Status settle() override {
    TSHMEMI_PROXY_CUDA(cudaStreamSynchronize(stream_));
    return TSHMEM_SUCCESS;
  }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  unsigned long long *result_ = nullptr;
  uint64_t *counter_ = nullptr;
};

}  // namespace

Status make_gpu_proxy_memory(int cuda_device, std::unique_ptr<ProxyMemory> *out) {
  auto memory = std::make_unique<GpuProxyMemory>(cuda_device);
  TSHMEM_CHECK(memory->create());
  *out = std::move(memory);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
