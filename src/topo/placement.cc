#include "topo/placement.h"

#include <hwloc.h>
#include <hwloc/cudart.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace tshmemi {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology *topology) const { hwloc_topology_destroy(topology); }
};
struct BitmapDeleter {
  void operator()(hwloc_bitmap_s *bitmap) const { hwloc_bitmap_free(bitmap); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

std::string list_of(hwloc_const_bitmap_t set) {
  char *text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "?";
  std::string out(text);
  std::free(text);
  return out;
}

}  // namespace

Status bind_near_gpu(int cuda_device, std::string *described) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "hwloc_topology_init: %s", std::strerror(errno));
  Topology topology(raw);
  if (hwloc_topology_load(topology.get()) != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "hwloc_topology_load: %s", std::strerror(errno));

  Bitmap near_gpu(hwloc_bitmap_alloc()), current(hwloc_bitmap_alloc()), target(hwloc_bitmap_alloc());
  if (!near_gpu || !current || !target) return set_error(TSHMEM_ERR_OUT_OF_MEMORY, "hwloc_bitmap_alloc failed");
  if (hwloc_cudart_get_device_cpuset(topology.get(), cuda_device, near_gpu.get()) != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "hwloc_cudart_get_device_cpuset(device %d): %s", cuda_device,
                     std::strerror(errno));
  if (hwloc_get_cpubind(topology.get(), current.get(), HWLOC_CPUBIND_PROCESS) != 0)
    hwloc_bitmap_copy(current.get(), hwloc_topology_get_allowed_cpuset(topology.get()));

  hwloc_bitmap_and(target.get(), near_gpu.get(), current.get());
  hwloc_bitmap_and(target.get(), target.get(), hwloc_topology_get_allowed_cpuset(topology.get()));
  if (hwloc_bitmap_iszero(target.get())) {
    *described = format("unchanged: the CPUs near device %d (%s) are outside this process's CPUs (%s)", cuda_device,
                        list_of(near_gpu.get()).c_str(), list_of(current.get()).c_str());
    return TSHMEM_SUCCESS;
  }
  if (hwloc_bitmap_isequal(target.get(), current.get())) {
    *described =
        format("unchanged: already on the CPUs near device %d (%s)", cuda_device, list_of(target.get()).c_str());
    return TSHMEM_SUCCESS;
  }
  if (hwloc_set_cpubind(topology.get(), target.get(), HWLOC_CPUBIND_PROCESS) != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "hwloc_set_cpubind(%s) near device %d: %s", list_of(target.get()).c_str(),
                     cuda_device, std::strerror(errno));
  *described = format("bound to CPUs %s near device %d", list_of(target.get()).c_str(), cuda_device);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
