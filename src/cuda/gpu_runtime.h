// The GPU half of init, behind one header so that init.cc reads the same with or without CUDA.
// Built from gpu_runtime.cc with CUDA, from gpu_runtime_none.cc without.
#pragma once

#include <string>

#include "common/error.h"

namespace tshmemi {

struct Context;

/// True when the CUDA runtime loads, a driver answers and at least one device is visible.
bool gpu_available();
/// Why gpu_available() is false ("no CUDA driver", "0 devices", "built without CUDA").
std::string gpu_unavailable_reason();

/// Picks this PE's GPU (TSHMEM_DEVICE, else by node-local rank), makes it current, binds the CPU near it
/// (hwloc, unless TSHMEM_BIND=none). Sets ctx.cuda_device.
Status select_gpu(Context &ctx);

/// Builds the device state (constant copies in every registered unit, and the global peer-table mirror).
Status create_device_state(Context &ctx);

}  // namespace tshmemi
