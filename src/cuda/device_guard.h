// Makes a CUDA device current for a scope and restores the caller's device afterwards (MSCCL++'s
// CudaDeviceGuard): tshmem's calls may come from any application thread, whose current device is the
// application's business.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/driver.h"

namespace tshmemi {

class DeviceGuard {
 public:
  DeviceGuard() = default;
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }

  /// Makes `device` current (no-op when it already is).
  Status enter(int device) {
    int current = -1;
    TSHMEM_CUDA_CHECK(cudaGetDevice(&current));
    if (current == device) return TSHMEM_SUCCESS;
    TSHMEM_CUDA_CHECK(cudaSetDevice(device));
    previous_ = current;
    return TSHMEM_SUCCESS;
  }

 private:
  int previous_ = -1;
};

}  // namespace tshmemi
