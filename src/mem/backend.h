// The memory-backend interface: where the symmetric heap lives and how node-local peers map it.
// One file per backend: shm_backend.cc (POSIX shared memory, no GPU), vmm_backend.cc (CUDA VMM with
// POSIX fd handles), ipc_backend.cc (cudaMalloc + CUDA IPC handles).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

class MemBackend {
 public:
  virtual ~MemBackend() = default;

  virtual const char *name() const = 0;
  /// True when the heap is device memory (loads/stores from the host are not allowed).
  virtual bool device_memory() const = 0;

  /// Collective over all PEs: reserves `heap_size` bytes for this PE and maps every node-local
  /// peer's heap. Fails on every PE when it fails on one (and unmaps whatever was mapped).
  virtual Status create(Bootstrap &boot, uint64_t heap_size) = 0;

  /// This PE's heap base.
  virtual void *local_base() const = 0;
  /// Where this PE sees `pe`'s heap: its own base for itself, nullptr for PEs of other nodes.
  virtual void *peer_base(int pe) const = 0;

  /// One page of host memory that `pe` (this PE or a node-local peer) shares with the node's PEs, zero at
  /// creation: the slots of the bootstrap's shared-memory rendezvous (bootstrap/node_sync.h). nullptr where the
  /// backend has none (the GPU heaps); then barriers and symmetry checks go through MPI.
  virtual void *node_sync_page(int pe) const {
    (void)pe;
    return nullptr;
  }

  /// Blocking copy between any two addresses this PE can reach (own heap, mapped peer heap, host memory).
  virtual Status copy(void *dst, const void *src, size_t bytes) = 0;
  /// Stream-ordered copy (GPU backends); the shm backend copies at once.
  virtual Status copy_on_stream(void *dst, const void *src, size_t bytes, tshmemx_stream_t stream) = 0;
  /// Zeroes `bytes` at `dst` in this PE's heap; complete when it returns.
  virtual Status zero(void *dst, size_t bytes) = 0;
  /// True when a new heap reads as zero everywhere (a fresh file): init then does not clear tshmem's own regions
  /// of it, which would only fault in pages nothing may use (the device's counters, on a host without a GPU).
  virtual bool created_zeroed() const { return false; }
  /// Completes every transfer this PE has issued (host copies, and the device for GPU backends).
  virtual Status quiet() = 0;

  // ---- Memory behind the heap -----------------------------------------------------------------------------------
  // A backend may reserve the heap's addresses whole at create and back them with memory as allocations reach them
  // (vmm: docs/design.md, "A GPU heap backed as it is used"). The others back the whole heap at create and keep the
  // defaults below. Every PE's answers are the same: every PE backs the same ranges, collectively.

  /// Bytes of this PE's heap backed by memory now (the heap's size where the whole heap is).
  virtual uint64_t backed_bytes(uint64_t heap_bytes) const { return heap_bytes; }
  /// True when [offset, +bytes) of the heap is backed (in this PE's view and in every node peer's). Any thread.
  virtual bool backed(uint64_t offset, uint64_t bytes) const {
    (void)offset, (void)bytes;
    return true;
  }
  /// Collective over ALL PEs, with the same arguments everywhere: backs [begin, end) of the heap, in this PE's view
  /// and in its view of every node peer; `call` names the caller's call in the messages. When one PE cannot create
  /// its memory, every PE returns the same failure and nothing new is backed anywhere.
  virtual Status back(Bootstrap &boot, uint64_t begin, uint64_t end, const char *call) {
    (void)boot, (void)begin, (void)end, (void)call;
    return TSHMEM_SUCCESS;
  }

  // ---- Registered buffers (tshmemx_buffer_register_symmetric; src/heap/registration.cc) -------------------------
  // A backend that can register keeps `registration_capacity()` bytes of VA after every heap view (its own and
  // each node peer's), from offset `registration_base()` of the view, where applications' buffers are mapped at
  // the same offset in every view; the device's one address formula then reaches them like heap memory.
  // The others answer 0 and refuse.

  /// Bytes of the registration range; 0: this backend cannot register.
  virtual uint64_t registration_capacity() const { return 0; }
  /// Offset of the registration range from the heap base (the heap's size rounded to the granularity).
  virtual uint64_t registration_base() const { return 0; }
  /// Size and alignment unit of registered buffers.
  virtual uint64_t registration_granularity() const { return 0; }
  /// Local: checks that [buf, +bytes) is one registrable allocation and readies it (retains and exports its
  /// handle). Fails naming `call`, the value and the rule; then nothing is held.
  virtual Status prepare_registration(const char *call, void *buf, uint64_t bytes) {
    (void)buf, (void)bytes;
    return set_error(TSHMEM_ERR_INTERNAL, "%s: the %s backend cannot register buffers", call, name());
  }
  /// Drops what prepare_registration holds (the collective decided not to register).
  virtual void abandon_registration() {}
  /// Collective over ALL PEs, after every PE prepared: maps every node-local PE's prepared buffer at
  /// `offset` of the registration range in this PE's view of that PE. Fails on every PE when it fails on one,
  /// with nothing mapped anywhere.
  virtual Status map_registration(Bootstrap &boot, uint64_t offset, uint64_t bytes) {
    (void)boot, (void)offset, (void)bytes;
    return set_error(TSHMEM_ERR_INTERNAL, "map_registration: the %s backend cannot register buffers", name());
  }
  /// Local: unmaps the registration at `offset` from every view of this PE and releases its handles (the
  /// device is synchronised first).
  virtual Status unmap_registration(uint64_t offset) {
    (void)offset;
    return TSHMEM_SUCCESS;
  }

  /// Collective teardown: every PE unmaps its peers, barrier, then each releases its own memory.
  /// Every PE calls it once create was called on every PE, whatever create returned and whatever this PE
  /// holds (nothing, part, all): it must run the same collectives on every PE and may run twice.
  virtual Status destroy(Bootstrap &boot) = 0;
};

/// The shm heap's file made ahead: tshmem_init starts it before MPI, whose start mostly waits for the launcher, so
/// sizing the heap's file overlaps it (the file is sized, not filled: microseconds whatever the heap). An
/// idle-priority helper thread sizes it; the heap-own step of the shm backend joins in if it has not and takes the
/// file, with the verdict it would have reached itself. Dropped untaken (init failed before, or that step's fault
/// injected), the file goes with it.
class ShmHeapReservation {
 public:
  /// Starts making the file; null when no thread can start (then the heap-own step makes it, as without).
  static std::unique_ptr<ShmHeapReservation> start(uint64_t heap_size) noexcept;
  ~ShmHeapReservation();
  ShmHeapReservation(const ShmHeapReservation &) = delete;
  ShmHeapReservation &operator=(const ShmHeapReservation &) = delete;

  uint64_t heap_size() const { return heap_size_; }
  struct Made;   ///< the thread and the file it made (shm_backend.cc)
  Made &join();  ///< waits for the file

 private:
  explicit ShmHeapReservation(uint64_t heap_size);
  uint64_t heap_size_;
  std::unique_ptr<Made> made_;
};

/// `init_timeout_ms` (TSHMEM_INIT_TIMEOUT_MS) bounds each wait for a node-local peer while descriptors cross.
/// `early`: this PE's heap file made ahead for this heap size, or null (then the heap-own step makes it).
Status make_shm_backend(int64_t init_timeout_ms, std::unique_ptr<ShmHeapReservation> early,
                        std::unique_ptr<MemBackend> *out);
#if TSHMEM_HAVE_CUDA
Status make_vmm_backend(int cuda_device, int64_t init_timeout_ms, std::unique_ptr<MemBackend> *out);
Status make_ipc_backend(int cuda_device, std::unique_ptr<MemBackend> *out);
#endif

}  // namespace tshmemi
