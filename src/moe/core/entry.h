// The shape every entry point follows (CUTLASS-style check -> allocate -> run): validate the views, enter the
// primary input's device, prepare outputs, then run the CPU reference (host tensors) or the CUDA launcher
// followed by the value-check report. Included by every family's <family>_api.cc.
#pragma once

#include <cinttypes>

#include "core/device.h"
#include "core/launch.h"
#include "core/tensor.h"

namespace tshmem_moe {

#define MOE_REQUIRE(cond, ...)                                                            \
  do {                                                                                    \
    if (!(cond)) return ::tshmem_moe::fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, __VA_ARGS__); \
  } while (0)

#define MOE_LIMIT(cond, ...)                                                         \
  do {                                                                               \
    if (!(cond)) return ::tshmem_moe::fail(TSHMEM_MOE_ERR_UNSUPPORTED, __VA_ARGS__); \
  } while (0)

// Enters `device` (no-op for the CPU) and fills the launch context from the per-device cache.
inline Status enter_device(DeviceGuard &guard, int device, cudaStream_t stream, LaunchCtx *ctx) {
  *ctx = LaunchCtx{device, 0, 0, 0, stream, nullptr};
  if (device == TSHMEM_MOE_DEVICE_CPU) return kSuccess;
  MOE_TRY(guard.enter(device));
  (void)cudaGetLastError();  // a stale error of an earlier, unrelated runtime call must not be blamed on us
  const DeviceInfo *info = nullptr;
  MOE_TRY(device_info(device, &info));
  MOE_TRY(grid_sms(device, &ctx->num_sms));
  ctx->max_smem_per_block = info->max_smem_per_block;
  ctx->cc_major = info->cc_major;
  ctx->err = info->error;
  return kSuccess;
}

// One entry point's stay on its primary input's device: the guard that entered it (and restores the caller's
// device), the launch context, and the outputs the call makes (freed again unless committed).
class Entry {
 public:
  Entry(int device, cudaStream_t stream, const char *primary)
      : device_(device), stream_(stream), outs(device, stream, primary) {}
  Status enter() { return enter_device(guard_, device_, stream_, &ctx); }

 private:
  int device_;
  cudaStream_t stream_;
  DeviceGuard guard_;  // before outs: the outputs are freed while the device is still entered

 public:
  LaunchCtx ctx{};
  Outputs outs;
};

template <class A>
Status execute(const A &args, const LaunchCtx &ctx, Status (*ref)(const A &),
               Status (*launch)(const A &, const LaunchCtx &)) {
  if (ctx.device == TSHMEM_MOE_DEVICE_CPU) return ref(args);
  MOE_TRY(launch(args, ctx));
  return finish_value_checks(ctx.device, ctx.stream);
}

// An optional secondary input: NULL is fine; otherwise it must pass check_input and be on `device`.
inline Status check_optional(const Tensor *t, const char *name, std::initializer_list<tshmem_moe_dtype_t> dtypes,
                             int ndim, bool contiguous, int device, const char *primary) {
  if (t == nullptr) return kSuccess;
  MOE_TRY(check_input(t, name, dtypes, ndim, contiguous));
  return check_device(*t, name, device, primary);
}

inline Status check_secondary(const Tensor *t, const char *name, std::initializer_list<tshmem_moe_dtype_t> dtypes,
                              int ndim, bool contiguous, int device, const char *primary) {
  MOE_TRY(check_input(t, name, dtypes, ndim, contiguous));
  return check_device(*t, name, device, primary);
}

}  // namespace tshmem_moe
