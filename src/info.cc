// tshmemx_info: what tshmem-info prints (the tool is a main() around it), so that bindings show the same text.
// What this build is and what this host offers, read only (it creates nothing): version and build options;
// every TSHMEM_* variable with its default, current value and meaning (from the one parser); the init steps;
// the off-node proxy's figures; the backends available here; the topology through hwloc (NUMA nodes, GPUs,
// NICs and their affinity); the GPU peer-access matrix; the NVLink multicast policy.
#include <hwloc.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "cuda/gpu_runtime.h"
#include "env.h"
#include "init_steps.h"
#include "mem/handle_exchange.h"
#include "transport/proxy.h"
#include "transport/staged/staged_transport.h"  // the staged protocol's sizes
#include "transport/transport.h"
#include "tshmem/device/internal_regions.h"
#include "tshmem/device/state_types.h"
#include "tshmem/tshmem.h"

#if TSHMEM_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/driver.h"
#endif

namespace tshmemi {
namespace {

void add(std::string &out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void add(std::string &out, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  out += vformat(fmt, args);
  va_end(args);
}

std::string json_string(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct PciDevice {
  std::string kind, name, bus_id;
  int numa = -1;
};

struct Topology {
  int numa_nodes = 0, cores = 0, pus = 0;
  std::vector<PciDevice> devices;
};

Topology read_topology() {
  Topology topo;
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0) return topo;
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(t) == 0) {
    topo.numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    topo.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    topo.pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
    for (hwloc_obj_t pci = hwloc_get_next_pcidev(t, nullptr); pci; pci = hwloc_get_next_pcidev(t, pci)) {
      const unsigned cls = pci->attr->pcidev.class_id >> 8;
      const char *kind = cls == 0x03 && pci->attr->pcidev.vendor_id == 0x10de ? "gpu"
                         : cls == 0x02 || cls == 0x0c                         ? "nic"
                                                      : nullptr;  // 0x0c: InfiniBand (serial bus class)
      if (kind == nullptr) continue;
      if (cls == 0x0c && pci->attr->pcidev.vendor_id != 0x15b3) continue;  // Mellanox/NVIDIA HCAs only
      PciDevice dev;
      dev.kind = kind;
      char bus[32];
      std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                    pci->attr->pcidev.dev, pci->attr->pcidev.func);
      dev.bus_id = bus;
      const char *model = hwloc_obj_get_info_by_name(pci, "PCIDevice");
      dev.name = model ? model : (pci->name ? pci->name : "");
      hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(t, pci);
      if (parent && parent->nodeset) dev.numa = hwloc_bitmap_first(parent->nodeset);
      topo.devices.push_back(dev);
    }
  }
  hwloc_topology_destroy(t);
  return topo;
}

std::vector<std::vector<int>> peer_access_matrix() {
  std::vector<std::vector<int>> matrix;
#if TSHMEM_HAVE_CUDA
  int count = 0;
  if (!gpu_available() || cudaGetDeviceCount(&count) != cudaSuccess) return matrix;
  matrix.assign(static_cast<size_t>(count), std::vector<int>(static_cast<size_t>(count), 1));
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b)
      if (a != b) cudaDeviceCanAccessPeer(&matrix[static_cast<size_t>(a)][static_cast<size_t>(b)], a, b);
#endif
  return matrix;
}

// Whether each device reports NVLink multicast support (an attribute query: nothing is created).
std::vector<int> multicast_capability(size_t devices) {
  std::vector<int> capable;
#if TSHMEM_HAVE_CUDA
  if (devices == 0 || cu_driver_load() != TSHMEM_SUCCESS) return capable;
  for (size_t d = 0; d < devices; ++d) {
    CUdevice device = 0;
    int value = -1;
    if (TSHMEMI_CU(cuDeviceGet(&device, static_cast<int>(d))) != CUDA_SUCCESS ||
        TSHMEMI_CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, device)) != CUDA_SUCCESS)
      value = -1;
    capable.push_back(value);
  }
#else
  (void)devices;
#endif
  return capable;
}

}  // namespace

/// The text of tshmemx_info.
std::string info_text(bool json) {
  std::string out;
  EnvOptions env;
  const Status env_status = parse_env(&env);
  const std::string env_error = env_status == TSHMEM_SUCCESS ? "" : tshmemx_last_error();
  const bool gpu = gpu_available();
  std::string nvls_policy = "allowed where every device supports it";
  if (env.disable_nvls)
    nvls_policy = "forbidden by TSHMEM_DISABLE_NVLS";
  else if (env.nvshmem_disable_nvls)
    nvls_policy = "forbidden by NVSHMEM_DISABLE_NVLS";
  else if (env.nccl_nvls_disabled)
    nvls_policy = "forbidden by NCCL_NVLS_ENABLE";
  const Topology topo = read_topology();
  const auto matrix = peer_access_matrix();
  const auto multicast = multicast_capability(matrix.size());
  std::vector<std::string> backends = {"shm"};
  if (gpu) backends.insert(backends.end(), {"vmm", "ipc"});
  // The proxy's figures come from a valid environment only (a malformed size has no staging figure).
  ProxyConfig proxy;
  proxy.chunk_bytes = env.proxy_chunk;
  proxy.ring_entries = static_cast<uint32_t>(env.proxy_ring);
  proxy.stage_max = env.proxy_stage_max;
  const bool env_ok = env_status == TSHMEM_SUCCESS;
  const unsigned long long proxy_staging = env_ok ? proxy_staging_bytes(proxy) : 0;
  const unsigned long long proxy_replies = proxy_reply_queue_bytes(TSHMEM_MAX_PES);
  const std::string device_waits =
      !env_ok ? "n/a (the environment is invalid)"
      : env.wait_timeout_ms == 0
          ? "forever (TSHMEM_WAIT_TIMEOUT_MS=0); waits for the off-node proxy end at TSHMEM_PROXY_TIMEOUT_MS"
          : std::to_string(env.wait_timeout_ms) + " ms (TSHMEM_WAIT_TIMEOUT_MS)";
  const std::string proxy_waits =
      env_ok ? std::to_string(env.proxy_timeout_ms) + " ms (TSHMEM_PROXY_TIMEOUT_MS), host calls and kernels"
             : "n/a (the environment is invalid)";

  if (json) {
    add(out, "{\"version\": %s, \"build\": {\"symmetry_check\": %s, \"cuda\": %s, \"max_pes\": %d},\n",
        json_string(TSHMEM_VERSION_STRING).c_str(), TSHMEM_SYMMETRY_CHECK ? "true" : "false",
        TSHMEM_HAVE_CUDA ? "true" : "false", TSHMEM_MAX_PES);
    add(out, " \"environment_error\": %s,\n \"variables\": [", json_string(env_error).c_str());
    bool first = true;
    for (const auto &row : env_table()) {
      const char *current = std::getenv(row.name);
      add(out, "%s\n  {\"name\": %s, \"default\": %s, \"current\": %s, \"category\": %s, \"description\": %s}",
          first ? "" : ",", json_string(row.name).c_str(), json_string(row.default_text).c_str(),
          current ? json_string(current).c_str() : "null", json_string(row.category).c_str(),
          json_string(row.description).c_str());
      first = false;
    }
    add(out, "],\n \"init_steps\": [");
    for (int i = 0; i < static_cast<int>(InitStep::kCount); ++i) {
      const auto step = static_cast<InitStep>(i);
      add(out, "%s{\"name\": %s, \"what\": %s}", i ? ", " : "", json_string(init_step_name(step)).c_str(),
          json_string(init_step_what(step)).c_str());
    }
    add(out, "],\n \"backends\": [");
    for (size_t i = 0; i < backends.size(); ++i) add(out, "%s%s", i ? ", " : "", json_string(backends[i]).c_str());
    add(out, "],\n \"gpu\": %s, \"gpu_unavailable_reason\": %s,\n", gpu ? "true" : "false",
        json_string(gpu ? "" : gpu_unavailable_reason()).c_str());
    add(out, " \"topology\": {\"numa_nodes\": %d, \"cores\": %d, \"pus\": %d, \"pci\": [", topo.numa_nodes, topo.cores,
        topo.pus);
    for (size_t i = 0; i < topo.devices.size(); ++i)
      add(out, "%s{\"kind\": %s, \"bus_id\": %s, \"name\": %s, \"numa\": %d}", i ? ", " : "",
          json_string(topo.devices[i].kind).c_str(), json_string(topo.devices[i].bus_id).c_str(),
          json_string(topo.devices[i].name).c_str(), topo.devices[i].numa);
    add(out, "]},\n \"peer_access\": [");
    for (size_t a = 0; a < matrix.size(); ++a) {
      add(out, "%s[", a ? ", " : "");
      for (size_t b = 0; b < matrix[a].size(); ++b) add(out, "%s%d", b ? ", " : "", matrix[a][b]);
      add(out, "]");
    }
    add(out, "],\n \"multicast_supported\": [");
    for (size_t d = 0; d < multicast.size(); ++d) add(out, "%s%d", d ? ", " : "", multicast[d]);
    add(out, "],\n \"multicast_policy\": %s,\n", json_string(nvls_policy).c_str());
    add(out,
        " \"offnode_proxy\": {\"staging_bytes_per_pe\": %s, \"reply_queue_bytes_at_max_pes\": %llu, "
        "\"collectives_heap_bytes_per_pe\": %u, \"credits_per_peer\": %d},\n",
        env_ok ? std::to_string(proxy_staging).c_str() : "null", proxy_replies, TSHMEMI_COLL_SPAN_BYTES,
        kProxyCreditsPerPeer);
    add(out, " \"remote_transports\": [");
    for (size_t i = 0; i < transport_table().size(); ++i) {
      const TransportEntry *t = transport_table()[i];
      add(out, "%s{\"name\": %s, \"built\": %s, \"about\": %s}", i ? ", " : "", json_string(t->name).c_str(),
          t->not_built().empty() ? "true" : "false", json_string(t->about()).c_str());
    }
    add(out, "], \"remote_transport\": %s,\n", json_string(env_ok ? env.remote_transport : "").c_str());
    add(out, " \"waits\": {\"device\": %s, \"offnode_proxy\": %s}}\n", json_string(device_waits).c_str(),
        json_string(proxy_waits).c_str());
    return out;
  }

  add(out, "tshmem %s\n\nBuild\n  symmetry check      %s\n  CUDA                %s\n  max PEs             %d\n",
      TSHMEM_VERSION_STRING, TSHMEM_SYMMETRY_CHECK ? "ON" : "OFF (compiled out)",
      TSHMEM_HAVE_CUDA ? "ON" : "OFF (shm backend only)", TSHMEM_MAX_PES);
  add(out, "\nEnvironment%s\n", env_error.empty() ? "" : ("  (ERROR: " + env_error + ")").c_str());
  add(out, "  %-26s %-8s %-12s %s\n", "variable", "default", "current", "meaning");
  for (const auto &row : env_table()) {
    const char *current = std::getenv(row.name);
    add(out, "  %-26s %-8s %-12s %s\n", row.name, row.default_text, current ? current : "-", row.description);
  }
  add(out, "\nInit steps, in order (TSHMEM_DEBUG_FAIL=<step>:<pes>[:pause] makes one fail)\n");
  for (int i = 0; i < static_cast<int>(InitStep::kCount); ++i) {
    const auto step = static_cast<InitStep>(i);
    add(out, "  %-16s %s\n", init_step_name(step), init_step_what(step));
  }
  add(out,
      "\nRemote transports (PEs of other nodes), in the order TSHMEM_REMOTE_TRANSPORT=auto tries them "
      "(current: %s)\n",
      env_ok ? env.remote_transport.c_str() : "n/a");
  for (const TransportEntry *t : transport_table())
    add(out, "  %-19s %s%s\n", t->name, t->not_built().empty() ? "" : "NOT BUILT: ", t->about().c_str());
  add(out, "  (each PE's choice and every peer's path are in the init log: TSHMEM_DEBUG=info)\n");
  add(out, "\nOff-node proxy (PEs of other nodes, every backend)\n");
  if (env_ok)
    add(out,
        "  staging per PE      %llu bytes (%d send + %d receive buffers of TSHMEM_PROXY_CHUNK, 2 rings of "
        "TSHMEM_PROXY_RING requests, fetched-value slots): independent of the number of PEs and of message sizes\n",
        proxy_staging, kProxySendBuffers, kProxyRecvBuffers);
  else
    add(out, "  staging per PE      n/a: the environment is invalid (above)\n");
  add(out,
      "  reply queue         at most %d small entries per origin PE (%llu bytes at %d PEs)\n"
      "  flow control        at most %d messages per origin PE not yet handled by their target (credits)\n",
      kProxyMaxPending, proxy_replies, TSHMEM_MAX_PES, kProxyCreditsPerPeer);
  add(out,
      "  collectives         %u bytes at the end of every heap of a job over several nodes (the world team's "
      "barrier words and staging, 32 block rows)\n",
      TSHMEMI_COLL_SPAN_BYTES);
  add(out, "\nWaits\n  device waits        %s\n  off-node proxy      %s\n", device_waits.c_str(), proxy_waits.c_str());
  add(out,
      "  kernel loading      a job over several nodes starts CUDA with CUDA_MODULE_LOADING=EAGER unless it is set "
      "(current: %s); under lazy loading the units that include the device API are loaded at init\n",
      std::getenv("CUDA_MODULE_LOADING") ? std::getenv("CUDA_MODULE_LOADING") : "unset");
  add(out, "\nBackends here: ");
  for (const auto &b : backends) add(out, "%s ", b.c_str());
  if (!gpu) add(out, "(no GPU: %s)", gpu_unavailable_reason().c_str());
  add(out, "\n\nTopology (hwloc): %d NUMA node(s), %d cores, %d hardware threads\n", topo.numa_nodes, topo.cores,
      topo.pus);
  for (const auto &dev : topo.devices)
    add(out, "  %-4s %s  NUMA %d  %s\n", dev.kind.c_str(), dev.bus_id.c_str(), dev.numa, dev.name.c_str());
  if (!matrix.empty()) {
    add(out, "\nGPU peer access (cudaDeviceCanAccessPeer)\n     ");
    for (size_t b = 0; b < matrix.size(); ++b) add(out, "GPU%-2zu", b);
    add(out, "\n");
    for (size_t a = 0; a < matrix.size(); ++a) {
      add(out, "GPU%-2zu", a);
      for (size_t b = 0; b < matrix.size(); ++b) add(out, "%-5s", a == b ? "X" : (matrix[a][b] ? "yes" : "no"));
      add(out, "\n");
    }
  }
  if (!multicast.empty()) {
    add(out, "\nNVLink multicast support (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED):");
    for (size_t d = 0; d < multicast.size(); ++d)
      add(out, " GPU%zu %s", d, multicast[d] == 1 ? "yes" : multicast[d] == 0 ? "no" : "unknown");
    add(out, "\n");
  }
  add(out, "NVLink multicast policy: %s\n", nvls_policy.c_str());
  return out;
}

namespace {

/// snprintf's contract for the text calls: as much of `text` as fits, NUL-terminated; returns its whole length.
size_t copy_out(const std::string &text, char *buffer, size_t capacity) {
  if (buffer != nullptr && capacity > 0) {
    const size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
  }
  return text.size();
}

}  // namespace
}  // namespace tshmemi

extern "C" TSHMEM_API size_t tshmemx_info(int json, char *buffer, size_t capacity) {
  return tshmemi::guarded(
      "tshmemx_info",
      [&]() -> size_t {
        const std::string text = tshmemi::info_text(json != 0);
        return tshmemi::copy_out(text, buffer, capacity);
      },
      size_t{0});
}

extern "C" TSHMEM_API size_t tshmemx_stale_files(int remove, char *buffer, size_t capacity) {
  return tshmemi::guarded(
      "tshmemx_stale_files",
      [&]() -> size_t {
        std::string text;
        for (const std::string &path : tshmemi::stale_exchange_directories(remove != 0))
          text += path + (remove != 0 ? " (removed)\n" : "\n");
        return tshmemi::copy_out(text, buffer, capacity);
      },
      size_t{0});
}
