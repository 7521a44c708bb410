// The on-stream collectives' host side: every check of a tshmemx_*_on_stream call, then its launch
// (coll_on_stream.cc; coll_none.cc without CUDA, where every call fails alike). The entry points (src/api/)
// hand in what the collectives read of the running library as a CollRuntime; they never see more.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

#include "coll/coll_launch.h"
#include "coll/team.h"
#include "common/error.h"
#include "heap/heap.h"
#include "mem/backend.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

/// What the collectives read of the running library; every reference outlives the call.
struct CollRuntime {
  const MemBackend &mem;
  const SymmetricHeap &heap;
  const TeamTable &teams;
  int my_pe;
  int n_pes;
  bool early_launch;                        ///< programmatic dependent launches (coll_launch's `early_launch`)
  bool offnode_reachable;                   ///< the off-node proxy runs
  const std::string &offnode_reason;        ///< why it does not, in a job that spans nodes
  const std::vector<uint64_t> &peer_bases;  ///< where this PE sees each PE's heap; 0 for another node's
  Bootstrap &boot;                          ///< the host collectives' data path across nodes (host memory)
};

/// The on-stream collectives' checks and launch, for the C entry points and the host-blocking forms
/// (coll_host.cc): with `check_only`, every check of the on-stream call and nothing launched. `call` names the
/// caller in messages.
Status coll_allreduce(const CollRuntime &rt, const char *call, tshmem_team_t team, void *dst, const void *src,
                      size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op, tshmemx_stream_t stream,
                      bool check_only);
Status coll_reduce_scatter(const CollRuntime &rt, const char *call, tshmem_team_t team, void *dst, const void *src,
                           size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op, tshmemx_stream_t stream);
Status coll_move(const CollRuntime &rt, CollKind kind, const char *call, tshmem_team_t team, void *dst, const void *src,
                 size_t nbytes, int root, tshmemx_stream_t stream, bool check_only);

/// The library's half of tshmemx_collective_launch (tshmem/tshmemx_launch.h): the caller's CUDA runtime measured
/// and launched; this decides and words every refusal (collective_launch.cc).
Status check_cooperative_launch(const char *call, long long grid_blocks, unsigned block_threads, size_t shared_mem,
                                int cuda_rc, const char *cuda_what, const char *cuda_msg, int blocks_per_sm,
                                int sm_count, int device);

}  // namespace tshmemi
