#include "cuda/gpu_mem_backend.h"

#include "cuda/device_guard.h"

namespace tshmemi {

void *GpuMemBackend::peer_base(int pe) const {
  if (pe < 0 || static_cast<size_t>(pe) >= peer_bases_.size()) return nullptr;
  return peer_bases_[static_cast<size_t>(pe)];
}

Status GpuMemBackend::copy(void *dst, const void *src, size_t bytes) {
  DeviceGuard guard;
  TSHMEM_CHECK(guard.enter(device_));
  TSHMEM_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  return TSHMEM_SUCCESS;
}

Status GpuMemBackend::copy_on_stream(void *dst, const void *src, size_t bytes, tshmemx_stream_t stream) {
  DeviceGuard guard;
  TSHMEM_CHECK(guard.enter(device_));
  // tshmemx_stream_t is struct CUstream_st *, the type cudaStream_t names.
  TSHMEM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)));
  return TSHMEM_SUCCESS;
}

Status GpuMemBackend::zero(void *dst, size_t bytes) {
  DeviceGuard guard;
  TSHMEM_CHECK(guard.enter(device_));
  TSHMEM_CUDA_CHECK(cudaMemset(dst, 0, bytes));
  TSHMEM_CUDA_CHECK(cudaDeviceSynchronize());
  return TSHMEM_SUCCESS;
}

Status GpuMemBackend::quiet() {
  DeviceGuard guard;
  TSHMEM_CHECK(guard.enter(device_));
  TSHMEM_CUDA_CHECK(cudaDeviceSynchronize());
  return TSHMEM_SUCCESS;
}

Status GpuMemBackend::ordered_teardown(Bootstrap &boot, const char *backend) {
  DeviceGuard guard;
  Status first = guard.enter(device_);
  const cudaError_t synced = first == TSHMEM_SUCCESS ? cudaDeviceSynchronize() : cudaSuccess;
  if (synced != cudaSuccess) {
    first = cuda_error(synced, format("cudaDeviceSynchronize (%s teardown)", backend).c_str(), __FILE__, __LINE__);
    TSHMEMI_LOG(kWarn, kLogMem, "%s", last_error_message().c_str());
  }
  release_peers();
  for (void *&base : peer_bases_)
    if (base != own_base_) base = nullptr;
  const Status barrier = boot.barrier();  // every PE has let go of every peer heap
  release_own();
  own_base_ = nullptr;
  peer_bases_.clear();
  return first != TSHMEM_SUCCESS ? first : barrier;
}

}  // namespace tshmemi
