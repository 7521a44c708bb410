// The MPI implementation of the bootstrap interface. Every collective is MPI's non-blocking form, tested until it
// completes or its bound passes (bounded_wait.h): a PE that stopped or died cannot hold the others in MPI for ever.
// Its buffers are the bootstrap's own copies, so a collective given up on may still complete into them later.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/mpi_status.h"
#include "bootstrap/peer_liveness.h"

namespace tshmemi {

Status mpi_error(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return set_error(TSHMEM_ERR_MPI, "%s failed: %s", call, text);
}

namespace {

MPI_Op to_mpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kSum: return MPI_SUM;
  }
  return MPI_OP_NULL;
}

// MPI's levels are ordered but their values are the implementation's.
int to_tshmem_level(int mpi_level) {
  if (mpi_level >= MPI_THREAD_MULTIPLE) return TSHMEM_THREAD_MULTIPLE;
  if (mpi_level >= MPI_THREAD_SERIALIZED) return TSHMEM_THREAD_SERIALIZED;
  if (mpi_level >= MPI_THREAD_FUNNELED) return TSHMEM_THREAD_FUNNELED;
  return TSHMEM_THREAD_SINGLE;
}

// Watches MPI_Finalize from a thread of its own while the caller is in it. A PE of this host that is gone while it
// waits may have passed the fence and exited normally, or died before it: MPI_Finalize gets one bound
// (TSHMEM_PROXY_TIMEOUT_MS) after the PE is seen gone, then this process exits with a message naming it
// (MPI_Finalize cannot be left otherwise). A wait past TSHMEM_WAIT_WARN_MS is reported once.
class FinalizeWatch {
 public:
  FinalizeWatch(const PeerLiveness &liveness, const WaitBounds &bounds)
      : thread_([this, &liveness, bounds] { watch(liveness, bounds); }) {}
  ~FinalizeWatch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  FinalizeWatch(const FinalizeWatch &) = delete;
  FinalizeWatch &operator=(const FinalizeWatch &) = delete;

 private:
  void watch(const PeerLiveness &liveness, const WaitBounds &bounds) {
    using Clock = std::chrono::steady_clock;
    const auto ms_since = [](Clock::time_point since) {
      return static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count());
    };
    const Clock::time_point start = Clock::now();
    Clock::time_point seen_gone;
    std::vector<int> dead;
    bool warned = bounds.warn_ms <= 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(50), [this] { return done_; })) {
      if (dead.empty() && !(dead = liveness.gone()).empty()) seen_gone = Clock::now();
      if (!dead.empty() && ms_since(seen_gone) >= bounds.timeout_ms) {
        TSHMEMI_LOG(kWarn, kLogBoot,
                    "tshmem_finalize: %s ended while MPI_Finalize waited, which has not returned %lld ms later "
                    "(TSHMEM_PROXY_TIMEOUT_MS): it waits in the launcher's fence for a process that died, which it "
                    "would do for ever; this process exits now, with status 1",
                    name_pes(dead).c_str(), ms_since(seen_gone));
        std::fflush(stdout);
        std::_Exit(1);
      }
      if (!warned && ms_since(start) >= bounds.warn_ms) {
        warned = true;
        TSHMEMI_LOG(kWarn, kLogBoot,
                    "tshmem_finalize: MPI_Finalize has waited %lld ms for every process of the job (the launcher's "
                    "fence); a PE that stopped, or one on another node, is waited for (this note comes after "
                    "TSHMEM_WAIT_WARN_MS)",
                    ms_since(start));
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

class MpiBootstrap final : public Bootstrap {
 public:
  ~MpiBootstrap() override {
    // A failed bootstrap may still have collectives in flight on its communicators (given up on, never completed):
    // those and their buffers stay, as MPI may complete them while it finalises.
    if (failed()) {
      for (std::unique_ptr<char[]> &buffer : abandoned_) (void)buffer.release();
    } else {
      if (local_comm_ != MPI_COMM_NULL) MPI_Comm_free(&local_comm_);
      if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (initialised_by_tshmem_ && !finalized)
      finalize_mpi();
    else if (!finalized)
      name_dead_for_application();
  }

  Status init(const void *user_comm, int node_size) {
    int initialized = 0, finalized = 0;
    TSHMEMI_MPI_CHECK(MPI_Initialized(&initialized));
    TSHMEMI_MPI_CHECK(MPI_Finalized(&finalized));
    if (finalized)
      return set_error(
          TSHMEM_ERR_MPI,
          "tshmem_init: MPI is already finalized (MPI cannot start twice in one process); to init "
          "tshmem again after tshmem_finalize, call MPI_Init in the application so that MPI outlives tshmem");
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      TSHMEMI_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
      initialised_by_tshmem_ = true;
    } else {
      TSHMEMI_MPI_CHECK(MPI_Query_thread(&provided));
    }
    thread_level_ = to_tshmem_level(provided);
    MPI_Comm parent = user_comm ? *static_cast<const MPI_Comm *>(user_comm) : MPI_COMM_WORLD;
    if (parent == MPI_COMM_NULL)
      return set_error(TSHMEM_ERR_INVALID_ARG, "tshmemx_init_attr: attr->mpi_comm is MPI_COMM_NULL");
    // Our own communicators: the application's traffic never matches ours, and errors come back as codes.
    TSHMEMI_MPI_CHECK(MPI_Comm_rank(parent, &rank_));
    MPI_Request dup = MPI_REQUEST_NULL;
    TSHMEMI_MPI_CHECK(MPI_Comm_idup(parent, &comm_, &dup));
    TSHMEM_CHECK(complete(&dup, nullptr, "every PE to start tshmem_init (MPI_Comm_idup)"));
    TSHMEMI_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    TSHMEMI_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    TSHMEMI_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    TSHMEMI_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_comm_));
    TSHMEMI_MPI_CHECK(MPI_Comm_set_errhandler(local_comm_, MPI_ERRORS_RETURN));
    // The host's PEs and, for testing, their TSHMEM_DEBUG_NODE_SIZE: consecutive groups of node_size PEs of a host
    // act as separate nodes. The host splits when any of its PEs asks, each PE by its own value, so a PE whose value
    // differs cannot hang the others; init then reports the difference (the variable is one of the agreed fields).
    // Without the variable nothing is split: one communicator fewer to make at init.
    int host_size = 0, host_rank = 0;
    TSHMEMI_MPI_CHECK(MPI_Comm_size(local_comm_, &host_size));
    TSHMEMI_MPI_CHECK(MPI_Comm_rank(local_comm_, &host_rank));
    // With each PE's process stamp: finalize learns from the kernel which PEs of this host have died.
    const ProcessStamp stamp = own_process_stamp();
    const int64_t mine[kHostFields] = {rank_, node_size, stamp.pid, stamp.start_ticks};
    std::vector<int64_t> host(kHostFields * static_cast<size_t>(host_size));
    TSHMEM_CHECK(gather(mine, host.data(), sizeof(mine), local_comm_, "every PE of this host to start tshmem_init"));
    bool split = false;
    for (int i = 0; i < host_size; ++i) {
      const int64_t *peer = &host[kHostFields * static_cast<size_t>(i)];
      split = split || peer[1] > 0;
      if (peer[0] != rank_) liveness_.watch(static_cast<int>(peer[0]), {peer[2], peer[3]});
    }
    if (split) {
      MPI_Comm group = MPI_COMM_NULL;
      TSHMEMI_MPI_CHECK(MPI_Comm_split(local_comm_, node_size > 0 ? host_rank / node_size : 0, host_rank, &group));
      MPI_Comm_free(&local_comm_);
      local_comm_ = group;
      TSHMEMI_MPI_CHECK(MPI_Comm_set_errhandler(local_comm_, MPI_ERRORS_RETURN));
    }
    TSHMEMI_MPI_CHECK(MPI_Comm_rank(local_comm_, &local_rank_));
    TSHMEMI_MPI_CHECK(MPI_Comm_size(local_comm_, &local_size_));
    local_pes_.assign(static_cast<size_t>(local_size_), 0);
    if (split) {
      TSHMEM_CHECK(gather(&rank_, local_pes_.data(), sizeof(int), local_comm_, "every PE of this node to start"));
    } else {
      for (int i = 0; i < host_size; ++i)
        local_pes_[static_cast<size_t>(i)] = static_cast<int>(host[kHostFields * static_cast<size_t>(i)]);
    }
    // Node number: the lowest PE on the node names it; then renumber densely.
    const int leader = *std::min_element(local_pes_.begin(), local_pes_.end());
    std::vector<int> leaders(static_cast<size_t>(size_));
    TSHMEM_CHECK(gather(&leader, leaders.data(), sizeof(int), comm_, "every PE to start tshmem_init"));
    std::vector<int> distinct = leaders;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    node_of_pe_.resize(leaders.size());
    for (size_t pe = 0; pe < leaders.size(); ++pe)
      node_of_pe_[pe] =
          static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), leaders[pe]) - distinct.begin());
    return TSHMEM_SUCCESS;
  }

  Status barrier_impl() override {
    TSHMEM_CHECK(usable(current_call()));
    MPI_Request request = MPI_REQUEST_NULL;
    TSHMEM_CHECK(started("MPI_Ibarrier", MPI_Ibarrier(comm_, &request)));
    return complete(&request, nullptr, "every PE to join a barrier (MPI_Ibarrier)");
  }
  Status allreduce_impl(const int64_t *in, int64_t *out, int count, ReduceOp op) override {
    TSHMEM_CHECK(usable(current_call()));
    const size_t bytes = sizeof(int64_t) * static_cast<size_t>(count);
    std::unique_ptr<char[]> buffer(new char[2 * bytes + 1]);
    std::memcpy(buffer.get(), in, bytes);
    MPI_Request request = MPI_REQUEST_NULL;
    TSHMEM_CHECK(started("MPI_Iallreduce", MPI_Iallreduce(buffer.get(), buffer.get() + bytes, count, MPI_INT64_T,
                                                          to_mpi(op), comm_, &request)));
    TSHMEM_CHECK(complete(&request, &buffer, "every PE to join an allreduce (MPI_Iallreduce)"));
    std::memcpy(out, buffer.get() + bytes, bytes);
    return TSHMEM_SUCCESS;
  }
  Status allgather(const void *in, void *out, size_t bytes) override {
    TSHMEM_CHECK(usable(current_call()));
    return gather(in, out, bytes, comm_, "every PE to join an allgather (MPI_Iallgather)");
  }
  Status broadcast(void *buffer, size_t bytes, int root) override {
    TSHMEM_CHECK(usable(current_call()));
    std::unique_ptr<char[]> copy(new char[bytes + 1]);
    std::memcpy(copy.get(), buffer, bytes);
    MPI_Request request = MPI_REQUEST_NULL;
    TSHMEM_CHECK(
        started("MPI_Ibcast", MPI_Ibcast(copy.get(), static_cast<int>(bytes), MPI_BYTE, root, comm_, &request)));
    TSHMEM_CHECK(complete(&request, &copy, format("PE %d's broadcast (MPI_Ibcast)", root)));
    std::memcpy(buffer, copy.get(), bytes);
    return TSHMEM_SUCCESS;
  }
  Status local_allgather(const void *in, void *out, size_t bytes) override {
    TSHMEM_CHECK(usable(current_call()));
    return gather(in, out, bytes, local_comm_, "every PE of this node to join an allgather (MPI_Iallgather)");
  }
  Status local_barrier() override {
    TSHMEM_CHECK(usable(current_call()));
    MPI_Request request = MPI_REQUEST_NULL;
    TSHMEM_CHECK(started("MPI_Ibarrier", MPI_Ibarrier(local_comm_, &request)));
    return complete(&request, nullptr, "every PE of this node to join a barrier (MPI_Ibarrier)");
  }
  const void *native_comm() const override { return &comm_; }
  [[noreturn]] void abort(int status) override {
    MPI_Abort(comm_ != MPI_COMM_NULL ? comm_ : MPI_COMM_WORLD, status);
    std::_Exit(status);
  }

 private:
  static constexpr size_t kHostFields = 4;  ///< what each PE tells its host at init: PE, node size, process stamp

  // MPI_Finalize (tshmem started MPI) waits in Open MPI's launcher fence for every process of the job: for a dead one,
  // possibly for ever (whether the launcher counts it as gone is a race). In the failed state, a PE of this host whose
  // process is gone before this one enters MPI_Finalize died (or left without MPI_Finalize): no fence can complete
  // without this process. It is named, and MPI is left unfinalized. Otherwise MPI_Finalize runs, watched
  // (FinalizeWatch). A healthy finalize never skips it: an MPI without a fence at MPI_Finalize may let a PE leave
  // first.
  void finalize_mpi() {
    const std::vector<int> dead = failed() ? liveness_.gone() : std::vector<int>();
    if (!dead.empty()) {
      TSHMEMI_LOG(kWarn, kLogBoot,
                  "tshmem_finalize: MPI, which tshmem_init started, is left unfinalized: %s ended before this PE "
                  "reached MPI_Finalize (killed, or left without MPI_Finalize), and MPI_Finalize would wait for it "
                  "in the launcher's fence for ever; the launcher may report this process as exiting without "
                  "MPI_Finalize",
                  name_pes(dead).c_str());
      return;
    }
    FinalizeWatch watch(liveness_, bounds_);
    MPI_Finalize();
  }

  // MPI is the application's, and so is MPI_Finalize, whose launcher fence would wait for a dead PE of this host as
  // it would for tshmem (finalize_mpi): in the failed state, such a PE is named, so that the application can leave it.
  void name_dead_for_application() {
    const std::vector<int> dead = failed() ? liveness_.gone() : std::vector<int>();
    if (dead.empty()) return;
    TSHMEMI_LOG(kWarn, kLogBoot,
                "tshmem_finalize: %s ended before this PE finalized (killed, or left without MPI_Finalize); MPI is "
                "the application's, and its MPI_Finalize waits in the launcher's fence for every process of the job, "
                "for ever where one died: an application that knows a PE died leaves MPI unfinalized",
                name_pes(dead).c_str());
  }

  // An MPI error starting a collective: the PEs' collectives are out of step from here on.
  Status started(const char *call, int code) {
    if (code == MPI_SUCCESS) return TSHMEM_SUCCESS;
    mpi_error(call, code);
    return fail(TSHMEM_ERR_MPI, format("%s: %s", current_call(), last_error_message().c_str()));
  }

  // Tests `request` until it completes, within the bound. Given up on, it stays in flight, and so does `buffer`
  // (what MPI reads and writes for it): both are kept for the rest of the process.
  Status complete(MPI_Request *request, std::unique_ptr<char[]> *buffer, const std::string &what) {
    WaitClock clock(bounds_, rank_, what);
    for (;;) {
      int done = 0;
      const int code = MPI_Test(request, &done, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS) {
        mpi_error("MPI_Test", code);
        return fail(TSHMEM_ERR_MPI,
                    format("%s: waiting for %s: %s", current_call(), what.c_str(), last_error_message().c_str()));
      }
      if (done) return TSHMEM_SUCCESS;
      if (!clock.keep_waiting()) {
        if (buffer != nullptr) abandoned_.push_back(std::move(*buffer));
        return fail(TSHMEM_ERR_TIMEOUT, clock.expired_message());
      }
    }
  }

  // An allgather of `bytes` per PE over `comm`, within the bound.
  Status gather(const void *in, void *out, size_t bytes, MPI_Comm comm, const std::string &what) {
    int n = 0;
    TSHMEMI_MPI_CHECK(MPI_Comm_size(comm, &n));
    std::unique_ptr<char[]> buffer(new char[bytes * (static_cast<size_t>(n) + 1) + 1]);
    std::memcpy(buffer.get(), in, bytes);
    MPI_Request request = MPI_REQUEST_NULL;
    TSHMEM_CHECK(
        started("MPI_Iallgather", MPI_Iallgather(buffer.get(), static_cast<int>(bytes), MPI_BYTE, buffer.get() + bytes,
                                                 static_cast<int>(bytes), MPI_BYTE, comm, &request)));
    TSHMEM_CHECK(complete(&request, &buffer, what));
    std::memcpy(out, buffer.get() + bytes, bytes * static_cast<size_t>(n));
    return TSHMEM_SUCCESS;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm local_comm_ = MPI_COMM_NULL;
  std::vector<std::unique_ptr<char[]>> abandoned_;  ///< buffers of collectives given up on (failed state)
  PeerLiveness liveness_;                           ///< the other PEs of this host
};

}  // namespace

Status make_mpi_bootstrap(const void *comm, int node_size, const WaitBounds &bounds, std::unique_ptr<Bootstrap> *out) {
  auto bootstrap = std::make_unique<MpiBootstrap>();
  bootstrap->set_bounds(bounds);
  TSHMEM_CHECK(bootstrap->init(comm, node_size));
  *out = std::move(bootstrap);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
