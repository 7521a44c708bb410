// The bootstrap over caller-supplied collectives (tshmemx_init_callbacks): an all-gather and a barrier of the
// application's launcher (a torch.distributed process group under torchrun, ...), no MPI. Every other
// collective of the interface is built from those two: reductions and broadcasts gather every PE's words and
// compute the result locally; the node-local forms gather over all PEs and keep this node's part, so every call
// site must be reached by every PE of the job (as it is: init and the heap call them on every PE).
//
// Nodes are found from each PE's host name and kernel boot id, gathered once: PEs that share both share memory.
// No off-node transport runs over callbacks (native_comm() is null), so PEs of other nodes are unreachable and
// init says why.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "bootstrap/bootstrap.h"

namespace tshmemi {
namespace {

/// What identifies a node: PEs with the same host name and boot id run on one operating-system instance.
struct HostId {
  char host[96];
  char boot_id[40];
};

HostId this_host() {
  HostId id;
  std::memset(&id, 0, sizeof(id));
  if (gethostname(id.host, sizeof(id.host) - 1) != 0) std::snprintf(id.host, sizeof(id.host), "?");
  if (FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    if (std::fgets(id.boot_id, sizeof(id.boot_id), f) == nullptr) id.boot_id[0] = '\0';
    std::fclose(f);
    id.boot_id[strcspn(id.boot_id, "\n")] = '\0';
  }
  return id;
}

class CallbackBootstrap final : public Bootstrap {
 public:
  explicit CallbackBootstrap(const tshmemx_bootstrap_callbacks_t &cb) : cb_(cb) {}

  Status init(int node_size) {
    rank_ = cb_.rank;
    size_ = cb_.n_pes;
    // Calls into the application's collectives are serialised here, so any thread level is safe to provide.
    thread_level_ = TSHMEM_THREAD_MULTIPLE;
    const HostId mine = this_host();
    std::vector<HostId> all(static_cast<size_t>(size_));
    TSHMEM_CHECK(allgather(&mine, all.data(), sizeof(HostId)));
    // Hosts numbered by their lowest PE; within a host, TSHMEM_DEBUG_NODE_SIZE groups of consecutive PEs.
    std::map<std::pair<std::string, std::string>, int> host_of;
    std::vector<int> host(all.size()), host_rank(all.size());
    std::map<int, int> count;
    for (size_t pe = 0; pe < all.size(); ++pe) {
      const auto key = std::make_pair(std::string(all[pe].host), std::string(all[pe].boot_id));
      const auto it = host_of.emplace(key, static_cast<int>(host_of.size())).first;
      host[pe] = it->second;
      host_rank[pe] = count[host[pe]]++;
    }
    std::vector<std::pair<int, int>> node_key(all.size());  // (host, group within the host)
    for (size_t pe = 0; pe < all.size(); ++pe) node_key[pe] = {host[pe], node_size > 0 ? host_rank[pe] / node_size : 0};
    std::map<std::pair<int, int>, int> node_number;  // in order of each node's lowest PE
    node_of_pe_.resize(all.size());
    for (size_t pe = 0; pe < all.size(); ++pe)
      node_of_pe_[pe] = node_number.emplace(node_key[pe], static_cast<int>(node_number.size())).first->second;
    local_pes_.clear();
    for (size_t pe = 0; pe < all.size(); ++pe)
      if (node_of_pe_[pe] == node_of_pe_[static_cast<size_t>(rank_)]) local_pes_.push_back(static_cast<int>(pe));
    local_size_ = static_cast<int>(local_pes_.size());
    local_rank_ = static_cast<int>(std::find(local_pes_.begin(), local_pes_.end(), rank_) - local_pes_.begin());
    return TSHMEM_SUCCESS;
  }

  Status barrier_impl() override {
    const std::lock_guard<std::mutex> serial(mutex_);
    const int rc = cb_.barrier(cb_.user);
    if (rc != 0)
      return set_error(TSHMEM_ERR_SYSTEM, "bootstrap: the application's barrier callback failed (returned %d)", rc);
    return TSHMEM_SUCCESS;
  }

  Status allreduce_impl(const int64_t *in, int64_t *out, int count, ReduceOp op) override {
    std::vector<int64_t> all(static_cast<size_t>(count) * static_cast<size_t>(size_));
    TSHMEM_CHECK(allgather(in, all.data(), static_cast<size_t>(count) * sizeof(int64_t)));
    for (int i = 0; i < count; ++i) {
      int64_t v = all[static_cast<size_t>(i)];
      for (int pe = 1; pe < size_; ++pe) {
        const int64_t x = all[static_cast<size_t>(pe) * static_cast<size_t>(count) + static_cast<size_t>(i)];
        v = op == ReduceOp::kMin ? std::min(v, x) : op == ReduceOp::kMax ? std::max(v, x) : v + x;
      }
      out[i] = v;
    }
    return TSHMEM_SUCCESS;
  }

  Status allgather(const void *in, void *out, size_t bytes) override {
    const std::lock_guard<std::mutex> serial(mutex_);
    const int rc = cb_.allgather(in, out, bytes, cb_.user);
    if (rc != 0)
      return set_error(TSHMEM_ERR_SYSTEM,
                       "bootstrap: the application's allgather callback (%zu bytes) failed (returned %d)", bytes, rc);
    return TSHMEM_SUCCESS;
  }

  Status broadcast(void *buffer, size_t bytes, int root) override {
    std::vector<unsigned char> all(bytes * static_cast<size_t>(size_));
    TSHMEM_CHECK(allgather(buffer, all.data(), bytes));
    std::memcpy(buffer, all.data() + bytes * static_cast<size_t>(root), bytes);
    return TSHMEM_SUCCESS;
  }

  Status local_allgather(const void *in, void *out, size_t bytes) override {
    std::vector<unsigned char> all(bytes * static_cast<size_t>(size_));
    TSHMEM_CHECK(allgather(in, all.data(), bytes));
    for (size_t lr = 0; lr < local_pes_.size(); ++lr)
      std::memcpy(static_cast<unsigned char *>(out) + lr * bytes,
                  all.data() + static_cast<size_t>(local_pes_[lr]) * bytes, bytes);
    return TSHMEM_SUCCESS;
  }

  Status local_barrier() override { return barrier(); }

  // No launcher-wide abort through two callbacks: this process ends, and the launcher (torchrun, srun) ends
  // the others when one of them exits with a failure.
  [[noreturn]] void abort(int status) override { std::_Exit(status); }

  const void *native_comm() const override { return nullptr; }

 private:
  tshmemx_bootstrap_callbacks_t cb_;
  std::mutex mutex_;
};

}  // namespace

Status make_callback_bootstrap(const tshmemx_bootstrap_callbacks_t &callbacks, int node_size,
                               std::unique_ptr<Bootstrap> *out) {
  if (callbacks.rank < 0 || callbacks.n_pes < 1 || callbacks.rank >= callbacks.n_pes)
    return set_error(TSHMEM_ERR_INVALID_ARG, "tshmemx_init_callbacks: rank %d is outside [0, n_pes = %d)",
                     callbacks.rank, callbacks.n_pes);
  if (callbacks.allgather == nullptr || callbacks.barrier == nullptr)
    return set_error(TSHMEM_ERR_INVALID_ARG, "tshmemx_init_callbacks: the %s callback is NULL",
                     callbacks.allgather == nullptr ? "allgather" : "barrier");
  auto bootstrap = std::make_unique<CallbackBootstrap>(callbacks);
  TSHMEM_CHECK(bootstrap->init(node_size));
  *out = std::move(bootstrap);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
