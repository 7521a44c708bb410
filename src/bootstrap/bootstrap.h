// The bootstrap interface: the few collectives tshmem's host runtime needs, over all PEs and over
// the PEs of this node. MPI implements it (bootstrap_mpi.cc); everything above calls only this, so a
// PMIx or unique-id bootstrap could be added without touching the heap.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bounded_wait.h"
#include "common/error.h"

namespace tshmemi {

enum class ReduceOp { kMin, kMax, kSum };

class NodeSync;  // bootstrap/node_sync.h

class Bootstrap {
 public:
  virtual ~Bootstrap();

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Index of this PE among the PEs of its node, and how many there are.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  /// Global PE numbers of this node's PEs, by local rank.
  const std::vector<int> &local_pes() const { return local_pes_; }
  /// For every PE, its node number (0 .. number of nodes-1, by the lowest PE on each node).
  const std::vector<int> &node_of_pe() const { return node_of_pe_; }
  /// The thread level the communication library provides (as TSHMEM_THREAD_*), and whether tshmem
  /// initialised it (else the application did, with a level of its choosing).
  int thread_level() const { return thread_level_; }
  bool initialised_by_tshmem() const { return initialised_by_tshmem_; }

  /// Through the node's shared memory once it is attached (a job on one node), else through the implementation.
  Status barrier();
  Status allreduce(const int64_t *in, int64_t *out, int count, ReduceOp op);
  /// Gathers `bytes` from every PE into `out` (size() * bytes), ordered by PE.
  virtual Status allgather(const void *in, void *out, size_t bytes) = 0;
  virtual Status broadcast(void *buffer, size_t bytes, int root) = 0;
  /// Node-local allgather: `out` holds local_size() * bytes, ordered by local rank.
  virtual Status local_allgather(const void *in, void *out, size_t bytes) = 0;
  virtual Status local_barrier() = 0;
  /// Ends every process of the job (tshmem_global_exit).
  [[noreturn]] virtual void abort(int status) = 0;
  /// The communicator over all PEs, for a transport built on the same library (a pointer to MPI_Comm); null
  /// for a bootstrap without one (callbacks), which no off-node transport can use.
  virtual const void *native_comm() const = 0;

  /// The bounds of every collective's wait (bounded_wait.h): TSHMEM_INIT_TIMEOUT_MS during init, then
  /// TSHMEM_PROXY_TIMEOUT_MS. Set before the first collective and once init has succeeded (no other thread calls yet).
  void set_bounds(const WaitBounds &bounds) { bounds_ = bounds; }
  const WaitBounds &bounds() const { return bounds_; }

  /// The failed state. A collective that passed its bound (a PE stopped or gone) or met an MPI error leaves the
  /// PEs' collectives out of step for good: from then on every collective fails at once, saying why, and finalize
  /// tears down without waiting for other PEs. Entered once; the first failure is what later calls report.
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  /// TSHMEM_SUCCESS, or (failed) the error "<call>: tshmem is in a failed state since ...".
  Status usable(const char *call) const;
  /// Enters the failed state with `message` (unless already in it) and returns `status` with the message and what
  /// the state means as the last error.
  Status fail(Status status, const std::string &message);
  /// `listener` learns of the failure once, on the thread that failed (the off-node proxy stops its path too).
  void on_failure(std::function<void(Status, const std::string &)> listener);

  /// From now on barrier() and allreduces of up to NodeSync::kMaxWords words meet in `sync`: shared memory of the
  /// job's PEs, all on one node. Every PE attaches at the same point of its collective calls (after an agreed init
  /// step) and detaches at the same point, before the memory under it goes, so all PEs always take one path.
  void attach_node_sync(std::unique_ptr<NodeSync> sync);
  void detach_node_sync();
  bool node_sync_attached() const { return node_sync_ != nullptr; }

 protected:
  Bootstrap();  // out of line, as the destructor: NodeSync is complete only there
  virtual Status barrier_impl() = 0;
  virtual Status allreduce_impl(const int64_t *in, int64_t *out, int count, ReduceOp op) = 0;

  std::unique_ptr<NodeSync> node_sync_;
  WaitBounds bounds_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int thread_level_ = TSHMEM_THREAD_SINGLE;
  bool initialised_by_tshmem_ = false;
  std::vector<int> local_pes_;
  std::vector<int> node_of_pe_;

 private:
  std::atomic<bool> failed_{false};
  mutable std::mutex failure_mutex_;
  Status failure_code_ = TSHMEM_SUCCESS;
  std::string failure_;
  std::function<void(Status, const std::string &)> failure_listener_;
};

/// Creates the MPI bootstrap over `comm` (a pointer to an MPI_Comm, or nullptr for MPI_COMM_WORLD).
/// Initialises MPI if the application has not; the bootstrap then finalises it when destroyed.
/// `node_size` > 0 (TSHMEM_DEBUG_NODE_SIZE) splits every node into groups of that many consecutive
/// node-local PEs, each treated as a node of its own: the off-node paths run on one host.
/// Every wait of its collectives, its own start included, is bounded by `bounds`.
Status make_mpi_bootstrap(const void *comm, int node_size, const WaitBounds &bounds, std::unique_ptr<Bootstrap> *out);

/// Creates the bootstrap over the application's all-gather and barrier (tshmemx_init_callbacks;
/// bootstrap_callbacks.cc): no MPI. Nodes are PEs of one host (TSHMEM_DEBUG_NODE_SIZE splits them as above).
Status make_callback_bootstrap(const tshmemx_bootstrap_callbacks_t &callbacks, int node_size,
                               std::unique_ptr<Bootstrap> *out);

}  // namespace tshmemi
