// libtshmem_device.a: the device state of a program built with separate compilation (-rdc). Every -rdc unit that
// includes the device API declares the copy `extern __constant__` (state.cuh); this object defines it, fills it and
// registers the fill with libtshmem. One 8,288-byte copy per device program, in constant bank 3 as each unit's own
// copy is without -rdc, however many units the program has.
//
// The registration is here, not in the units, because of when the CUDA runtime knows the copy: it registers an
// -rdc program's variables when the last of its objects' static initializers has run, and a fill before that fails
// (a shared library loaded after tshmem_init is filled during its static initialization). This object comes after
// the units on the link line (an archive after the objects), so its initializers run after theirs.
#include "tshmem/device/state.cuh"

#include "tshmem/device/impl/state_fill.cuh"

#if !defined(__CUDACC_RDC__) || defined(TSHMEM_CUMODULE)
#error "state_rdc.cu is the -rdc definition of the device state: compile it with -rdc=true, without TSHMEM_CUMODULE"
#endif

__constant__ tshmemi_device_state tshmemi::binary::state_in_libtshmem_device;

namespace tshmemi {
namespace binary {
namespace {

/// A kernel of the program's module, never launched: the fill names the module by it (fill_copy).
__global__ void program_anchor() {}

/// Fill callback (tshmemi_state_fill_fn) of the program's copy, through this binary's runtime.
int fill_state(int cuda_device, const tshmemi_device_state *state) {
  return fill_copy(state_in_libtshmem_device, reinterpret_cast<const void *>(&program_anchor), cuda_device, state);
}

}  // namespace

int link_libtshmem_device(const void *) { return 0; }

StateRegistration<&fill_state> state_registration;

}  // namespace binary
}  // namespace tshmemi
