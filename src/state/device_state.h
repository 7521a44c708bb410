// The live device state of one PE: the constant copies published through the registry and the
// device-global mirror of the peer table. Made by create_device_state (cuda/gpu_runtime.cc); its
// destructor withdraws the state from every registered unit and frees the mirror.
#pragma once

namespace tshmemi {

class DeviceState {
 public:
  virtual ~DeviceState() = default;
};

}  // namespace tshmemi
