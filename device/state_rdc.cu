// libtshmem_device.a: the one definition of the device state for programs built with separate compilation
// (-rdc). Every -rdc unit that includes the device API declares it `extern __constant__` (state.cuh); the device
// link takes this definition from the archive, and the host link its shadow and registration with the CUDA
// runtime, through which fill_state copies the state in. One 8,288-byte copy per device program, in constant
// bank 3 like the per-unit copies without -rdc, however many units the program has.
#include "tshmem/device/state_types.h"

#if !defined(__CUDACC_RDC__)
#error "state_rdc.cu is the -rdc definition of the device state: compile it with -rdc=true"
#endif

// The namespace and name of state.cuh's declaration, with its hidden visibility: an -rdc shared library links
// its own copy of this archive and keeps its own state.
// clang-format off
namespace tshmemi {
inline namespace binary __attribute__((visibility("hidden"))) {
__constant__ tshmemi_device_state state_in_libtshmem_device;
}  // namespace binary
}  // namespace tshmemi
// clang-format on
