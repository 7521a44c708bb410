// create_device_state: the device state of a GPU-backed PE. It takes the parts of the tshmemi_device_state
// that init gathered (state/device_state_builder.h lays them out), keeps a device-global mirror of the peer table
// (per-lane PE lookups __ldg it instead of serialising on the constant cache), and publishes the state to every
// registered translation unit.
#include "cuda/device_guard.h"
#include "cuda/driver.h"
#include "cuda/gpu_runtime.h"
#include "cuda/module_loading.h"
#include "state/device_state.h"
#include "state/device_state_builder.h"
#include "state/peer_table.h"
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

  /// Allocates the team table and fills it with `entries` (WORLD and NODE at init).
  Status create_teams(const tshmemi_team_entry *entries) {
    TSHMEM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&teams_), sizeof(tshmemi_team_entry) * TSHMEMI_TEAM_SLOTS));
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

// Kernels reach PEs of other nodes through the proxy's device channel (pinned host memory mapped into the
// device); without a proxy in a job that spans nodes, a flag lets the device trap say why.
Status proxy_channel_parts(const DeviceStateInputs &in, DeviceStateParts *parts) {
  if (in.proxy_channel == nullptr) {
    parts->proxy_unavailable = in.proxy_unavailable;
    return TSHMEM_SUCCESS;
  }
  void *device = nullptr;
  TSHMEM_CUDA_CHECK(cudaHostGetDevicePointer(&device, in.proxy_channel, 0));
  parts->proxy_channel = static_cast<tshmemi_proxy_channel *>(device);
  parts->proxy_device_side = in.proxy_device_side;
  return TSHMEM_SUCCESS;
}

}  // namespace

Status create_device_state(const DeviceStateInputs &in, std::unique_ptr<DeviceState> *out) {
  DeviceGuard guard;
  TSHMEM_CHECK(guard.enter(in.cuda_device));
  const PeerTable &peers = *in.peers;
  if (peers.n_pes() > TSHMEM_MAX_PES)
    return set_error(TSHMEM_ERR_CONFIG, "create_device_state: %d PEs exceed TSHMEM_MAX_PES (%d)", peers.n_pes(),
                     TSHMEM_MAX_PES);

  DeviceStateParts parts;
  parts.my_pe = peers.my_pe();
  parts.n_pes = peers.n_pes();
  parts.local_n_pes = in.boot->local_size();
  parts.heap_base = peers.heap_base();
  parts.heap_size = in.heap_size;
  parts.peer_bases = &peers.bases();
  parts.wait_timeout_ms = in.wait_timeout_ms;
  TSHMEM_CHECK(proxy_channel_parts(in, &parts));

  auto owned = std::make_unique<GpuDeviceState>(in.cuda_device);
  TSHMEM_CHECK(owned->upload(peers.bases()));
  parts.peer_base_global = owned->mirror();
  TSHMEM_CHECK(owned->create_teams(in.teams));
  parts.team_table = owned->teams();
  if (in.mem->registration_capacity() != 0)
    parts.symmetric_span = in.mem->registration_base() + in.mem->registration_capacity();
  *out = std::move(owned);  // from here on, teardown withdraws whatever was published
  // Kernels that wait on the off-node proxy must not meet a kernel's first load (cuda/module_loading.h): where
  // CUDA started lazily before tshmem_init, every unit's kernels are loaded as its state is filled.
  if (in.proxy_channel != nullptr && lazy_module_loading()) {
    parts.load_kernels = true;
    if (in.boot->rank() == 0)
      TSHMEMI_LOG(kWarn, kLogCuda,
                  "CUDA loads kernels lazily in this job over several nodes (CUDA_MODULE_LOADING=LAZY, or CUDA started "
                  "before tshmem_init): tshmem loads every kernel of the units that include its device API now. A "
                  "kernel of another module launched for the first time while a kernel waits on a PE of another "
                  "node stalls both until TSHMEM_PROXY_TIMEOUT_MS; set CUDA_MODULE_LOADING=EAGER to rule it out");
  }
  const tshmemi_device_state state = build_device_state(parts);
  TSHMEM_CHECK(registry_publish(in.cuda_device, state));
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
