// Handles: the device memory that holds the routes of one notify, and their queries (core/buffer.h).
#include "core/buffer.h"
#include "core/rows.h"

using namespace tshmem_ep;

extern "C" {

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_create(tshmem_ep_buffer_t buffer, int64_t max_tokens,
                                                         int64_t num_experts, tshmem_ep_handle_t *handle) {
  return guarded("tshmem_ep_handle_create", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    if (!handle) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "handle = NULL; it is required");
    *handle = nullptr;
    EP_TRY(check_handle_args(buffer->geo, max_tokens, num_experts));
    DeviceGuard guard(buffer->device);
    const int n = buffer->geo.n_pes;
    auto h = new tshmem_ep_handle();
    h->buffer = buffer;
    h->max_tokens = max_tokens;
    h->num_experts = num_experts;
    h->local_experts = num_experts / n;
    const size_t matrix = static_cast<size_t>(n * publish_words(n, num_experts));
    const size_t send = static_cast<size_t>(max_tokens) * static_cast<size_t>(n);
    const size_t info = static_cast<size_t>(info_layout(n, h->local_experts).words);
    cudaError_t e = cudaMalloc(reinterpret_cast<void **>(&h->d_matrix), sizeof(int32_t) * (matrix + send + info));
    if (e == cudaSuccess) {
      h->d_send_index = h->d_matrix + matrix;
      h->d_info = h->d_send_index + send;
      // Zeroed and waited for here, on this thread's stream: a plain cudaMemset runs on the legacy default stream,
      // unordered with the non-blocking stream of the first notify (and waiting, on the device, for every
      // blocking stream of the process, where a kernel may wait for the off-node proxy).
      e = cudaMemsetAsync(h->d_matrix, 0, sizeof(int32_t) * (matrix + send + info), cudaStreamPerThread);
      if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamPerThread);
    }
    if (e == cudaSuccess)
      e = cudaMallocHost(reinterpret_cast<void **>(&h->h_matrix), sizeof(int32_t) * (matrix + info));
    if (e != cudaSuccess) {
      cudaFree(h->d_matrix);
      delete h;
      return cuda_fail(e, "allocating the handle");
    }
    h->h_info = h->h_matrix + matrix;
    *handle = h;
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_destroy(tshmem_ep_handle_t handle) {
  return guarded("tshmem_ep_handle_destroy", [&]() -> Status {
    if (!handle) return kSuccess;
    DeviceGuard guard(handle->buffer->device);
    const cudaError_t e = cudaDeviceSynchronize();
    cudaFree(handle->d_matrix);
    cudaFreeHost(handle->h_matrix);
    delete handle;
    if (e != cudaSuccess) return cuda_fail(e, "cudaDeviceSynchronize");
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_num_recv_tokens(tshmem_ep_handle_t handle, int64_t *num_recv_tokens) {
  return guarded("tshmem_ep_handle_num_recv_tokens", [&]() -> Status {
    if (!handle) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "handle = NULL; it is required");
    if (!num_recv_tokens) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "num_recv_tokens = NULL; it is required");
    *num_recv_tokens = handle->num_recv;
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_device_counts(tshmem_ep_handle_t handle, const int32_t **counts) {
  return guarded("tshmem_ep_handle_device_counts", [&]() -> Status {
    if (!handle) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "handle = NULL; it is required");
    if (!counts) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "counts = NULL; it is required");
    *counts = handle->d_info;
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_published_matrix(tshmem_ep_handle_t handle, const int32_t **matrix,
                                                                   int64_t *row_words) {
  return guarded("tshmem_ep_handle_published_matrix", [&]() -> Status {
    if (!handle) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "handle = NULL; it is required");
    if (!matrix) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "matrix = NULL; it is required");
    if (!row_words) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "row_words = NULL; it is required");
    *matrix = handle->d_matrix;
    *row_words = publish_words(handle->buffer->geo.n_pes, handle->num_experts);
    return kSuccess;
  });
}

}  // extern "C"
