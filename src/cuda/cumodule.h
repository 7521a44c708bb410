// The device state of a module loaded at run time (tshmemx_cumodule_init; cumodule.cc says how such a module
// declares it).
#pragma once

#include "common/error.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

/// Copies the current device state into `module`'s tshmemi_device_state_c; errors name `call`. The caller has
/// checked that the module is not NULL and that a device state exists.
Status fill_module_state(tshmemx_cumodule_t module, const char *call);

}  // namespace tshmemi
