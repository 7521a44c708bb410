// Kernels that wait on the off-node proxy, and CUDA's lazy loading (docs/design.md, "Kernels that wait on the
// proxy"). A kernel loaded while another kernel of the process runs makes the GPU hold later work of the
// process - the proxy's copies too - until the running kernel ends; if that kernel waits for the proxy, neither
// ever ends. So in a job over several nodes the kernels are loaded before: every module when tshmem starts CUDA,
// else every unit that includes the device API (tshmem's own collectives among them) when its state is filled.
#pragma once

#include "common/error.h"

namespace tshmemi {

/// Before tshmem_init's first CUDA call, in a job over several nodes: asks CUDA to load every module whole when
/// it starts (CUDA_MODULE_LOADING=EAGER) unless the variable is set. No effect where CUDA has started already.
void prefer_eager_module_loading();

/// Whether CUDA loads kernels on their first launch in this process (CUDA has started).
bool lazy_module_loading();

}  // namespace tshmemi
