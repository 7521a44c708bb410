// The live device state of one PE: the constant copies published through the registry and the
// device-global mirror of the peer table. Made by create_device_state (cuda/gpu_runtime.cc); its
// destructor withdraws the state from every registered unit and frees the mirror.
#pragma once

#include "common/error.h"
#include "tshmem/device/state_types.h"

namespace tshmemi {

class DeviceState {
 public:
  virtual ~DeviceState() = default;
  /// Replaces the device mirror of the team table (the state's team_table) with `entries`.
  virtual Status upload_teams(const tshmemi_team_entry *entries) = 0;
};

}  // namespace tshmemi
