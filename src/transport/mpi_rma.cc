// The off-node host transport over MPI one-sided communication: one window over the heap, created at
// init and locked for the whole job (passive target, MPI_Win_lock_all), so a put or get is one MPI call
// and a flush. Progress at the target is MPI's: with a transport that needs the target to enter MPI,
// a put completes when the target next calls tshmem (barrier_all, quiet, a collective allocation).
#include "transport/host_rma.h"

#include <mpi.h>

#include <algorithm>

#include "bootstrap/agree.h"
#include "bootstrap/mpi_status.h"

namespace tshmemi {
namespace {

// MPI counts are int: larger transfers go in pieces.
constexpr size_t kMaxPiece = size_t{1} << 30;

class MpiHostRma final : public HostRma {
 public:
  // Freeing a window is collective, so only destroy() does it; a window left by a failed creation (the
  // other PEs may hold none) is left to MPI_Finalize rather than risk a hang here.
  ~MpiHostRma() override = default;

  Status create(MPI_Comm comm, void *heap_base, uint64_t heap_bytes) {
    TSHMEMI_MPI_CHECK(MPI_Win_create(heap_base, static_cast<MPI_Aint>(heap_bytes), 1, MPI_INFO_NULL, comm, &window_));
    TSHMEMI_MPI_CHECK(MPI_Win_set_errhandler(window_, MPI_ERRORS_RETURN));
    TSHMEMI_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, window_));
    return TSHMEM_SUCCESS;
  }

  Status put(uint64_t heap_offset, const void *src, size_t bytes, int pe) override {
    const char *from = static_cast<const char *>(src);
    for (size_t done = 0; done < bytes; done += kMaxPiece) {
      const int piece = static_cast<int>(std::min(kMaxPiece, bytes - done));
      TSHMEMI_MPI_CHECK(MPI_Put(from + done, piece, MPI_BYTE, pe, static_cast<MPI_Aint>(heap_offset + done), piece,
                                MPI_BYTE, window_));
    }
    TSHMEMI_MPI_CHECK(MPI_Win_flush_local(pe, window_));  // the source may be reused
    return TSHMEM_SUCCESS;
  }

  Status get(void *dst, uint64_t heap_offset, size_t bytes, int pe) override {
    char *to = static_cast<char *>(dst);
    for (size_t done = 0; done < bytes; done += kMaxPiece) {
      const int piece = static_cast<int>(std::min(kMaxPiece, bytes - done));
      TSHMEMI_MPI_CHECK(
          MPI_Get(to + done, piece, MPI_BYTE, pe, static_cast<MPI_Aint>(heap_offset + done), piece, MPI_BYTE, window_));
    }
    TSHMEMI_MPI_CHECK(MPI_Win_flush(pe, window_));
    return TSHMEM_SUCCESS;
  }

  Status quiet() override {
    TSHMEMI_MPI_CHECK(MPI_Win_flush_all(window_));
    return TSHMEM_SUCCESS;
  }

  Status sync() override {
    TSHMEMI_MPI_CHECK(MPI_Win_sync(window_));
    return TSHMEM_SUCCESS;
  }

  Status destroy() override {
    if (window_ == MPI_WIN_NULL) return TSHMEM_SUCCESS;
    const int unlock = MPI_Win_unlock_all(window_);
    const int freed = MPI_Win_free(&window_);  // collective
    window_ = MPI_WIN_NULL;
    if (unlock != MPI_SUCCESS) return mpi_error("MPI_Win_unlock_all", unlock);
    if (freed != MPI_SUCCESS) return mpi_error("MPI_Win_free", freed);
    return TSHMEM_SUCCESS;
  }

 private:
  MPI_Win window_ = MPI_WIN_NULL;
};

}  // namespace

Status make_mpi_host_rma(Bootstrap &boot, void *heap_base, uint64_t heap_bytes, std::unique_ptr<HostRma> *out) {
  auto rma = std::make_unique<MpiHostRma>();
  const MPI_Comm comm = *static_cast<const MPI_Comm *>(boot.native_comm());
  TSHMEM_CHECK(agree_on_status(boot, rma->create(comm, heap_base, heap_bytes),
                               "tshmem_init: exposing the heap to other nodes (MPI window)"));
  *out = std::move(rma);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
