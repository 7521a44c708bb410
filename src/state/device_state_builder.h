// The one writer of tshmemi_device_state, what every kernel reads. The subsystems own the values (the peer table,
// the heap, the proxy, the team table, the multicast mapping); this file lays them out, so a reader finds every
// field's source here and a new field is added in one place. Plain C++: builds without CUDA.
#pragma once

#include <cstdint>
#include <vector>

#include "tshmem/device/state_types.h"

namespace tshmemi {

/// What the device state is made of, from the subsystems that own each part.
struct DeviceStateParts {
  int my_pe = 0;
  int n_pes = 0;
  int local_n_pes = 0;                                     ///< PEs on this node
  uint64_t heap_base = 0;                                  ///< this PE's heap (its own peer-table slot)
  uint64_t heap_size = 0;                                  ///< symmetric
  const std::vector<uint64_t> *peer_bases = nullptr;       ///< n_pes slots; 0 where there is no load/store path
  const uint64_t *peer_base_global = nullptr;              ///< the device-memory mirror of peer_bases
  int64_t wait_timeout_ms = 0;                             ///< TSHMEM_WAIT_TIMEOUT_MS; 0 waits forever
  tshmemi_proxy_channel *proxy_channel = nullptr;          ///< device address; null without an off-node proxy
  tshmemi_proxy_device_side *proxy_device_side = nullptr;  ///< null without an off-node proxy
  bool proxy_unavailable = false;                          ///< the job spans nodes and no proxy runs: kernels say why
  const tshmemi_team_entry *team_table = nullptr;          ///< device memory, TSHMEMI_TEAM_SLOTS entries
  uint64_t symmetric_span = 0;  ///< heap plus the registration range from heap_base; 0: heap_size
  bool load_kernels = false;    ///< fill callbacks load their unit's kernels (module_loading.h)
};

/// The state of a GPU-backed PE, without multicast (with_multicast adds it).
tshmemi_device_state build_device_state(const DeviceStateParts &parts);

/// `state` with the heap's multicast mapping at `mc_base` (0: none).
tshmemi_device_state with_multicast(tshmemi_device_state state, uint64_t mc_base);

}  // namespace tshmemi
