// Per-device state of tshmem_moe. Everything is keyed by device index: the SM count, the shared-memory limit
// and the value-error record of device 1 are never taken from device 0 (the multi-GPU bug this library
// answers).
#include "core/device.h"

#include <atomic>
#include <cinttypes>
#include <memory>
#include <mutex>
#include <vector>

namespace tshmem_moe {
namespace {

std::atomic<int> g_num_sms_override{0};
std::atomic<int> g_check_mode{TSHMEM_MOE_CHECK_SYNC};

struct StreamWorkspace {
  unsigned long long stream_id;
  void *memory;
};

struct Cache {
  std::mutex mu;
  std::vector<std::unique_ptr<DeviceInfo>> devices;      // index = device; filled lazily
  std::vector<std::vector<StreamWorkspace>> workspaces;  // index = device
};
Cache &cache() {
  static Cache *c = new Cache;  // never destroyed: device memory may outlive static destruction order
  return *c;
}

struct ErrorText {
  const char *tensor;
  const char *rule;
};
// The tensor and rule of a recorded code, from the registry (core/value_errors.h).
ErrorText value_error_text(int code) {
  switch (static_cast<ValueErrorCode>(code)) {
#define TSHMEM_MOE_VALUE_RULE_TEXT(name, code, tensor, rule) \
  case name: return {tensor, rule};
    TSHMEM_MOE_VALUE_RULES(TSHMEM_MOE_VALUE_RULE_TEXT)
#undef TSHMEM_MOE_VALUE_RULE_TEXT
    case kNoValueError:
    case kNumValueErrors: break;
  }
  return {"?", "unknown value rule"};
}

}  // namespace

DeviceGuard::~DeviceGuard() {
  if (restore_) (void)cudaSetDevice(prev_);
}

Status DeviceGuard::enter(int device) {
  if (device == TSHMEM_MOE_DEVICE_CPU) return kSuccess;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return fail(TSHMEM_MOE_ERR_NO_DEVICE, "tensors are on cuda:%d but no CUDA device is usable (%s)", device,
                cudaGetErrorString(e));
  }
  if (device >= count)
    return fail(TSHMEM_MOE_ERR_NO_DEVICE, "tensors are on cuda:%d but only %d CUDA device(s) exist", device, count);
  MOE_CUDA(cudaGetDevice(&prev_));
  if (prev_ != device) {
    MOE_CUDA(cudaSetDevice(device));
    restore_ = true;
  }
  return kSuccess;
}

Status device_info(int device, const DeviceInfo **info) {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (static_cast<size_t>(device) >= c.devices.size()) c.devices.resize(static_cast<size_t>(device) + 1);
  std::unique_ptr<DeviceInfo> &slot = c.devices[static_cast<size_t>(device)];
  if (!slot) {
    auto d = std::make_unique<DeviceInfo>();
    MOE_CUDA(cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount, device));
    MOE_CUDA(cudaDeviceGetAttribute(&d->max_smem_per_block, cudaDevAttrMaxSharedMemoryPerBlock, device));
    MOE_CUDA(cudaDeviceGetAttribute(&d->cc_major, cudaDevAttrComputeCapabilityMajor, device));
    void *p = nullptr;
    MOE_CUDA(cudaMalloc(&p, sizeof(DeviceError)));  // current device == `device` (caller holds the guard)
    MOE_CUDA(cudaMemset(p, 0, sizeof(DeviceError)));
    d->error = static_cast<DeviceError *>(p);
    slot = std::move(d);
  }
  *info = slot.get();
  return kSuccess;
}

Status grid_sms(int device, int *num_sms) {
  const DeviceInfo *info = nullptr;
  MOE_TRY(device_info(device, &info));
  int o = g_num_sms_override.load();
  if (o > info->sm_count)
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT,
                "the num_sms override %d exceeds the %d SMs of cuda:%d (rule: 0 < num_sms <= device SM count)", o,
                info->sm_count, device);
  *num_sms = o > 0 ? o : info->sm_count;
  return kSuccess;
}

Status stream_workspace(int device, cudaStream_t stream, void **workspace) {
  *workspace = nullptr;
  // The per-thread default stream is one handle for many streams (one per host thread): no workspace.
  if (stream == cudaStreamPerThread) return kSuccess;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone ||
      cudaStreamGetId(stream, &id) != cudaSuccess) {
    (void)cudaGetLastError();  // e.g. the legacy stream while another stream captures: no workspace, no error
    return kSuccess;
  }
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (static_cast<size_t>(device) >= c.workspaces.size()) c.workspaces.resize(static_cast<size_t>(device) + 1);
  std::vector<StreamWorkspace> &list = c.workspaces[static_cast<size_t>(device)];
  for (const StreamWorkspace &w : list)
    if (w.stream_id == id) {
      *workspace = w.memory;
      return kSuccess;
    }
  if (list.size() >= kMaxStreamWorkspaces) return kSuccess;
  // Relaxed capture mode: allocating must not invalidate another thread's capture.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  MOE_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  void *p = nullptr;
  const cudaError_t e = cudaMalloc(&p, kStreamWorkspaceBytes);
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // the kernels' other paths need no workspace
    return kSuccess;
  }
  MOE_CUDA(cudaMemsetAsync(p, 0, kStreamWorkspaceBytes, stream));  // ordered before the stream's first user
  list.push_back({id, p});
  *workspace = p;
  return kSuccess;
}

static Status read_and_clear(int device, cudaStream_t stream) {
  const DeviceInfo *info = nullptr;
  MOE_TRY(device_info(device, &info));
  DeviceError h{};
  MOE_CUDA(cudaMemcpyAsync(&h, info->error, sizeof h, cudaMemcpyDeviceToHost, stream));
  MOE_CUDA(cudaStreamSynchronize(stream));
  if (h.code == kNoValueError) return kSuccess;
  MOE_CUDA(cudaMemsetAsync(info->error, 0, sizeof(DeviceError), stream));
  MOE_CUDA(cudaStreamSynchronize(stream));
  ErrorText t = value_error_text(h.code);
  return fail(TSHMEM_MOE_ERR_INVALID_VALUE, "on cuda:%d, tensor '%s' holds %lld at flat position %lld (bound %lld): %s",
              device, t.tensor, h.value, h.position, h.bound, t.rule);
}

Status finish_value_checks(int device, cudaStream_t stream) {
  MOE_CUDA(cudaGetLastError());  // a failed launch is reported here, by this call
  if (g_check_mode.load() != TSHMEM_MOE_CHECK_SYNC) return kSuccess;
  return read_and_clear(device, stream);
}

namespace {
// A public call's `device` argument: checked (>= 0), then entered for the rest of the call.
Status enter_device_arg(DeviceGuard &guard, int device) {
  if (device < 0) return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "device = %d; it must be >= 0", device);
  return guard.enter(device);
}
}  // namespace

}  // namespace tshmem_moe

using namespace tshmem_moe;

extern "C" {

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_set_num_sms(int num_sms) {
  return guarded("tshmem_moe_set_num_sms", [&]() -> Status {
    if (num_sms < 0)
      return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "num_sms = %d; it must be >= 0 (0 clears the override)", num_sms);
    g_num_sms_override.store(num_sms);
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_get_device_num_sms(int device, int *num_sms) {
  return guarded("tshmem_moe_get_device_num_sms", [&]() -> Status {
    if (num_sms == nullptr) return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "num_sms is NULL");
    DeviceGuard guard;
    MOE_TRY(enter_device_arg(guard, device));
    const DeviceInfo *info = nullptr;
    MOE_TRY(device_info(device, &info));
    *num_sms = info->sm_count;
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_get_num_sms(int device, int *num_sms) {
  return guarded("tshmem_moe_get_num_sms", [&]() -> Status {
    if (num_sms == nullptr) return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "num_sms is NULL");
    DeviceGuard guard;
    MOE_TRY(enter_device_arg(guard, device));
    return grid_sms(device, num_sms);
  });
}

TSHMEM_MOE_API void tshmem_moe_set_check_mode(tshmem_moe_check_mode_t mode) {
  g_check_mode.store(mode == TSHMEM_MOE_CHECK_DEFERRED ? TSHMEM_MOE_CHECK_DEFERRED : TSHMEM_MOE_CHECK_SYNC);
}

TSHMEM_MOE_API tshmem_moe_check_mode_t tshmem_moe_get_check_mode(void) {
  return static_cast<tshmem_moe_check_mode_t>(g_check_mode.load());
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_check_device_errors(int device, cudaStream_t stream) {
  return guarded("tshmem_moe_check_device_errors", [&]() -> Status {
    DeviceGuard guard;
    MOE_TRY(enter_device_arg(guard, device));
    return read_and_clear(device, stream);
  });
}

}  // extern "C"
