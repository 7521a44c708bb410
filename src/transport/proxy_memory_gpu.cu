// The proxy on a GPU heap (vmm, ipc): staging is pinned host memory; every copy and atomic goes on one of the
// proxy's own non-blocking streams, one per lane (never the legacy default stream, which would wait for a kernel
// that is itself waiting for the proxy); events mark points on them. Atomics run as a one-thread kernel, so they
// are atomic with respect to the GPU's own.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>

#include "transport/proxy_memory.h"

namespace tshmemi {
namespace {

template <class T>
__global__ void amo_kernel(T *word, unsigned kind, T value, T compare, unsigned long long *old_out) {
  T old;
  // (kind & 15u) is amo_kind::op(kind), written out: with the call this kernel compiled to other code.
  if ((kind & 15u) == amo_kind::kRead) {
    old = atomicAdd(word, T(0));
  } else if ((kind & 15u) == amo_kind::kCswap) {
    old = atomicCAS(word, compare, value);
  } else if ((kind & 15u) == amo_kind::kSet || (kind & 15u) == amo_kind::kSwap) {
    old = atomicExch(word, value);
  } else if ((kind & 15u) == amo_kind::kAdd) {
    old = atomicAdd(word, value);
  } else {
    T seen = *reinterpret_cast<volatile T *>(word);
    do {
      old = seen;
      seen = atomicCAS(word, old, amo_kind::result<T>(kind, old, value, compare));
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

// One lane: a stream of the proxy's own and a ring of events that mark points on it. Points complete in
// order (one stream), so `completed` only moves forward.
struct Lane {
  static constexpr uint64_t kEvents = 256;
  cudaStream_t stream = nullptr;
  cudaEvent_t events[kEvents] = {};
  uint64_t issued = 0, completed = 0;
  // The oldest incomplete point and since when it has been seen incomplete (for the stall warning).
  uint64_t stalled_point = 0;
  std::chrono::steady_clock::time_point stalled_since;
  bool warned = false;
};

/// A copy of the proxy's that has not run for this long means the GPU is holding it back (no copy of a
/// chunk takes a fraction of it): the proxy says so once per stall, while the waits above it run to their bound.
constexpr std::chrono::seconds kStallWarning{5};

class GpuProxyMemory final : public ProxyMemory {
 public:
  explicit GpuProxyMemory(int device) : device_(device) {}
  ~GpuProxyMemory() override {
    if (result_ != nullptr) cudaFreeHost(result_);
    if (device_side_ != nullptr) cudaFree(device_side_);
    for (Lane &lane : lanes_) {
      for (cudaEvent_t event : lane.events)
        if (event != nullptr) cudaEventDestroy(event);
      if (lane.stream != nullptr) cudaStreamDestroy(lane.stream);
    }
  }

  Status create() {
    TSHMEMI_PROXY_CUDA(cudaSetDevice(device_));
    for (Lane &lane : lanes_) {
      TSHMEMI_PROXY_CUDA(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
      for (cudaEvent_t &event : lane.events)
        TSHMEMI_PROXY_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    }
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
  Status alloc_device_side(tshmemi_proxy_channel *channel, int my_pe, tshmemi_proxy_device_side **out) override {
    tshmemi_proxy_device_side initial = {};
    initial.capacity = channel->capacity;
    initial.my_pe = my_pe;
    void *failure = nullptr;
    TSHMEMI_PROXY_CUDA(cudaHostGetDevicePointer(&failure, tshmemi_proxy_failure(channel, channel->capacity), 0));
    initial.failure = static_cast<const char *>(failure);
    if (channel->staging != nullptr) {  // the put staging, which kernels write themselves (proxy_types.h)
      void *staging = nullptr;
      TSHMEMI_PROXY_CUDA(cudaHostGetDevicePointer(&staging, channel->staging, 0));
      initial.staging = static_cast<unsigned char *>(staging);
      initial.stage_bytes = channel->stage_bytes;
      initial.stage_max = channel->stage_max;
    }
    TSHMEMI_PROXY_CUDA(cudaMalloc(reinterpret_cast<void **>(&device_side_), sizeof(initial)));
    TSHMEMI_PROXY_CUDA(cudaMemcpy(device_side_, &initial, sizeof(initial), cudaMemcpyHostToDevice));
    *out = device_side_;
    return TSHMEM_SUCCESS;
  }

  // Host to host (a kernel's result slot, a host call's buffer) is the CPU's: no copy engine, no stream, and
  // nothing that waits for another process's time slice on a shared GPU.
  Status copy(ProxyLane lane, void *dst, const void *src, size_t bytes, bool *queued) override {
    if (host_memory(dst) && host_memory(src)) {
      std::memcpy(dst, src, bytes);
      *queued = false;
      return TSHMEM_SUCCESS;
    }
    if (lane == kTargetLane) TSHMEM_CHECK(flush_puts());
    TSHMEMI_PROXY_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, lanes_[lane].stream));
    *queued = true;
    return TSHMEM_SUCCESS;
  }

  // One copy after the gathered puts (never in their batch: it must land after them).
  Status apply_store(void *word, const void *staging, unsigned width) override {
    TSHMEM_CHECK(flush_puts());
    TSHMEMI_PROXY_CUDA(cudaMemcpyAsync(word, staging, width, cudaMemcpyHostToDevice, lanes_[kTargetLane].stream));
    return TSHMEM_SUCCESS;
  }

  // Puts are gathered and issued as one batch of copies (one driver call for many small puts) when
  // something else is issued on the lane; a put that overlaps a gathered one issues the batch first, as the
  // copies of a batch may run in any order.
  Status apply_put(void *heap_dst, const void *staging, size_t bytes) override {
    char *begin = static_cast<char *>(heap_dst);
    for (size_t i = 0; i < pending_; ++i) {
      char *other = static_cast<char *>(dsts_[i]);
      if (begin < other + sizes_[i] && other < begin + bytes) {
        TSHMEM_CHECK(flush_puts());
        break;
      }
    }
    dsts_[pending_] = heap_dst;
    srcs_[pending_] = staging;
    sizes_[pending_] = bytes;
    if (++pending_ == kBatch) TSHMEM_CHECK(flush_puts());
    return TSHMEM_SUCCESS;
  }

  Status apply_amo(void *word, unsigned amo, unsigned width, uint64_t value, uint64_t compare, uint64_t *old,
                   bool wait) override {
    TSHMEM_CHECK(flush_puts());
    const cudaStream_t stream = lanes_[kTargetLane].stream;
    // The old value goes to `old`, or (a signal or non-fetching atomic) to a word nobody reads.
    unsigned long long *out = nullptr;
    void *host = old != nullptr ? static_cast<void *>(old) : static_cast<void *>(result_);
    TSHMEMI_PROXY_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void **>(&out), host, 0));
    if (width == 4)
      amo_kernel<unsigned><<<1, 1, 0, stream>>>(static_cast<unsigned *>(word), amo, static_cast<unsigned>(value),
                                                static_cast<unsigned>(compare), out);
    else
      amo_kernel<unsigned long long>
          <<<1, 1, 0, stream>>>(static_cast<unsigned long long *>(word), amo, value, compare, out);
    TSHMEMI_PROXY_CUDA(cudaGetLastError());
    if (wait) TSHMEMI_PROXY_CUDA(cudaStreamSynchronize(stream));
    return TSHMEM_SUCCESS;
  }

  Status mark(ProxyLane which, uint64_t *point) override {
    if (which == kTargetLane) TSHMEM_CHECK(flush_puts());
    Lane &lane = lanes_[which];
    if (lane.issued - lane.completed == Lane::kEvents) {  // every event in use: the oldest must complete first
      TSHMEMI_PROXY_CUDA(cudaEventSynchronize(lane.events[lane.completed % Lane::kEvents]));
      ++lane.completed;
    }
    TSHMEMI_PROXY_CUDA(cudaEventRecord(lane.events[lane.issued % Lane::kEvents], lane.stream));
    *point = ++lane.issued;
    return TSHMEM_SUCCESS;
  }

  Status passed(ProxyLane which, uint64_t point, bool *done) override {
    Lane &lane = lanes_[which];
    while (lane.completed < point) {
      const cudaError_t rc = cudaEventQuery(lane.events[lane.completed % Lane::kEvents]);
      if (rc == cudaErrorNotReady) break;
      TSHMEMI_PROXY_CUDA(rc);
      ++lane.completed;
    }
    *done = lane.completed >= point;
    if (!*done) note_stall(which, lane);
    return TSHMEM_SUCCESS;
  }

 private:
  static constexpr size_t kBatch = 128;

  // The GPU runs nothing this proxy queued: something in this process holds its queues behind a kernel that
  // waits for this proxy (docs/design.md, "Kernels that wait on the proxy").
  void note_stall(ProxyLane which, Lane &lane) {
    const auto now = std::chrono::steady_clock::now();
    if (lane.stalled_point != lane.completed + 1) {
      lane.stalled_point = lane.completed + 1;
      lane.stalled_since = now;
      lane.warned = false;
      return;
    }
    if (lane.warned || now - lane.stalled_since < kStallWarning) return;
    lane.warned = true;
    TSHMEMI_LOG(
        kWarn, kLogCuda,
        "off-node proxy: a copy on its %s lane (GPU %d) has not run for %lld s. The GPU holds the proxy's "
        "work behind a kernel that waits for this proxy: a kernel launched for the first time under "
        "CUDA lazy loading (CUDA_MODULE_LOADING=LAZY), or a module load, in this process while such a "
        "kernel runs. The waits end at TSHMEM_PROXY_TIMEOUT_MS (docs/design.md, \"Kernels that wait on "
        "the proxy\")",
        which == kOriginLane ? "origin" : "target", device_,
        static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(now - lane.stalled_since).count()));
  }

  static bool host_memory(const void *p) {
    cudaPointerAttributes attributes = {};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;  // let the copy engine sort it out (and report what is wrong)
    }
    return attributes.type == cudaMemoryTypeHost || attributes.type == cudaMemoryTypeUnregistered;
  }

  Status flush_puts() {
    if (pending_ == 0) return TSHMEM_SUCCESS;
    const cudaStream_t stream = lanes_[kTargetLane].stream;
    const size_t count = pending_;
    pending_ = 0;
    if (count > 1 && batch_copies_) {
      cudaMemcpyAttributes attributes = {};
      attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      attributes.flags = cudaMemcpyFlagPreferOverlapWithCompute;  // copy engines, not the SMs a kernel holds
      size_t first = 0;
      const cudaError_t rc = cudaMemcpyBatchAsync(dsts_, srcs_, sizes_, count, &attributes, &first, 1, stream);
      if (rc == cudaSuccess) return TSHMEM_SUCCESS;
      (void)cudaGetLastError();  // not supported here: one copy each from now on
      batch_copies_ = false;
    }
    for (size_t i = 0; i < count; ++i)
      TSHMEMI_PROXY_CUDA(cudaMemcpyAsync(dsts_[i], srcs_[i], sizes_[i], cudaMemcpyHostToDevice, stream));
    return TSHMEM_SUCCESS;
  }

  int device_;
  Lane lanes_[2];
  unsigned long long *result_ = nullptr;  ///< where unread old values go
  tshmemi_proxy_device_side *device_side_ = nullptr;
  void *dsts_[kBatch] = {};
  const void *srcs_[kBatch] = {};
  size_t sizes_[kBatch] = {};
  size_t pending_ = 0;
  bool batch_copies_ = true;
};

}  // namespace

Status make_gpu_proxy_memory(int cuda_device, std::unique_ptr<ProxyMemory> *out) {
  auto memory = std::make_unique<GpuProxyMemory>(cuda_device);
  TSHMEM_CHECK(memory->create());
  *out = std::move(memory);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
