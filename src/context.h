// The one tshmem context, made by tshmem_init and destroyed by tshmem_finalize. Everything the host
// runtime knows lives here; the registry of constant-memory copies (state/registry.cc) is the only other
// static state.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"
#include "env.h"
#include "heap/heap.h"
#include "mem/backend.h"
#include "nvls/nvls.h"
#include "state/device_state.h"
#include "state/peer_table.h"
#include "transport/host_rma.h"

namespace tshmemi {

struct Context {
  EnvOptions env;
  std::unique_ptr<Bootstrap> boot;
  std::unique_ptr<MemBackend> mem;
  std::unique_ptr<SymmetricHeap> heap;
  PeerTable peers;
  std::unique_ptr<HostRma> host_rma;  ///< the off-node proxy; null on one node or when MPI cannot carry it
  std::string offnode_reason;         ///< why host_rma is null although the job spans nodes
  int cuda_device = -1;               ///< -1 on the shm backend
  /// On-stream collectives launch as programmatic dependent launches: TSHMEM_COLL_PDL and a device of
  /// compute capability 9.0 or later (decided once, when the device is selected).
  bool coll_early_launch = false;
  std::unique_ptr<DeviceState> device_state;
  std::unique_ptr<NvlsRegion> nvls;  ///< the multicast mapping of the heap; null without multicast (src/nvls)
  std::string nvls_reason;           ///< "on", or why multicast is off

  Context();
  ~Context();
};

/// The live context, or nullptr outside init..finalize.
Context *context();

/// The live context, or sets TSHMEM_ERR_NOT_INITIALIZED naming `call` and returns nullptr.
Context *require_context(const char *call);

/// Checks 0 <= pe < n_pes, else TSHMEM_ERR_INVALID_PE naming the call.
Status check_pe(const Context &ctx, const char *call, int pe);

Status init_context(unsigned flags, const void *mpi_comm);
void finalize_context();

}  // namespace tshmemi
