// The buffer: its collective creation and destruction over the symmetric heap, its geometry, its device error
// record (core/buffer.h).
#include "core/buffer.h"

#include <cstdio>
#include <cstring>

#include "core/kernels.h"
#include "core/rows.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

namespace tshmem_ep {

namespace {
size_t pad256(size_t n) { return (n + 255) & ~size_t{255}; }
}  // namespace

Status load_kernels() {
  // The one list of the kernel units: a unit added to the library is added here.
  const KernelSet units[] = {layout_kernels(), notify_kernels(), dispatch_kernels(), combine_kernels(),
                             low_latency_kernels()};
  for (const KernelSet &unit : units)
    for (size_t i = 0; i < unit.count; ++i) {
      // Under lazy loading the attribute query loads the kernel (and fails here, not at a launch, when the
      // library holds no code for this GPU).
      cudaFuncAttributes attributes{};
      const cudaError_t e = cudaFuncGetAttributes(&attributes, unit.kernels[i].fn);
      if (e != cudaSuccess) {
        char what[128];
        std::snprintf(what, sizeof what, "loading the kernel %s (cudaFuncGetAttributes)", unit.kernels[i].name);
        return cuda_fail(e, what);
      }
    }
  return kSuccess;
}

size_t control_bytes(int n_pes) {
  const size_t row = static_cast<size_t>(publish_words(n_pes, TSHMEM_EP_MAX_EXPERTS)) * sizeof(int32_t);
  return pad256(4 * static_cast<size_t>(n_pes) * sizeof(uint64_t)) + pad256(row) +
         pad256(row * static_cast<size_t>(n_pes));
}

int data_blocks(const tshmem_ep_buffer &b) {
  if (b.num_blocks > 0) return b.num_blocks;
  return b.geo.spans_nodes ? 4 : b.sm_count;
}

Status check_buffer(const tshmem_ep_buffer *b) {
  if (!b) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "buffer = NULL; it is required");
  return kSuccess;
}

Status check_handle(const tshmem_ep_buffer *b, const tshmem_ep_handle *h) {
  EP_TRY(check_buffer(b));
  if (!h) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "handle = NULL; it is required");
  if (h->buffer != b)
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "handle = %p; it was made from another buffer",
                static_cast<const void *>(h));
  return kSuccess;
}

DeviceGuard::DeviceGuard(int device) {
  if (cudaGetDevice(&prev_) != cudaSuccess) prev_ = -1;
  if (device >= 0 && device != prev_) (void)cudaSetDevice(device);
}
DeviceGuard::~DeviceGuard() {
  if (prev_ >= 0) (void)cudaSetDevice(prev_);
}

Status tshmem_fail(int rc, const char *what) {
  return fail(TSHMEM_EP_ERR_TSHMEM, "%s failed (%s): %s", what, tshmemx_strerror(rc), tshmemx_last_error());
}

Status take_device_error(tshmem_ep_buffer *b, cudaStream_t stream, bool clear, int only) {
  // On the caller's stream, never the legacy default stream: that one would also wait for every other blocking
  // stream of the process, where a kernel may be waiting for the off-node proxy.
  DeviceError e{};
  EP_CUDA(cudaMemcpyAsync(&e, b->err, sizeof e, cudaMemcpyDeviceToHost, stream));
  EP_CUDA(cudaStreamSynchronize(stream));
  if (e.kind == kNoError || (only != kNoError && e.kind != only)) return kSuccess;
  if (clear) {
    EP_CUDA(cudaMemsetAsync(b->err, 0, sizeof(DeviceError), stream));
    EP_CUDA(cudaStreamSynchronize(stream));  // cleared for every stream's next call
  }
  switch (static_cast<DeviceErrorKind>(e.kind)) {
    case kBadExpert:
      return fail(TSHMEM_EP_ERR_INVALID_VALUE,
                  "topk_idx holds %lld at flat position %lld on PE %d; expert ids are in [-1, num_experts) (the "
                  "entry was treated as -1)",
                  e.value, e.pos, b->geo.my_pe);
    case kRecvOverflow:
      return fail(TSHMEM_EP_ERR_BUFFER_TOO_SMALL,
                  "a dispatch to PE %d needed %lld rows where %lld fit (receive area or recv_capacity); the rows "
                  "beyond were not written",
                  b->geo.my_pe, e.value, e.pos);
    case kCombineOverflow:
      return fail(TSHMEM_EP_ERR_BUFFER_TOO_SMALL,
                  "a combine needed %lld rows where %lld fit in the receive area; the rows beyond were not written",
                  e.value, e.pos);
    case kPeerTimeout:
      return fail(TSHMEM_EP_ERR_TSHMEM,
                  "%s on PE %d waited for PE %lld past the buffer's timeout (it stopped, or did not make the same "
                  "call); PE %lld is masked now (tshmem_ep_low_latency_query_mask)",
                  e.pos == 0   ? "tshmem_ep_low_latency_dispatch"
                  : e.pos == 1 ? "tshmem_ep_low_latency_combine"
                               : "tshmem_ep_low_latency_clean",
                  b->geo.my_pe, e.value, e.value);
    case kNoError: break;
  }
  return fail(TSHMEM_EP_ERR_INTERNAL, "unknown device error kind %d", e.kind);
}

Status finish_off_node(const tshmem_ep_buffer *b, cudaStream_t stream) {
  if (b->num_nodes <= 1) return kSuccess;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  EP_CUDA(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return kSuccess;  // a graph's replay is the caller's to wait for
  EP_CUDA(cudaStreamSynchronize(stream));
  return kSuccess;
}

}  // namespace tshmem_ep

using namespace tshmem_ep;

extern "C" {

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_create(size_t num_nvl_bytes, size_t num_rdma_bytes,
                                                         tshmem_ep_buffer_t *buffer) {
  return guarded("tshmem_ep_buffer_create", [&]() -> Status {
    if (!buffer) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "buffer = NULL; it is required");
    *buffer = nullptr;
    EP_TRY(check_buffer_sizes(num_nvl_bytes, num_rdma_bytes));
    const int n = tshmem_n_pes();
    if (n <= 0) return fail(TSHMEM_EP_ERR_NOT_INITIALIZED, "tshmem is not initialised (call tshmem_init first)");
    const int device = tshmemx_cuda_device();
    if (device < 0)
      return fail(TSHMEM_EP_ERR_NOT_INITIALIZED, "tshmem has no GPU heap (backend %s): tshmem_ep needs one",
                  tshmemx_backend_name());
    if (n > TSHMEM_EP_MAX_PES)
      return fail(TSHMEM_EP_ERR_UNSUPPORTED, "n_pes = %d; at most TSHMEM_EP_MAX_PES = %d", n, TSHMEM_EP_MAX_PES);
    auto b = new tshmem_ep_buffer();
    b->geo.my_pe = tshmem_my_pe();
    b->geo.n_pes = n;
    b->geo.pes_per_node = tshmemx_local_n_pes();
    b->geo.spans_nodes = b->geo.pes_per_node != n;
    b->geo.nvl_bytes = num_nvl_bytes;
    b->geo.rdma_bytes = num_rdma_bytes;
    b->device = device;
    b->num_nodes = b->geo.pes_per_node > 0 && n % b->geo.pes_per_node == 0 ? n / b->geo.pes_per_node : 0;
    DeviceGuard guard(device);
    // Every kernel of the library is loaded now, before the first one can wait for another PE (see load_kernels).
    Status s = load_kernels();
    if (s != kSuccess) {
      delete b;
      return s;
    }
    if (cudaDeviceGetAttribute(&b->sm_count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) b->sm_count = 1;
    // Nodes must be consecutive PE ranges of equal size, as DeepEP's RDMA ranks are: checked locally with the
    // load/store reachability the peer table gives (the same answer on every PE of a consistent launch).
    const int first = b->num_nodes ? b->geo.my_pe / b->geo.pes_per_node * b->geo.pes_per_node : 0;
    const size_t control = control_bytes(n);
    b->sym = static_cast<char *>(tshmem_malloc(control + num_nvl_bytes + num_rdma_bytes));
    if (!b->sym) {
      s = tshmem_fail(tshmemx_last_error_code(), "tshmem_malloc of the buffer");
      delete b;
      return s;
    }
    bool consecutive = b->num_nodes > 0;
    for (int pe = 0; pe < n && consecutive; ++pe)
      consecutive = (tshmem_ptr(b->sym, pe) != nullptr) == (pe >= first && pe < first + b->geo.pes_per_node);
    const size_t row = static_cast<size_t>(publish_words(n, TSHMEM_EP_MAX_EXPERTS)) * sizeof(int32_t);
    char *p = b->sym;
    b->dispatch_sig = reinterpret_cast<uint64_t *>(p);
    b->combine_sig = b->dispatch_sig + n;
    b->ll_arrive = b->combine_sig + n;
    b->ll_count = b->ll_arrive + n;
    p += pad256(4 * static_cast<size_t>(n) * sizeof(uint64_t));
    b->publish_row = reinterpret_cast<int32_t *>(p);
    p += pad256(row);
    b->matrix = reinterpret_cast<int32_t *>(p);
    p += pad256(row * static_cast<size_t>(n));
    b->recv_area = p;
    b->staging = p + num_nvl_bytes;
    cudaError_t e = cudaMemset(b->sym, 0, control);
    if (e == cudaSuccess) e = cudaMalloc(reinterpret_cast<void **>(&b->err), sizeof(DeviceError));
    if (e == cudaSuccess) e = cudaMemset(b->err, 0, sizeof(DeviceError));
    if (e == cudaSuccess) e = cudaMalloc(reinterpret_cast<void **>(&b->counters), 2 * sizeof(unsigned));
    if (e == cudaSuccess) e = cudaMemset(b->counters, 0, 2 * sizeof(unsigned));
    // Low-latency mode: its signals (in num_rdma_bytes) start zero, its rank mask clear, its completion counter 0.
    if (e == cudaSuccess && num_rdma_bytes) e = cudaMemset(b->staging, 0, num_rdma_bytes);
    if (e == cudaSuccess) e = cudaMalloc(reinterpret_cast<void **>(&b->ll_mask), static_cast<size_t>(n) * sizeof(int));
    if (e == cudaSuccess) e = cudaMemset(b->ll_mask, 0, static_cast<size_t>(n) * sizeof(int));
    if (e == cudaSuccess) e = cudaMalloc(reinterpret_cast<void **>(&b->ll_counter), sizeof(unsigned));
    if (e == cudaSuccess) e = cudaMemset(b->ll_counter, 0, sizeof(unsigned));
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) s = cuda_fail(e, "preparing the buffer");
    if (s == kSuccess && !consecutive)
      s = fail(TSHMEM_EP_ERR_UNSUPPORTED,
               "the PEs of a node are not the consecutive range [%d, %d) of %d PEs: tshmem_ep needs nodes of "
               "consecutive PEs",
               first, first + b->geo.pes_per_node, b->geo.pes_per_node);
    // Every PE agrees that every PE succeeded (a min-reduction, which also orders every PE's zeroed signals before
    // any use), so a failure on one PE fails the creation on all and frees everywhere.
    int32_t ok[2] = {s == kSuccess ? 1 : 0, 0};
    if (cudaMemcpy(b->publish_row, ok, sizeof ok, cudaMemcpyHostToDevice) != cudaSuccess) ok[0] = 0;
    const int rc = tshmem_int32_min_reduce(TSHMEM_TEAM_WORLD, b->publish_row + 1, b->publish_row, 1);
    if (rc != 0 && s == kSuccess) s = tshmem_fail(rc, "agreeing on the buffer (tshmem_int32_min_reduce)");
    if (rc == 0 && cudaMemcpy(ok, b->publish_row, sizeof ok, cudaMemcpyDeviceToHost) != cudaSuccess) ok[1] = 0;
    if (s == kSuccess && ok[1] != 1)
      s = fail(TSHMEM_EP_ERR_TSHMEM, "another PE failed to create its buffer (its own error says why); none is made");
    if (s != kSuccess) {
      // Every PE failed alike (the agreement above): the collective free runs everywhere.
      tshmem_free(b->sym);
      cudaFree(b->err);
      cudaFree(b->counters);
      cudaFree(b->ll_mask);
      cudaFree(b->ll_counter);
      delete b;
      return s;
    }
    *buffer = b;
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_destroy(tshmem_ep_buffer_t buffer) {
  return guarded("tshmem_ep_buffer_destroy", [&]() -> Status {
    if (!buffer) return kSuccess;
    DeviceGuard guard(buffer->device);
    const cudaError_t e = cudaDeviceSynchronize();
    tshmem_free(buffer->sym);  // collective, also after a device failure, so no PE is left waiting
    cudaFree(buffer->err);
    cudaFree(buffer->counters);
    cudaFree(buffer->ll_mask);
    cudaFree(buffer->ll_counter);
    delete buffer;
    if (e != cudaSuccess) return cuda_fail(e, "cudaDeviceSynchronize");
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_info(tshmem_ep_buffer_t buffer, tshmem_ep_buffer_info_t *info) {
  return guarded("tshmem_ep_buffer_info", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    if (!info) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "info = NULL; it is required");
    info->my_pe = buffer->geo.my_pe;
    info->n_pes = buffer->geo.n_pes;
    info->pes_per_node = buffer->geo.pes_per_node;
    info->num_nodes = buffer->num_nodes;
    info->device = buffer->device;
    info->num_blocks = data_blocks(*buffer);
    info->num_nvl_bytes = buffer->geo.nvl_bytes;
    info->num_rdma_bytes = buffer->geo.rdma_bytes;
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_set_num_blocks(tshmem_ep_buffer_t buffer, int num_blocks) {
  return guarded("tshmem_ep_buffer_set_num_blocks", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    if (num_blocks < 0 || num_blocks > 65535)
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "num_blocks = %d; must be in [0, 65535] (0: the default)",
                  num_blocks);
    buffer->num_blocks = num_blocks;
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_set_timeout_ms(tshmem_ep_buffer_t buffer, int64_t timeout_ms) {
  return guarded("tshmem_ep_buffer_set_timeout_ms", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    if (timeout_ms < 0 || timeout_ms > 86400000)
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT,
                  "timeout_ms = %lld; must be in [0, 86400000] (0: tshmem's own bound, TSHMEM_WAIT_TIMEOUT_MS)",
                  static_cast<long long>(timeout_ms));
    buffer->timeout_ms = static_cast<uint64_t>(timeout_ms);
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_check_device_errors(tshmem_ep_buffer_t buffer, cudaStream_t stream) {
  return guarded("tshmem_ep_check_device_errors", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    DeviceGuard guard(buffer->device);
    return take_device_error(buffer, stream);
  });
}

}  // extern "C"
