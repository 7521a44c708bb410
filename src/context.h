// The one tshmem context, made by tshmem_init and destroyed by tshmem_finalize. Everything the host
// runtime knows lives here; the registry of constant-memory copies (state/registry.cc) is the only other
// static state.
#pragma once

#include <memory>
#include <shared_mutex>

#include "bootstrap/bootstrap.h"
#include "bootstrap/collective_check.h"
#include "coll/coll_host_mem.h"
#include "coll/rendezvous.h"
#include "coll/team.h"
#include "env.h"
#include "heap/heap.h"
#include "mem/backend.h"
#include "nvls/nvls.h"
#include "state/device_state.h"
#include "state/peer_table.h"
#include "transport/proxy.h"

namespace tshmemi {

struct Context {
  EnvOptions env;
  std::unique_ptr<Bootstrap> boot;
  bool spans_nodes = false;  ///< the job has PEs on more than one node: decided once, after the bootstrap
  std::unique_ptr<MemBackend> mem;
  std::unique_ptr<CollectiveCheck> check;  ///< every checked collective call of this PE, in one sequence
  std::unique_ptr<SymmetricHeap> heap;
  std::unique_ptr<Rendezvous> rendezvous;  ///< barrier_all, the host team barrier, finalize
  PeerTable peers;
  TeamTable teams;  ///< WORLD and NODE from init, split teams after
  std::unique_ptr<HostCollectives> host_coll = std::make_unique<HostCollectives>();  ///< a heap in host memory
  std::unique_ptr<Proxy> proxy;  ///< the off-node proxy; null on one node or when MPI cannot carry it
  std::string offnode_reason;    ///< why proxy is null although the job spans nodes
  int cuda_device = -1;          ///< -1 on the shm backend
  /// On-stream collectives launch as programmatic dependent launches: TSHMEM_COLL_PDL and a device of
  /// compute capability 9.0 or later (decided once, when the device is selected).
  bool coll_early_launch = false;
  std::unique_ptr<DeviceState> device_state;
  std::unique_ptr<NvlsRegion> nvls;         ///< the multicast mapping of the heap; null without multicast (src/nvls)
  std::string nvls_reason;                  ///< "on", or why multicast is off
  int thread_level = TSHMEM_THREAD_SINGLE;  ///< what tshmem_init_thread provided (the same on every PE)

  Context();
  ~Context();
};

/// The live context for the length of one API call. Under TSHMEM_THREAD_MULTIPLE it holds a shared lock on
/// the context's lifetime (init and finalize take it exclusively), so a call racing tshmem_finalize either
/// finishes first or finds no context: never a freed one. Below MULTIPLE the application guarantees that no
/// call races finalize, and the lock is skipped. Empty (false) outside init..finalize.
class ContextRef {
 public:
  ContextRef();
  Context *get() const { return ctx_; }
  Context *operator->() const { return ctx_; }
  Context &operator*() const { return *ctx_; }
  explicit operator bool() const { return ctx_ != nullptr; }

 private:
  std::shared_lock<std::shared_mutex> lifetime_;
  Context *ctx_ = nullptr;
};

/// The live context, or an empty reference outside init..finalize (queries that answer -1, 0 or NULL).
inline ContextRef context() { return ContextRef(); }

/// The live context, or an empty reference with TSHMEM_ERR_NOT_INITIALIZED naming `call`.
ContextRef require_context(const char *call);

/// Checks 0 <= pe < n_pes, else TSHMEM_ERR_INVALID_PE naming the call.
Status check_pe(const Context &ctx, const char *call, int pe);

/// `requested`: a TSHMEM_THREAD_* level, checked collectively; `provided` receives the level given. With
/// `callbacks` the bootstrap runs over them (tshmemx_init_callbacks) and `mpi_comm` is unused.
Status init_context(unsigned flags, const void *mpi_comm, int requested, int *provided,
                    const tshmemx_bootstrap_callbacks_t *callbacks = nullptr);
/// The level the live context provides; TSHMEM_ERR_NOT_INITIALIZED outside init..finalize.
Status query_thread_level(int *provided);
void finalize_context();

}  // namespace tshmemi
