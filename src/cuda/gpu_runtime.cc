// gpu_runtime.h for CUDA builds: device discovery, GPU selection and CPU placement. The device state is
// built in device_state_gpu.cc.
//
// GPU selection (decided here, documented in design.md's words "the local rank picks its GPU"):
//   - TSHMEM_DEVICE=<n> picks device n of those this PE sees; otherwise the node-local rank picks device
//     (local rank mod visible devices), which also covers launchers that give each rank its own
//     CUDA_VISIBLE_DEVICES (each rank then sees one device, its own).
//   - Two PEs of a node may not drive the same physical GPU (compared by UUID, so MIG instances count as
//     distinct GPUs) unless TSHMEM_ALLOW_SHARED_GPU=1: sharing is legal CUDA and lets 4-PE logic run on 2
//     GPUs, but it silently halves bandwidth and memory, so it must be asked for. The error names the PEs,
//     the GPU, the node's PE count and the number of GPUs the PE sees.
#include <cstring>

#include "bootstrap/agree.h"
#include "cuda/driver.h"
#include "cuda/gpu_runtime.h"
#include "topo/placement.h"

namespace tshmemi {
namespace {

/// One PE's choice, all-gathered over the node so that sharing is detected on every PE alike.
struct LocalGpuChoice {
  int32_t device;
  int32_t ok;
  int32_t visible;  ///< devices this PE sees
  unsigned char uuid[16];
  char bus_id[32];
};

Status visible_devices(int *count) {
  *count = 0;
  const cudaError_t rc = cudaGetDeviceCount(count);
  if (rc != cudaSuccess) {
    *count = 0;
    return cuda_error(rc, "cudaGetDeviceCount", __FILE__, __LINE__);
  }
  return TSHMEM_SUCCESS;
}

Status choose_device(const EnvOptions &env, const Bootstrap &boot, LocalGpuChoice *choice) {
  int count = 0;
  TSHMEM_CHECK(visible_devices(&count));
  choice->visible = count;
  if (count == 0) return set_error(TSHMEM_ERR_CUDA, "select_gpu: PE %d sees no CUDA device", boot.rank());
  choice->device = device_for_local_rank(env, boot.local_rank(), count);
  if (choice->device < 0)
    return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_DEVICE=%lld: PE %d sees only %d CUDA device%s (0..%d)",
                     static_cast<long long>(env.device), boot.rank(), count, count == 1 ? "" : "s", count - 1);
  cudaDeviceProp prop;
  TSHMEM_CUDA_CHECK(cudaGetDeviceProperties(&prop, choice->device));
  std::memcpy(choice->uuid, prop.uuid.bytes, sizeof(choice->uuid));
  TSHMEM_CUDA_CHECK(cudaDeviceGetPCIBusId(choice->bus_id, static_cast<int>(sizeof(choice->bus_id)), choice->device));
  return TSHMEM_SUCCESS;
}

// Fails when another PE of this node chose the same physical GPU (and sharing was not allowed).
Status check_not_shared(const Bootstrap &boot, const std::vector<LocalGpuChoice> &all) {
  const LocalGpuChoice &mine = all[static_cast<size_t>(boot.local_rank())];
  std::vector<int> sharing;
  for (size_t lr = 0; lr < all.size(); ++lr)
    if (all[lr].ok && std::memcmp(all[lr].uuid, mine.uuid, sizeof(mine.uuid)) == 0)
      sharing.push_back(boot.local_pes()[lr]);
  if (sharing.size() <= 1) return TSHMEM_SUCCESS;
  return set_error(TSHMEM_ERR_CONFIG,
                   "select_gpu: PEs %s would share GPU %s (device %d): this node runs %d PEs and PE %d sees %d GPU%s. "
                   "Run at most one PE per GPU, or set TSHMEM_ALLOW_SHARED_GPU=1 to share GPUs round-robin",
                   pe_list(sharing).c_str(), mine.bus_id, mine.device, boot.local_size(), boot.rank(), mine.visible,
                   mine.visible == 1 ? "" : "s");
}

}  // namespace

int device_for_local_rank(const EnvOptions &env, int local_rank, int visible) {
  if (env.device >= 0) return env.device < visible ? static_cast<int>(env.device) : -1;
  return local_rank % visible;
}

bool gpu_available() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  cudaGetLastError();  // a failed probe must not linger as the application's last CUDA error
  return rc == cudaSuccess && count > 0;
}

std::string gpu_unavailable_reason() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (rc == cudaSuccess) return count > 0 ? "a CUDA device is available" : "the CUDA driver reports 0 devices";
  // Foreign enum with ~100 values: ifs, not a switch (-Wswitch-enum).
  if (rc == cudaErrorNoDevice) return "no CUDA device is visible (cudaErrorNoDevice; check CUDA_VISIBLE_DEVICES)";
  if (rc == cudaErrorInsufficientDriver)
    return "no usable CUDA driver: none installed, or older than the CUDA runtime (cudaErrorInsufficientDriver)";
  return format("cudaGetDeviceCount failed: %s (%s)", cudaGetErrorName(rc), cudaGetErrorString(rc));
}

Status select_gpu(const EnvOptions &env, Bootstrap &boot, GpuChoice *out) {
  LocalGpuChoice mine;
  std::memset(&mine, 0, sizeof(mine));
  mine.device = -1;
  Status status = choose_device(env, boot, &mine);
  mine.ok = status == TSHMEM_SUCCESS ? 1 : 0;
  const std::string my_error = status != TSHMEM_SUCCESS ? last_error_message() : std::string();
  // Every PE of the node takes part, whatever its own outcome: nobody is left waiting.
  std::vector<LocalGpuChoice> all(static_cast<size_t>(boot.local_size()));
  TSHMEM_CHECK(boot.local_allgather(&mine, all.data(), sizeof(mine)));
  if (status != TSHMEM_SUCCESS) return set_error_message(status, my_error);
  if (!env.allow_shared_gpu) TSHMEM_CHECK(check_not_shared(boot, all));

  TSHMEM_CUDA_CHECK(cudaSetDevice(mine.device));
  TSHMEM_CUDA_CHECK(cudaFree(nullptr));  // creates the primary context now, not inside a later timed call
  out->device = mine.device;
  int cc_major = 0;
  TSHMEM_CUDA_CHECK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, mine.device));
  out->coll_early_launch = env.coll_pdl && cc_major >= 9;

  if (env.bind != "none") {
    std::string described;
    if (bind_near_gpu(mine.device, &described) == TSHMEM_SUCCESS)
      TSHMEMI_LOG(kInfo, kLogTopo, "CPU binding: %s", described.c_str());
    else
      TSHMEMI_LOG(kWarn, kLogTopo, "CPU binding skipped (TSHMEM_BIND=none silences this): %s",
                  last_error_message().c_str());
  }
  TSHMEMI_LOG(kInfo, kLogCuda, "PE %d (local %d/%d) drives CUDA device %d (%s)", boot.rank(), boot.local_rank(),
              boot.local_size(), mine.device, mine.bus_id);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
