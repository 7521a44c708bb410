#include "state/device_state_builder.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace tshmemi {
namespace {

uint64_t timeout_ns(int64_t ms) {
  if (ms <= 0) return 0;
  const uint64_t limit = std::numeric_limits<uint64_t>::max() / 1000000u;
  return std::min(static_cast<uint64_t>(ms), limit) * 1000000u;
}

}  // namespace

tshmemi_device_state build_device_state(const DeviceStateParts &parts) {
  tshmemi_device_state state;
  std::memset(&state, 0, sizeof(state));
  state.version = TSHMEMI_DEVICE_STATE_VERSION;
  state.size = static_cast<uint32_t>(sizeof(state));
  state.my_pe = parts.my_pe;
  state.n_pes = parts.n_pes;
  state.flags = TSHMEMI_STATE_INITIALIZED | TSHMEMI_STATE_GPU_HEAP;
  if (parts.proxy_unavailable) state.flags |= TSHMEMI_STATE_PROXY_UNAVAILABLE;
  if (parts.load_kernels) state.flags |= TSHMEMI_STATE_LOAD_KERNELS;
  state.local_n_pes = parts.local_n_pes;
  state.heap_base = parts.heap_base;
  state.heap_size = parts.heap_size;
  state.mc_base = 0;
  state.wait_timeout_ns = timeout_ns(parts.wait_timeout_ms);
  state.peer_base_global = parts.peer_base_global;
  state.proxy_channel = parts.proxy_channel;
  state.team_table = parts.team_table;
  state.symmetric_span = parts.symmetric_span;
  state.proxy_device_side = parts.proxy_device_side;
  if (parts.peer_bases != nullptr) {
    const size_t n = std::min<size_t>(parts.peer_bases->size(), TSHMEM_MAX_PES);
    std::copy_n(parts.peer_bases->begin(), n, state.peer_base);
  }
  return state;
}

tshmemi_device_state with_multicast(tshmemi_device_state state, uint64_t mc_base) {
  state.mc_base = mc_base;
  if (mc_base != 0)
    state.flags |= TSHMEMI_STATE_MULTICAST;
  else
    state.flags &= ~static_cast<uint32_t>(TSHMEMI_STATE_MULTICAST);
  return state;
}

}  // namespace tshmemi
