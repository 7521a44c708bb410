// NVLink multicast (NVLS): the policy that decides whether tshmem may use it, and the multicast region.
// All multicast code of the host runtime lives in src/nvls/ (a hook rejects cuMulticastCreate elsewhere).
//
// Policy (nvls_local_policy, then agreed by all PEs in nvls_init): multicast is used only when
//   1. none of TSHMEM_DISABLE_NVLS=1, NVSHMEM_DISABLE_NVLS=1 (NVSHMEM's rule), NCCL_NVLS_ENABLE=0 (NCCL's
//      rule) is set on this PE — checked FIRST: when one is set, no multicast driver call is made at all,
//      not even resolving the entry points (proved by test/unit/nvls_policy_test.cc, which counts them);
//   2. the heap is on the vmm backend (cuMemCreate memory is what a multicast object can bind);
//   3. the multicast entry points resolve and this PE's device reports CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED;
//   4. the heap base and size are multiples of the multicast granularity;
// and every PE's verdict is "yes" (one allreduce): one PE that may not or cannot use multicast turns it
// off everywhere, so every PE runs the same (unicast) code.
//
// The region: the whole symmetric heap is bound to one multicast object per node, so every symmetric
// address has a multicast twin: mc = mc_base + (local - heap_base). The multicast mapping is published in
// the device state (mc_base, TSHMEMI_STATE_MULTICAST) and returned by tshmemx_mc_ptr.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "env.h"

namespace tshmemi {

/// What the local policy looks at (init fills it from what it made; tests fill it by hand).
struct NvlsPolicyInput {
  const EnvOptions *env = nullptr;
  std::string backend;     ///< resolved backend name: "vmm", "ipc", "shm"
  int cuda_device = -1;    ///< -1 without a GPU
  int local_n_pes = 1;     ///< devices the multicast object would span
  uint64_t heap_base = 0;  ///< this PE's heap base
  uint64_t heap_size = 0;  ///< bytes of heap to bind
  /// Collective: backs the whole heap with memory (a heap backed as it is used); empty: nothing to do.
  std::function<Status()> back_whole_heap;
};

/// This PE's verdict.
struct NvlsDecision {
  bool use = false;
  uint64_t granularity = 0;  ///< the multicast granularity (recommended when it divides the heap, else minimum)
  std::string reason;        ///< why not (or "available")
};

/// The local policy (see above). Makes no multicast driver call when a variable forbids multicast or the
/// backend cannot bind; otherwise resolves the multicast table and queries the device. Not collective.
NvlsDecision nvls_local_policy(const NvlsPolicyInput &input);

/// The multicast mapping of the heap on this PE.
class NvlsRegion {
 public:
  virtual ~NvlsRegion() = default;
  virtual uint64_t mc_base() const = 0;  ///< where the multicast object is mapped
  virtual uint64_t size() const = 0;     ///< bytes bound (the whole heap)
  /// Collective teardown: unmap, barrier, unbind, barrier, release.
  virtual Status destroy(Bootstrap &boot) = 0;
};

/// Collective over all PEs, after the device state exists: decides (nvls_local_policy on `input` + agreement),
/// and when every PE may use multicast, creates the region (`*region`) and republishes the device state with
/// mc_base. `*reason` becomes "on" or why multicast is off. A failure of the multicast path itself is not an init
/// failure: every PE agrees on it, undoes what it did, logs a warning naming the cause and runs without
/// multicast. Returns an error only when the bootstrap fails.
Status nvls_init(Bootstrap &boot, const NvlsPolicyInput &input, std::unique_ptr<NvlsRegion> *region,
                 std::string *reason);

/// Collective: tears `*region` down and resets it (no-op without one). Call before the heap's backend is
/// destroyed.
void nvls_finalize(Bootstrap &boot, std::unique_ptr<NvlsRegion> *region);

}  // namespace tshmemi
