// The device half of the host signal calls on GPU heaps (signal_gpu.h): one-thread kernels over the device API,
// so the signal's ordering and the waits' bound (TSHMEM_WAIT_TIMEOUT_MS) are the kernels' own.
#include "coll/coll_launch.h"
#include "cuda/driver.h"
#include "cuda/signal_gpu.h"
#include "tshmem/device/signal.cuh"

namespace tshmemi {
namespace {

__global__ void signal_op_kernel(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
  tshmem::signal_op(sig_addr, signal, sig_op, pe);
}

__global__ void signal_wait_kernel(const uint64_t *sig_addr, int cmp, uint64_t value) {
  tshmem::signal_wait_until(sig_addr, cmp, value);
}

}  // namespace

Status gpu_signal_op_on_stream(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, tshmemx_stream_t stream) {
  signal_op_kernel<<<1, 1, 0, reinterpret_cast<cudaStream_t>(stream)>>>(sig_addr, signal, sig_op, pe);
  const cudaError_t rc = cudaGetLastError();
  return rc == cudaSuccess ? TSHMEM_SUCCESS : cuda_error(rc, "signal kernel launch", __FILE__, __LINE__);
}

Status gpu_signal_wait_on_stream(const uint64_t *sig_addr, int cmp, uint64_t value, tshmemx_stream_t stream) {
  signal_wait_kernel<<<1, 1, 0, reinterpret_cast<cudaStream_t>(stream)>>>(sig_addr, cmp, value);
  const cudaError_t rc = cudaGetLastError();
  return rc == cudaSuccess ? TSHMEM_SUCCESS : cuda_error(rc, "signal wait kernel launch", __FILE__, __LINE__);
}

Status gpu_signal_read(const uint64_t *sig_addr, uint64_t *value) {
  // A stream of its own (not the internal collectives' stream, which a host-blocking collective of another
  // thread may hold): the poll must not wait for unrelated work of this device.
  static thread_local cudaStream_t stream = nullptr;
  cudaError_t rc = cudaSuccess;
  if (stream == nullptr && (rc = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess)
    return cuda_error(rc, "cudaStreamCreateWithFlags", __FILE__, __LINE__);
  if ((rc = cudaMemcpyAsync(value, sig_addr, sizeof(uint64_t), cudaMemcpyDeviceToHost, stream)) != cudaSuccess)
    return cuda_error(rc, "cudaMemcpyAsync (signal word)", __FILE__, __LINE__);
  if ((rc = cudaStreamSynchronize(stream)) != cudaSuccess)
    return cuda_error(rc, "cudaStreamSynchronize", __FILE__, __LINE__);
  return TSHMEM_SUCCESS;
}

Status gpu_run_blocking(const char *call, Status (*launch)(void *arg, tshmemx_stream_t stream), void *arg) {
  return coll_run_blocking(call, launch, arg);
}

}  // namespace tshmemi
