// The GPU half of init, behind one header so that init.cc reads the same with or without CUDA.
// Built from gpu_runtime.cc with CUDA, from gpu_runtime_none.cc without.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "env.h"
#include "mem/backend.h"
#include "tshmem/device/proxy_types.h"
#include "tshmem/device/state_types.h"

namespace tshmemi {

class DeviceState;  // state/device_state.h
class PeerTable;    // state/peer_table.h

/// True when the CUDA runtime loads, a driver answers and at least one device is visible.
bool gpu_available();
/// Why gpu_available() is false ("no CUDA driver", "0 devices", "built without CUDA").
std::string gpu_unavailable_reason();

/// What select_gpu decided.
struct GpuChoice {
  int device = -1;  ///< the CUDA device this PE drives
  /// On-stream collectives launch as programmatic dependent launches: TSHMEM_COLL_PDL and a device of compute
  /// capability 9.0 or later.
  bool coll_early_launch = false;
};

/// select_gpu's rule for one PE: TSHMEM_DEVICE, else the node-local rank modulo the devices it sees; -1 when
/// TSHMEM_DEVICE names a device beyond them.
int device_for_local_rank(const EnvOptions &env, int local_rank, int visible);

/// Collective over the node's PEs: picks this PE's GPU (TSHMEM_DEVICE, else by node-local rank), makes it
/// current, binds the CPU near it (hwloc, unless TSHMEM_BIND=none).
Status select_gpu(const EnvOptions &env, Bootstrap &boot, GpuChoice *out);

/// What the device state is made of, gathered by init from the parts that own it.
struct DeviceStateInputs {
  int cuda_device = -1;
  const PeerTable *peers = nullptr;
  const Bootstrap *boot = nullptr;
  const MemBackend *mem = nullptr;  ///< its registration range extends the symmetric span
  uint64_t heap_size = 0;
  int64_t wait_timeout_ms = 0;                             ///< TSHMEM_WAIT_TIMEOUT_MS
  const tshmemi_team_entry *teams = nullptr;               ///< TSHMEMI_TEAM_SLOTS entries (WORLD and NODE)
  tshmemi_proxy_channel *proxy_channel = nullptr;          ///< the off-node proxy's host channel; null without one
  tshmemi_proxy_device_side *proxy_device_side = nullptr;  ///< null without an off-node proxy
  bool proxy_unavailable = false;                          ///< the job spans nodes and no proxy runs: kernels say why
};

/// Builds the device state (constant copies in every registered unit, and the global peer-table mirror). `*out`
/// owns it from the moment something may have been published, also when a later step fails.
Status create_device_state(const DeviceStateInputs &in, std::unique_ptr<DeviceState> *out);

}  // namespace tshmemi
