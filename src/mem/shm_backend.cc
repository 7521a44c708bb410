// The `shm` backend: the symmetric heap in POSIX shared memory, for hosts without a GPU. The whole host
// path (bootstrap, heap, check, peer table, put/get, barrier) runs for real on it.
//
// Each PE creates one segment, exclusively and with mode 0600 (no other user can open it), under a
// name unique to the job. Node-local peers map it, and the owner unlinks it as soon as every peer has,
// so /dev/shm holds nothing after init: a normal or a killed run leaves no residue.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "bootstrap/agree.h"
#include "init_steps.h"
#include "mem/backend.h"

namespace tshmemi {
namespace {

std::string segment_name(uint64_t job_id, int pe) {
  return format("/tshmem.%016llx.%d", static_cast<unsigned long long>(job_id), pe);
}

class ShmBackend final : public MemBackend {
 public:
  ~ShmBackend() override { release_all(); }

  const char *name() const override { return "shm"; }
  bool device_memory() const override { return false; }

  Status create(Bootstrap &boot, uint64_t heap_size) override {
    heap_size_ = heap_size;
    peer_bases_.assign(static_cast<size_t>(boot.size()), nullptr);
    // A name unique to this job: PE 0's random id, broadcast.
    uint64_t job_id = 0;
    if (boot.rank() == 0)
      job_id = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}() ^
               static_cast<uint64_t>(getpid());
    TSHMEM_CHECK(boot.broadcast(&job_id, sizeof(job_id), 0));
    own_name_ = segment_name(job_id, boot.rank());

    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapOwn, [&] { return create_own(); }, "shm backend"));
    // Nothing to exchange (the peers open the segments by name); the step still agrees, for the fault switch.
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapExchange, [] { return TSHMEM_SUCCESS; }, "shm backend"));
    TSHMEM_CHECK(run_step(
        boot, InitStep::kHeapPeers, [&] { return map_peers(boot, job_id); }, "shm backend"));
    // Every peer has mapped every segment: the names can go.
    if (shm_unlink(own_name_.c_str()) == 0) own_name_.clear();
    return TSHMEM_SUCCESS;
  }

  void *local_base() const override { return own_base_; }
  void *peer_base(int pe) const override { return peer_bases_.at(static_cast<size_t>(pe)); }

  Status copy(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return TSHMEM_SUCCESS;
  }
  Status copy_on_stream(void *dst, const void *src, size_t bytes, tshmemx_stream_t) override {
    return copy(dst, src, bytes);
  }
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
    // Unmap peers first, barrier, then the own segment: nobody touches memory that is being released.
    for (size_t pe = 0; pe < peer_bases_.size(); ++pe) {
      if (peer_bases_[pe] != nullptr && peer_bases_[pe] != own_base_) munmap(peer_bases_[pe], heap_size_);
      peer_bases_[pe] = nullptr;
    }
    const Status status = boot.barrier();
    release_all();
    return status;
  }

 private:
  Status create_own() {
    const int fd = shm_open(own_name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      return set_error(TSHMEM_ERR_SYSTEM, "shm_open(%s, O_CREAT|O_EXCL, 0600): %s", own_name_.c_str(),
                       std::strerror(errno));
    const bool sized = ftruncate(fd, static_cast<off_t>(heap_size_)) == 0;
    const int saved = errno;
    void *base = sized ? mmap(nullptr, heap_size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    const int map_errno = errno;
    close(fd);
    if (!sized) {
      shm_unlink(own_name_.c_str());
      own_name_.clear();
      return set_error(TSHMEM_ERR_OUT_OF_MEMORY, "ftruncate(%s, %llu bytes): %s", "shm segment",
                       static_cast<unsigned long long>(heap_size_), std::strerror(saved));
    }
    if (base == MAP_FAILED)
      return set_error(TSHMEM_ERR_OUT_OF_MEMORY, "mmap of the %llu-byte heap segment: %s",
                       static_cast<unsigned long long>(heap_size_), std::strerror(map_errno));
    own_base_ = base;
    return TSHMEM_SUCCESS;
  }

  Status map_peers(Bootstrap &boot, uint64_t job_id) {
    if (own_base_ == nullptr) return set_error(TSHMEM_ERR_INTERNAL, "shm backend: own segment missing");
    peer_bases_[static_cast<size_t>(boot.rank())] = own_base_;  // the own slot is the own base
    for (int pe : boot.local_pes()) {
      if (pe == boot.rank()) continue;
      const std::string name = segment_name(job_id, pe);
      const int fd = shm_open(name.c_str(), O_RDWR, 0);
      if (fd < 0)
        return set_error(TSHMEM_ERR_SYSTEM, "shm_open(%s) of PE %d's heap: %s", name.c_str(), pe, std::strerror(errno));
      struct stat info;
      const bool stat_ok = fstat(fd, &info) == 0;
      if (!stat_ok || info.st_uid != geteuid() || static_cast<uint64_t>(info.st_size) != heap_size_) {
        close(fd);
        return set_error(TSHMEM_ERR_SYSTEM,
                         "shm segment %s of PE %d is not ours (owner %d, size %lld; expected %d, %llu)", name.c_str(),
                         pe, stat_ok ? static_cast<int>(info.st_uid) : -1,
                         stat_ok ? static_cast<long long>(info.st_size) : -1LL, static_cast<int>(geteuid()),
                         static_cast<unsigned long long>(heap_size_));
      }
      void *base = mmap(nullptr, heap_size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      const int map_errno = errno;
      close(fd);
      if (base == MAP_FAILED)
        return set_error(TSHMEM_ERR_SYSTEM, "mmap of PE %d's heap segment: %s", pe, std::strerror(map_errno));
      peer_bases_[static_cast<size_t>(pe)] = base;
    }
    return TSHMEM_SUCCESS;
  }

  void release_all() {
    for (size_t pe = 0; pe < peer_bases_.size(); ++pe)
      if (peer_bases_[pe] != nullptr && peer_bases_[pe] != own_base_) munmap(peer_bases_[pe], heap_size_);
    peer_bases_.clear();
    if (own_base_ != nullptr) munmap(own_base_, heap_size_);
    own_base_ = nullptr;
    if (!own_name_.empty()) shm_unlink(own_name_.c_str());
    own_name_.clear();
  }

  uint64_t heap_size_ = 0;
  void *own_base_ = nullptr;
  std::string own_name_;  // non-empty while the name exists in /dev/shm
  std::vector<void *> peer_bases_;
};

}  // namespace

Status make_shm_backend(std::unique_ptr<MemBackend> *out) {
  *out = std::make_unique<ShmBackend>();
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
