// The registry of constant-memory state copies: every translation unit that includes the device API
// registers a fill callback at static-init time (no CUDA call then); publishing fills them all, and a
// unit that registers later (a library loaded after init) is filled on arrival. The registry's mutex-guarded
// list is the only static state of the library besides the context.
#pragma once

#include "common/error.h"
#include "tshmem/device/state_types.h"

namespace tshmemi {

/// Fills every registered copy on `cuda_device` and remembers the state for late registrants.
/// Fails (naming both values) if a unit was compiled against another state layout.
Status registry_publish(int cuda_device, const tshmemi_device_state &state);

/// Fills every copy with a zeroed state (kernels then see "not initialised") and forgets the state.
void registry_withdraw();

/// The published state, zeroed when none.
tshmemi_device_state registry_current();

/// Registered units (for tests and tshmem-info).
size_t registry_size();

}  // namespace tshmemi
