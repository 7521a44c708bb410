// Every kernel of tshmem_ep, so that tshmem_ep_buffer_create loads them all before any of them can run
// (docs/ep.md, "Kernels are loaded when the buffer is made"). Each kernel unit lists its kernels beside their
// definitions; load_kernels (core/buffer.cc) walks the units, the one list of them.
#pragma once

#include <cstddef>

namespace tshmem_ep {

/// A kernel as the runtime names it (its host stub) and as a message names it.
struct KernelRef {
  const void *fn;
  const char *name;
};

/// The kernels of one unit.
struct KernelSet {
  const KernelRef *kernels;
  size_t count;
};

KernelSet layout_kernels();       // layout/layout_kernels.cu
KernelSet notify_kernels();       // dispatch/notify_kernels.cu
KernelSet dispatch_kernels();     // dispatch/dispatch_kernels.cu
KernelSet combine_kernels();      // combine/combine_kernels.cu
KernelSet low_latency_kernels();  // low_latency/ll_kernels.cu

}  // namespace tshmem_ep
