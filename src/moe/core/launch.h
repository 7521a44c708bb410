// What every CUDA launcher is given besides its arguments: the call's device and stream, the per-device facts
// that size its grid, and the device's value-error record (core/value_errors.h).
#pragma once

#include <cuda_runtime_api.h>

#include "core/value_errors.h"

namespace tshmem_moe {

struct LaunchCtx {
  int device;
  int num_sms;  // grid sizing only: results never depend on it
  int max_smem_per_block;
  int cc_major;  // compute capability of the device
  cudaStream_t stream;
  DeviceError *err;
};

}  // namespace tshmem_moe
