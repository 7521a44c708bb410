// The one boundary between the host collectives (coll_on_stream.cc, plain C++) and their kernels (coll_kernels.cu).
#pragma once

#include <cstddef>

#include "common/error.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

enum class CollKind : int { kAllreduce, kReduceScatter, kFcollect, kAlltoall, kBroadcast, kBarrier };

/// Everything a collective kernel needs, passed by value.
struct CollLaunch {
  CollKind kind = CollKind::kBarrier;
  tshmemx_dtype_t dtype = TSHMEMX_DTYPE_FLOAT;
  tshmemx_redop_t op = TSHMEMX_OP_SUM;
  tshmem_team_t team = TSHMEM_TEAM_WORLD;
  void *dst = nullptr;
  const void *src = nullptr;
  size_t count = 0;  ///< elements (reducing kinds) or bytes (moves)
  int root = 0;
  bool two_shot = false;
  bool spanning = false;  ///< the team reaches other nodes: the kernels of coll_spanning_kernels.cuh
};

/// Launches one collective kernel of `blocks` x `threads` on `stream`; no host synchronisation. With
/// `early_launch` (Context::coll_early_launch), as a programmatic dependent launch: the kernel's blocks may
/// become resident while the previous work on the stream finishes, and wait for it (griddepcontrol.wait)
/// before touching memory, so the launch latency overlaps the previous kernel instead of following it.
Status coll_launch(const CollLaunch &launch, int blocks, int threads, bool early_launch, tshmemx_stream_t stream);

/// Runs `launch` on tshmem's internal stream (one per device, made on first use) after synchronising the device
/// (work that wrote src is complete), and waits for it.
Status coll_run_blocking(const char *call, Status (*launch)(void *arg, tshmemx_stream_t stream), void *arg);

}  // namespace tshmemi
