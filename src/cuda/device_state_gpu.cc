// create_device_state: the device state of a GPU-backed PE. It fills the tshmemi_device_state from the
// context, keeps a device-global mirror of the peer table (per-lane PE lookups __ldg it instead of
// serialising on the constant cache), and publishes the state to every registered translation unit.
#include <algorithm>
#include <cstring>
#include <limits>

#include "context.h"
#include "cuda/device_guard.h"
#include "cuda/driver.h"
#include "cuda/gpu_runtime.h"
#include "cuda/module_loading.h"
#include "state/registry.h"

namespace tshmemi {
namespace {

/// Owns what the published state points to. Destroyed before the heap: withdraws the state from every
/// registered unit (kernels launched later see "not initialised"), then frees the mirror.
class GpuDeviceState final : public DeviceState {
 public:
  explicit GpuDeviceState(int device) : device_(device) {}
  ~GpuDeviceState() override {
    registry_withdraw();
    DeviceGuard guard;
    if (guard.enter(device_) != TSHMEM_SUCCESS) return;
    for (void *mem : {static_cast<void *>(mirror_), static_cast<void *>(teams_)}) {
      if (mem == nullptr) continue;
      const cudaError_t rc = cudaFree(mem);
      if (rc != cudaSuccess) TSHMEMI_LOG(kWarn, kLogCuda, "cudaFree(device state table): %s", cudaGetErrorString(rc));
    }
  }

  Status upload(const std::vector<uint64_t> &bases) {
    const size_t bytes = bases.size() * sizeof(uint64_t);
    TSHMEM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&mirror_), bytes));
    TSHMEM_CUDA_CHECK(cudaMemcpy(mirror_, bases.data(), bytes, cudaMemcpyHostToDevice));
    return TSHMEM_SUCCESS;
  }
  const uint64_t *mirror() const { return mirror_; }

  /// Allocates the team table and fills it from `ctx`'s (WORLD and NODE at init).
  Status create_teams(const Context &ctx) {
    TSHMEM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&teams_), sizeof(tshmemi_team_entry) * TSHMEMI_TEAM_SLOTS));
    tshmemi_team_entry entries[TSHMEMI_TEAM_SLOTS];
    ctx.teams.snapshot(entries);
    return upload_teams(entries);
  }
  const tshmemi_team_entry *teams() const { return teams_; }

  // Kernels read the table only between collective calls that change it (split, destroy), so a synchronous copy
  // on the legacy stream is ordered before any later launch.
  Status upload_teams(const tshmemi_team_entry *entries) override {
    DeviceGuard guard;
    TSHMEM_CHECK(guard.enter(device_));
    TSHMEM_CUDA_CHECK(
        cudaMemcpy(teams_, entries, sizeof(tshmemi_team_entry) * TSHMEMI_TEAM_SLOTS, cudaMemcpyHostToDevice));
    return TSHMEM_SUCCESS;
  }

 private:
  int device_;
  uint64_t *mirror_ = nullptr;
  tshmemi_team_entry *teams_ = nullptr;
};

uint64_t timeout_ns(int64_t ms) {
  if (ms <= 0) return 0;
  const uint64_t limit = std::numeric_limits<uint64_t>::max() / 1000000u;
  return std::min(static_cast<uint64_t>(ms), limit) * 1000000u;
}

// Kernels reach PEs of other nodes through the proxy's device channel (pinned host memory mapped into the
// device); without a proxy in a job that spans nodes, a flag lets the device trap say why.
Status publish_proxy_channel(const Context &ctx, tshmemi_device_state *state) {
  if (!ctx.proxy) {
    if (!ctx.offnode_reason.empty()) state->flags |= TSHMEMI_STATE_PROXY_UNAVAILABLE;
    return TSHMEM_SUCCESS;
  }
  void *device = nullptr;
  TSHMEM_CUDA_CHECK(cudaHostGetDevicePointer(&device, ctx.proxy->device_channel(), 0));
  state->reserved[TSHMEMI_STATE_PROXY_CHANNEL] = reinterpret_cast<uint64_t>(device);
  state->reserved[TSHMEMI_STATE_PROXY_DEVICE_SIDE] = reinterpret_cast<uint64_t>(ctx.proxy->device_side());
  return TSHMEM_SUCCESS;
}

}  // namespace

Status create_device_state(Context &ctx) {
  DeviceGuard guard;
  TSHMEM_CHECK(guard.enter(ctx.cuda_device));
  const PeerTable &peers = ctx.peers;
  if (peers.n_pes() > TSHMEM_MAX_PES)
    return set_error(TSHMEM_ERR_CONFIG, "create_device_state: %d PEs exceed TSHMEM_MAX_PES (%d)", peers.n_pes(),
                     TSHMEM_MAX_PES);

  tshmemi_device_state state;
  std::memset(&state, 0, sizeof(state));
  state.version = TSHMEMI_DEVICE_STATE_VERSION;
  state.size = static_cast<uint32_t>(sizeof(state));
  state.my_pe = peers.my_pe();
  state.n_pes = peers.n_pes();
  state.flags = TSHMEMI_STATE_INITIALIZED | TSHMEMI_STATE_GPU_HEAP;
  state.local_n_pes = ctx.boot->local_size();
  state.heap_base = peers.heap_base();
  state.heap_size = ctx.heap->size();
  state.mc_base = 0;  // multicast is mapped by src/nvls/, which sets it and TSHMEMI_STATE_MULTICAST
  state.wait_timeout_ns = timeout_ns(ctx.env.wait_timeout_ms);
  std::copy(peers.bases().begin(), peers.bases().end(), state.peer_base);
  TSHMEM_CHECK(publish_proxy_channel(ctx, &state));

  auto owned = std::make_unique<GpuDeviceState>(ctx.cuda_device);
  TSHMEM_CHECK(owned->upload(peers.bases()));
  state.peer_base_global = owned->mirror();
  TSHMEM_CHECK(owned->create_teams(ctx));
  state.reserved[TSHMEMI_STATE_TEAM_TABLE] = reinterpret_cast<uint64_t>(owned->teams());
  if (ctx.mem->registration_capacity() != 0)
    state.reserved[TSHMEMI_STATE_SYMMETRIC_SPAN] = ctx.mem->registration_base() + ctx.mem->registration_capacity();
  ctx.device_state = std::move(owned);  // from here on, teardown withdraws whatever was published
  // Kernels that wait on the off-node proxy must not meet a kernel's first load (cuda/module_loading.h): where
  // CUDA started lazily before tshmem_init, every unit's kernels are loaded as its state is filled.
  if (ctx.proxy && lazy_module_loading()) {
    state.flags |= TSHMEMI_STATE_LOAD_KERNELS;
    if (ctx.boot->rank() == 0)
      TSHMEMI_LOG(kWarn, kLogCuda,
                  "CUDA loads kernels lazily in this job over several nodes (CUDA_MODULE_LOADING=LAZY, or CUDA started "
                  "before tshmem_init): tshmem loads every kernel of the units that include its device API now. A "
                  "kernel of another module launched for the first time while a kernel waits on a PE of another "
                  "node stalls both until TSHMEM_PROXY_TIMEOUT_MS; set CUDA_MODULE_LOADING=EAGER to rule it out");
  }
  TSHMEM_CHECK(registry_publish(ctx.cuda_device, state));
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
