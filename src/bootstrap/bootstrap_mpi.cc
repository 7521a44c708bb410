// The MPI implementation of the bootstrap interface.
#include <mpi.h>

#include <algorithm>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "bootstrap/mpi_status.h"

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

class MpiBootstrap final : public Bootstrap {
 public:
  ~MpiBootstrap() override {
    if (local_comm_ != MPI_COMM_NULL) MPI_Comm_free(&local_comm_);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (initialised_by_tshmem_ && !finalized) MPI_Finalize();
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
    TSHMEMI_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
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
    const int mine[2] = {rank_, node_size};
    std::vector<int> host(2 * static_cast<size_t>(host_size));
    TSHMEMI_MPI_CHECK(MPI_Allgather(mine, 2, MPI_INT, host.data(), 2, MPI_INT, local_comm_));
    bool split = false;
    for (int i = 0; i < host_size; ++i) split = split || host[2 * static_cast<size_t>(i) + 1] > 0;
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
      TSHMEMI_MPI_CHECK(MPI_Allgather(&rank_, 1, MPI_INT, local_pes_.data(), 1, MPI_INT, local_comm_));
    } else {
      for (int i = 0; i < host_size; ++i) local_pes_[static_cast<size_t>(i)] = host[2 * static_cast<size_t>(i)];
    }
    // Node number: the lowest PE on the node names it; then renumber densely.
    const int leader = *std::min_element(local_pes_.begin(), local_pes_.end());
    std::vector<int> leaders(static_cast<size_t>(size_));
    TSHMEMI_MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm_));
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
    TSHMEMI_MPI_CHECK(MPI_Barrier(comm_));
    return TSHMEM_SUCCESS;
  }
  Status allreduce_impl(const int64_t *in, int64_t *out, int count, ReduceOp op) override {
    TSHMEMI_MPI_CHECK(MPI_Allreduce(in, out, count, MPI_INT64_T, to_mpi(op), comm_));
    return TSHMEM_SUCCESS;
  }
  Status allgather(const void *in, void *out, size_t bytes) override {
    TSHMEMI_MPI_CHECK(
        MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, comm_));
    return TSHMEM_SUCCESS;
  }
  Status broadcast(void *buffer, size_t bytes, int root) override {
    TSHMEMI_MPI_CHECK(MPI_Bcast(buffer, static_cast<int>(bytes), MPI_BYTE, root, comm_));
    return TSHMEM_SUCCESS;
  }
  Status local_allgather(const void *in, void *out, size_t bytes) override {
    TSHMEMI_MPI_CHECK(
        MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, local_comm_));
    return TSHMEM_SUCCESS;
  }
  Status local_barrier() override {
    TSHMEMI_MPI_CHECK(MPI_Barrier(local_comm_));
    return TSHMEM_SUCCESS;
  }
  const void *native_comm() const override { return &comm_; }
  [[noreturn]] void abort(int status) override {
    MPI_Abort(comm_ != MPI_COMM_NULL ? comm_ : MPI_COMM_WORLD, status);
    std::_Exit(status);
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm local_comm_ = MPI_COMM_NULL;
};

}  // namespace

Status make_mpi_bootstrap(const void *comm, int node_size, std::unique_ptr<Bootstrap> *out) {
  auto bootstrap = std::make_unique<MpiBootstrap>();
  TSHMEM_CHECK(bootstrap->init(comm, node_size));
  *out = std::move(bootstrap);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
