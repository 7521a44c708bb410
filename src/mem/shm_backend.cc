// The `shm` backend: the symmetric heap in shared host memory, for hosts without a GPU. The whole host
// path (bootstrap, heap, check, peer table, put/get, barrier) runs for real on it.
//
// Each PE's heap is a file that never has a name: open(O_TMPFILE | O_EXCL) in /dev/shm, or memfd_create
// where /dev/shm cannot make one. Nobody can predict, squat, open or leave behind a nameless file: it
// disappears with the last descriptor and mapping, even when every PE is killed. The file is sized, not filled:
// a page of the heap costs memory when it is first touched, so init takes the same time whatever
// TSHMEM_SYMMETRIC_SIZE is (filling a tmpfs file zeroes every page: about 0.6 s per GiB). A heap larger than the
// filesystem's free room is an error at init; room that other programs take after init is the site's to keep
// (a page that cannot be had when first touched is a SIGBUS, as for any program on tmpfs). Node-local peers receive the
// descriptor over the same private socket exchange as the vmm backend (handle_exchange.h), and check its owner and size
// before mapping it. Past the heap, at the next page, each file holds one more page: this PE's slots of the node's
// shared-memory rendezvous (bootstrap/node_sync.h), through which a job on one node makes its barriers and symmetry
// checks.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/agree.h"
#include "bootstrap/node_sync.h"
#include "init_steps.h"
#include "mem/backend.h"
#include "mem/handle_exchange.h"
#include "mem/host_copy.h"

namespace tshmemi {
namespace {

constexpr const char *kShmDirectory = "/dev/shm";

std::string human_bytes(uint64_t bytes) {
  static const char *const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? format("%llu bytes", static_cast<unsigned long long>(bytes))
                   : format("%.1f %s", value, kUnits[unit]);
}

// The node sync page follows the heap at the next page boundary.
uint64_t sync_page_offset(uint64_t heap_size) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return (heap_size + page - 1) / page * page;
}

// One PE's heap file: nameless, its memory reserved in full, mapped (heap and node sync page). Its parts touch
// no tshmem state (no last error, no log), so the reservation may run on any thread.
struct HeapFile {
  UniqueFd fd;
  void *base = nullptr;  // the mapping of `bytes`; unmapped with the object unless taken
  uint64_t bytes = 0;
  Status status = TSHMEM_SUCCESS;
  std::string error;       // why, when status is a failure
  std::string note;        // a line for the info log (the memfd fallback)
  std::string filesystem;  // where it lives, for messages

  HeapFile() = default;
  HeapFile(HeapFile &&other) noexcept { *this = std::move(other); }
  HeapFile &operator=(HeapFile &&other) noexcept {
    if (this != &other) {
      unmap();
      fd = std::move(other.fd);
      base = std::exchange(other.base, nullptr);
      bytes = other.bytes;
      status = other.status;
      error = std::move(other.error);
      note = std::move(other.note);
      filesystem = std::move(other.filesystem);
    }
    return *this;
  }
  ~HeapFile() { unmap(); }
  void unmap() {
    if (base != nullptr) munmap(base, bytes);
    base = nullptr;
  }
};

// A nameless file in /dev/shm (the filesystem the site sized for shared memory), else a memfd; nothing reserved.
HeapFile open_heap_file(uint64_t heap_size) {
  HeapFile file;
  file.bytes = sync_page_offset(heap_size) + kNodeSyncBytes;
  file.filesystem = kShmDirectory;
  file.fd.reset(open(kShmDirectory, O_TMPFILE | O_EXCL | O_RDWR | O_CLOEXEC, 0600));  // O_EXCL: never linkable
  if (!file.fd.valid()) {
    const int tmpfile_errno = errno;
    file.fd.reset(memfd_create("tshmem-heap", MFD_CLOEXEC));
    if (!file.fd.valid()) {
      file.status = TSHMEM_ERR_SYSTEM;
      file.error = format("shm backend: open(%s, O_TMPFILE): %s; memfd_create: %s", kShmDirectory,
                          std::strerror(tmpfile_errno), std::strerror(errno));
      return file;
    }
    file.note = format("shm backend: open(%s, O_TMPFILE): %s; the heap is a memfd", kShmDirectory,
                       std::strerror(tmpfile_errno));
    file.filesystem = "memfd (the kernel's internal tmpfs)";
  }
  return file;
}

// Sizes the file to offset + bytes without touching a page, when the filesystem has room for them now.
int reserve(int fd, uint64_t offset, uint64_t bytes) {
  struct statvfs fs;
  if (fstatvfs(fd, &fs) == 0 && static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < bytes) return ENOSPC;
  int rc;
  do {
    rc = ftruncate(fd, static_cast<off_t>(offset + bytes)) == 0 ? 0 : errno;
  } while (rc == EINTR);
  return rc;
}

// After the reservation (`rc` its outcome): the failure's message, or the mapping.
void finish_heap_file(HeapFile &file, uint64_t heap_size, int rc) {
  if (rc != 0) {
    struct statvfs room;
    const std::string free_text =
        fstatvfs(file.fd.get(), &room) == 0
            ? format(" (%s free of %s)", human_bytes(static_cast<uint64_t>(room.f_bavail) * room.f_frsize).c_str(),
                     human_bytes(static_cast<uint64_t>(room.f_blocks) * room.f_frsize).c_str())
            : std::string();
    file.status = TSHMEM_ERR_OUT_OF_MEMORY;
    file.error = format(
        "shm backend: reserving the %llu-byte (%s) heap in %s%s failed: %s (make %s larger or lower "
        "TSHMEM_SYMMETRIC_SIZE)",
        static_cast<unsigned long long>(heap_size), human_bytes(heap_size).c_str(), file.filesystem.c_str(),
        free_text.c_str(), std::strerror(rc), file.filesystem.c_str());
    return;
  }
  void *base = mmap(nullptr, file.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd.get(), 0);
  if (base == MAP_FAILED) {
    file.status = TSHMEM_ERR_OUT_OF_MEMORY;
    file.error = format("shm backend: mmap of the %llu-byte heap: %s", static_cast<unsigned long long>(heap_size),
                        std::strerror(errno));
    return;
  }
  file.base = base;
}

HeapFile make_heap_file(uint64_t heap_size) {
  HeapFile file = open_heap_file(heap_size);
  if (file.status == TSHMEM_SUCCESS) finish_heap_file(file, heap_size, reserve(file.fd.get(), 0, file.bytes));
  return file;
}

// Made ahead, the reservation goes in chunks taken from a shared cursor by an idle-priority helper and, once the PE
// needs the file, by the PE's own thread too: the helper then never delays anything (fallocate locks the file for
// one chunk at a time, so a helper starved by a busy machine holds the PE up by one chunk at most).
constexpr uint64_t kReserveChunk = uint64_t{1} << 20;
constexpr uint64_t kKeepFree = uint64_t{256} << 20;

}  // namespace

struct ShmHeapReservation::Made {
  HeapFile file;
  std::atomic<uint64_t> next{0};  // the next chunk's offset
  std::atomic<int> failure{0};    // the first failing chunk's error
  std::atomic<bool> stop{false};  // the file is not wanted any more
  std::thread helper;
  bool finished = false;

  // `ahead`: the helper, while MPI starts. It leaves the filesystem's last quarter (at least kKeepFree) to others:
  // MPI makes its own shared-memory segments there, and a heap reserved first must not starve them (a heap that does
  // not fit then fails in the heap-own step, after MPI started, as it would without the helper).
  void reserve_chunks(bool ahead) {
    while (failure.load(std::memory_order_relaxed) == 0 && !stop.load(std::memory_order_relaxed)) {
      if (ahead && !room_for_a_chunk()) return;
      // One sizing of the whole file (nothing is touched: it takes microseconds whatever the size).
      const uint64_t offset = next.exchange(file.bytes, std::memory_order_relaxed);
      if (offset >= file.bytes) return;
      const int rc = reserve(file.fd.get(), 0, file.bytes);
      int none = 0;
      if (rc != 0) failure.compare_exchange_strong(none, rc);
    }
  }

  bool room_for_a_chunk() const {
    struct statvfs fs;
    if (fstatvfs(file.fd.get(), &fs) != 0) return false;
    const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    const uint64_t keep = std::max(kKeepFree, static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize / 4);
    return free_bytes >= keep + kReserveChunk;
  }
};

ShmHeapReservation::ShmHeapReservation(uint64_t heap_size) : heap_size_(heap_size), made_(std::make_unique<Made>()) {
  made_->file = open_heap_file(heap_size);
  if (made_->file.status != TSHMEM_SUCCESS) return;  // the step reports it
  Made *made = made_.get();
  made->helper = std::thread([made] {
    // Idle priority: the reservation takes only CPU time nothing else wants (MPI's start mostly waits, but what it
    // computes, and the node's other PEs, come first).
    const sched_param idle{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    made->reserve_chunks(true);
  });
}

std::unique_ptr<ShmHeapReservation> ShmHeapReservation::start(uint64_t heap_size) noexcept {
  try {
    return std::unique_ptr<ShmHeapReservation>(new ShmHeapReservation(heap_size));
  } catch (...) {  // no thread (a tight ulimit -v, say): the step makes the file itself
    return nullptr;
  }
}

ShmHeapReservation::~ShmHeapReservation() {
  made_->stop.store(true, std::memory_order_relaxed);  // an untaken file: the helper ends after its chunk
  if (made_->helper.joinable()) made_->helper.join();
}

ShmHeapReservation::Made &ShmHeapReservation::join() {
  Made &made = *made_;
  if (made.finished || made.file.status != TSHMEM_SUCCESS) return made;
  made.reserve_chunks(false);  // at this thread's priority, beside the helper
  if (made.helper.joinable()) made.helper.join();
  finish_heap_file(made.file, heap_size_, made.failure.load());
  made.finished = true;
  return made;
}

namespace {

// Lets go of a heap mapping but keeps its addresses readable and writable: anonymous zero pages take its place
// (reserving nothing until touched). A program that still holds an array over the heap after finalize (Python
// keeps them as long as it likes) then reads zeros and writes into memory of its own, instead of faulting; the
// heap's file goes with its last real mapping as before.
void retire(void *base, size_t bytes) {
  if (mmap(base, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) ==
      MAP_FAILED)
    munmap(base, bytes);
}

class ShmBackend final : public MemBackend {
 public:
  ShmBackend(int64_t init_timeout_ms, std::unique_ptr<ShmHeapReservation> early)
      : init_timeout_ms_(init_timeout_ms), early_(std::move(early)) {}
  ~ShmBackend() override { release_all(); }

  const char *name() const override { return "shm"; }
  bool device_memory() const override { return false; }

  Status create(Bootstrap &boot, uint64_t heap_size) override {
    const Status status = create_steps(boot, heap_size);
    // Every PE agreed on a failure: each lets go of what it mapped, with no barrier. A nameless file lives
    // until its last mapping goes, so unmapping never pulls memory from under a peer, and no PE is left
    // waiting for another whose heap was never made.
    if (status != TSHMEM_SUCCESS) release_all();
    return status;
  }

  void *local_base() const override { return own_base_; }
  void *peer_base(int pe) const override { return peer_bases_.at(static_cast<size_t>(pe)); }
  void *node_sync_page(int pe) const override {
    void *base = peer_base(pe);
    return base != nullptr ? static_cast<char *>(base) + sync_offset_ : nullptr;
  }

  Status copy(void *dst, const void *src, size_t bytes) override {
    host_copy(dst, src, bytes);
    return TSHMEM_SUCCESS;
  }
  Status copy_on_stream(void *dst, const void *src, size_t bytes, tshmemx_stream_t) override {
    return copy(dst, src, bytes);
  }
  bool created_zeroed() const override { return true; }  // a new tmpfs file
  Status zero(void *dst, size_t bytes) override {
    std::memset(dst, 0, bytes);
    return TSHMEM_SUCCESS;
  }
  Status quiet() override {
    // Stores to shared memory become visible in order with this fence; the peer's barrier completes it.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return TSHMEM_SUCCESS;
  }

  Status destroy(Bootstrap &boot) override {
    // Unmap peers first, barrier, then the own heap: nobody touches memory that is being released.
    for (size_t pe = 0; pe < peer_bases_.size(); ++pe) {
      if (peer_bases_[pe] != nullptr && peer_bases_[pe] != own_base_) retire(peer_bases_[pe], file_size_);
      peer_bases_[pe] = nullptr;
    }
    const Status status = boot.barrier();
    release_all();
    return status;
  }

 private:
  Status create_steps(Bootstrap &boot, uint64_t heap_size) {
    heap_size_ = heap_size;
    sync_offset_ = sync_page_offset(heap_size);
    file_size_ = sync_offset_ + kNodeSyncBytes;
    peer_bases_.assign(static_cast<size_t>(boot.size()), nullptr);
    UniqueFd own;
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapOwn, [&] { return create_own(&own, boot.local_size()); }, "shm backend"));
    std::vector<PeerFd> received;
    TSHMEM_CHECK(exchange_fds_node_local(boot, own.get(), file_size_, init_timeout_ms_, &received));
    own.reset();  // the mapping keeps the memory; each peer holds its own descriptor
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapExchange, [] { return TSHMEM_SUCCESS; }, "shm backend"));
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapPeers, [&] { return map_peers(boot, received); }, "shm backend"));
    return TSHMEM_SUCCESS;
  }

  Status create_own(UniqueFd *out, int node_pes) {
    HeapFile file;
    if (early_ && early_->heap_size() == heap_size_)
      file = std::move(early_->join().file);  // made while MPI started
    else
      file = make_heap_file(heap_size_);
    early_.reset();
    if (!file.note.empty()) TSHMEMI_LOG(kInfo, kLogMem, "%s", file.note.c_str());
    if (file.status != TSHMEM_SUCCESS) return set_error_message(file.status, file.error);
    // The files take no room until their pages are touched: the room must hold every heap of the node.
    struct statvfs fs;
    const uint64_t needed = file.bytes * static_cast<uint64_t>(node_pes);
    if (fstatvfs(file.fd.get(), &fs) == 0 && static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < needed)
      return set_error(TSHMEM_ERR_OUT_OF_MEMORY,
                       "shm backend: reserving the %llu-byte (%s) heap in %s (%s free of %s) failed: this node's %d "
                       "PEs need %s together (make %s larger or lower TSHMEM_SYMMETRIC_SIZE)",
                       static_cast<unsigned long long>(heap_size_), human_bytes(heap_size_).c_str(),
                       file.filesystem.c_str(), human_bytes(static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize).c_str(),
                       human_bytes(static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize).c_str(), node_pes,
                       human_bytes(needed).c_str(), file.filesystem.c_str());
    own_base_ = file.base;
    file.base = nullptr;
    *out = std::move(file.fd);
    return TSHMEM_SUCCESS;
  }

  Status map_peers(Bootstrap &boot, std::vector<PeerFd> &received) {
    if (own_base_ == nullptr) return set_error(TSHMEM_ERR_INTERNAL, "shm backend: own heap missing");
    peer_bases_[static_cast<size_t>(boot.rank())] = own_base_;  // the own slot is the own base
    for (PeerFd &peer : received) {
      struct stat info;
      const bool stat_ok = fstat(peer.fd.get(), &info) == 0;
      if (!stat_ok || !S_ISREG(info.st_mode) || info.st_uid != geteuid() ||
          static_cast<uint64_t>(info.st_size) != file_size_ || peer.bytes != file_size_)
        return set_error(TSHMEM_ERR_SYSTEM,
                         "shm backend: PE %d's heap descriptor is not ours (owner %d, size %lld; expected a file of "
                         "uid %d, %llu bytes)",
                         peer.pe, stat_ok ? static_cast<int>(info.st_uid) : -1,
                         stat_ok ? static_cast<long long>(info.st_size) : -1LL, static_cast<int>(geteuid()),
                         static_cast<unsigned long long>(file_size_));
      void *base = mmap(nullptr, file_size_, PROT_READ | PROT_WRITE, MAP_SHARED, peer.fd.get(), 0);
      if (base == MAP_FAILED)
        return set_error(TSHMEM_ERR_SYSTEM, "shm backend: mmap of PE %d's heap: %s", peer.pe, std::strerror(errno));
      peer.fd.reset();  // the mapping holds the file
      peer_bases_[static_cast<size_t>(peer.pe)] = base;
    }
    return TSHMEM_SUCCESS;
  }

  void release_all() {
    early_.reset();
    for (size_t pe = 0; pe < peer_bases_.size(); ++pe)
      if (peer_bases_[pe] != nullptr && peer_bases_[pe] != own_base_) retire(peer_bases_[pe], file_size_);
    peer_bases_.clear();
    if (own_base_ != nullptr) retire(own_base_, file_size_);
    own_base_ = nullptr;
  }

  int64_t init_timeout_ms_;
  std::unique_ptr<ShmHeapReservation> early_;  // this PE's heap file, made ahead (or null)
  uint64_t heap_size_ = 0;
  uint64_t sync_offset_ = 0;  // the node sync page: the heap's size rounded up to a page
  uint64_t file_size_ = 0;    // heap, padding to the page, node sync page
  void *own_base_ = nullptr;
  std::vector<void *> peer_bases_;
};

}  // namespace

Status make_shm_backend(int64_t init_timeout_ms, std::unique_ptr<ShmHeapReservation> early,
                        std::unique_ptr<MemBackend> *out) {
  *out = std::make_unique<ShmBackend>(init_timeout_ms, std::move(early));
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
