// CPU placement: binds the process to the CPUs nearest its GPU (hwloc), so that host staging, the MPI
// progress engine and kernel launches run on the socket the GPU hangs off.
#pragma once

#include <string>

#include "common/error.h"

namespace tshmemi {

/// Binds every thread of this process to the CPUs local to CUDA device `cuda_device` (the PCI device's
/// locality from hwloc's CUDA-runtime helper), intersected with the CPUs the process may already use, so a
/// narrower binding by the launcher (mpirun --bind-to core) or a cgroup is respected. When the intersection
/// is empty nothing is changed. On success `described` tells what was done ("0-15,32-47", "unchanged: ...").
/// Errors name the hwloc call; the caller treats them as warnings (binding only costs performance).
Status bind_near_gpu(int cuda_device, std::string *described);

}  // namespace tshmemi
