// The sublibrary's device rules (docs/moe.md, "Conventions"): the guard that makes the primary input's device
// current, the per-device cache of device facts, the SM-count override, the stream workspaces and the report of
// value violations recorded by kernels. The guard is tshmem_moe's own, not tshmem's (src/cuda/device_guard.h):
// it is a no-op for CPU views and reports a missing device as TSHMEM_MOE_ERR_NO_DEVICE in the sublibrary's words.
#pragma once

#include "core/status.h"
#include "core/value_errors.h"

namespace tshmem_moe {

// Makes `device` current for its lifetime and restores the caller's device afterwards. enter() does nothing
// for TSHMEM_MOE_DEVICE_CPU, so CPU calls make no CUDA call at all.
class DeviceGuard {
 public:
  DeviceGuard() = default;
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;
  Status enter(int device);

 private:
  int prev_ = -1;
  bool restore_ = false;
};

// Facts about one device, queried once per device index (never from "the current device" at first use).
struct DeviceInfo {
  int sm_count = 0;
  int max_smem_per_block = 0;
  int cc_major = 0;              // compute capability: thread block clusters from 9
  DeviceError *error = nullptr;  // device memory, zero when no violation is pending
};

// Requires `device` to be current (inside a DeviceGuard).
Status device_info(int device, const DeviceInfo **info);
// The SM count to size grids on `device`: the override if set, validated against this device.
Status grid_sms(int device, int *num_sms);

// A workspace of kStreamWorkspaceBytes of device memory owned by the library for (device, stream), or
// NULL where none can serve: a stream under graph capture (a graph may be replayed on any stream, beside another
// user of the same memory), cudaStreamPerThread (one handle, a stream per host thread), or a device whose
// kMaxStreamWorkspaces are taken. Two regions: [0, kCountWorkspaceBytes) is zero between calls (the wide
// histogram's bin words: a kernel that uses it must leave it zero); the mapping kernel's table of per-block
// counts (kMappingTableCells int32, written before they are read within one call) follows at
// kMappingTableOffset. Keyed by the stream's unique id (cudaStreamGetId), so calls on two streams never share
// one: work on one stream runs in order, so a workspace has one user at a time. Allocated on a stream's first
// use (a cudaMalloc and a memset on that stream), kept until the process exits. Requires `device` current.
constexpr size_t kCountWorkspaceBytes = 8192;
constexpr size_t kMappingTableOffset = kCountWorkspaceBytes;
constexpr size_t kMappingTableCells = 8192;
constexpr size_t kStreamWorkspaceBytes = kMappingTableOffset + kMappingTableCells * sizeof(int32_t);
constexpr size_t kMaxStreamWorkspaces = 64;
Status stream_workspace(int device, cudaStream_t stream, void **workspace);

// After the kernels of a call that checks values: in SYNC mode, synchronises `stream` and reports a recorded
// violation as INVALID_VALUE (and clears it); in DEFERRED mode, returns SUCCESS at once.
Status finish_value_checks(int device, cudaStream_t stream);

}  // namespace tshmem_moe
