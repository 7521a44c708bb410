// The messenger over MPI point-to-point calls, on the proxy's own duplicate of the job communicator (its
// traffic never matches the bootstrap's or the application's). One tag: MPI's non-overtaking rule between
// a pair of PEs is the ordering the proxy builds on.
#include <mpi.h>

#include <chrono>
#include <climits>
#include <thread>
#include <vector>

#include "bootstrap/messenger.h"
#include "bootstrap/mpi_status.h"

namespace tshmemi {
namespace {

constexpr int kTag = 0x7511;
static_assert(sizeof(MPI_Request) <= sizeof(Messenger::Request::handle), "room for MPI_Request");

MPI_Request *handle_of(Messenger::Request *request) { return reinterpret_cast<MPI_Request *>(request->handle); }

const char *thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

class MpiMessenger final : public Messenger {
 public:
  explicit MpiMessenger(MPI_Comm comm) : comm_(comm) {}
  ~MpiMessenger() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  Status isend(const void *data, size_t bytes, int pe, Request *request) override {
    if (bytes > static_cast<size_t>(INT_MAX))
      return set_error(TSHMEM_ERR_INTERNAL, "proxy message of %zu bytes exceeds INT_MAX", bytes);
    TSHMEMI_MPI_CHECK(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, pe, kTag, comm_, handle_of(request)));
    request->active = true;
    return TSHMEM_SUCCESS;
  }

  Status irecv(void *data, size_t capacity, Request *request) override {
    TSHMEMI_MPI_CHECK(
        MPI_Irecv(data, static_cast<int>(capacity), MPI_BYTE, MPI_ANY_SOURCE, kTag, comm_, handle_of(request)));
    request->active = true;
    return TSHMEM_SUCCESS;
  }

  Status test(Request *request, bool *done, int *source, size_t *bytes) override {
    *done = false;
    if (!request->active) {
      *done = true;
      return TSHMEM_SUCCESS;
    }
    int flag = 0;
    MPI_Status status;
    const int code = MPI_Test(handle_of(request), &flag, &status);
    if (code != MPI_SUCCESS) {
      // The request ended with an error (MPI_ERR_TRUNCATE: a message larger than its buffer): MPI has completed it
      // and may have freed or replaced the handle, so it is never cancelled, waited for or freed again.
      request->active = false;
      *done = true;
      return mpi_error("MPI_Test", code);
    }
    if (!flag) return TSHMEM_SUCCESS;
    request->active = false;
    *done = true;
    if (source != nullptr) *source = status.MPI_SOURCE;
    if (bytes != nullptr) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      *bytes = static_cast<size_t>(count);
    }
    return TSHMEM_SUCCESS;
  }

  // Only on a request MPI still holds for us (active, not null): a handle MPI completed is invalid, and an invalid
  // handle's error goes to MPI_COMM_WORLD's handler, which aborts the job by default.
  // Every cancel is posted first, then they get one second in all: MPI cannot cancel a receive a message matched,
  // which completes only when its data comes (never, from a stopped sender's rendezvous); such a one is freed to
  // MPI and its buffer kept.
  void cancel(Request *requests, size_t count, std::vector<bool> *held) override {
    held->assign(count, false);
    std::vector<size_t> pending;
    for (size_t i = 0; i < count; ++i) {
      Request *request = &requests[i];
      if (!request->active || *handle_of(request) == MPI_REQUEST_NULL) continue;
      request->active = false;
      if (MPI_Cancel(handle_of(request)) == MPI_SUCCESS) pending.push_back(i);
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!pending.empty()) {
      for (size_t k = 0; k < pending.size();) {
        int done = 0;
        MPI_Test(handle_of(&requests[pending[k]]), &done, MPI_STATUS_IGNORE);
        if (done != 0) {
          pending[k] = pending.back();
          pending.pop_back();
        } else {
          ++k;
        }
      }
      if (pending.empty() || std::chrono::steady_clock::now() >= until) break;
      std::this_thread::yield();
    }
    for (size_t i : pending) {
      MPI_Request_free(handle_of(&requests[i]));
      (*held)[i] = true;
    }
  }

  void release(Request *request) override {
    if (!request->active || *handle_of(request) == MPI_REQUEST_NULL) return;
    request->active = false;
    MPI_Request_free(handle_of(request));
  }

 private:
  MPI_Comm comm_;
};

}  // namespace

Status make_mpi_messenger(Bootstrap &boot, std::unique_ptr<Messenger> *out, std::string *unavailable) {
  out->reset();
  unavailable->clear();
  int provided = MPI_THREAD_SINGLE;
  TSHMEMI_MPI_CHECK(MPI_Query_thread(&provided));
  // Agreed, so that every PE starts a proxy or none does.
  const int64_t mine = provided == MPI_THREAD_MULTIPLE ? 1 : 0;
  int64_t all = 0;
  TSHMEM_CHECK(boot.allreduce(&mine, &all, 1, ReduceOp::kMin));
  if (all == 0) {
    *unavailable = format(
        "MPI was initialised with %s on %s; the off-node proxy needs MPI_THREAD_MULTIPLE (initialise MPI with "
        "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...), or let tshmem_init do it)",
        thread_level_name(provided), mine == 0 ? "this PE" : "another PE");
    return TSHMEM_SUCCESS;
  }
  const MPI_Comm parent = *static_cast<const MPI_Comm *>(boot.native_comm());
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request dup = MPI_REQUEST_NULL;
  TSHMEMI_MPI_CHECK(MPI_Comm_idup(parent, &comm, &dup));  // collective: bounded like the bootstrap's own
  WaitClock clock(boot.bounds(), boot.rank(), "every PE to make the off-node proxy's communicator (MPI_Comm_idup)");
  for (int done = 0;;) {
    const int code = MPI_Test(&dup, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) {
      mpi_error("MPI_Test", code);
      return boot.fail(TSHMEM_ERR_MPI, format("%s: %s", current_call(), last_error_message().c_str()));
    }
    if (done) break;
    if (!clock.keep_waiting()) return boot.fail(TSHMEM_ERR_TIMEOUT, clock.expired_message());
  }
  TSHMEMI_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  *out = std::make_unique<MpiMessenger>(comm);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
