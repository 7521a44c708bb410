// Every crossing of a memory handle between processes, in one file.
//
// POSIX file descriptors (the shm heap, the vmm heap, the multicast object) cross over node-local Unix
// stream sockets with SCM_RIGHTS:
//   - the sockets are files in a directory that the node's first PE creates with mkdtemp (mode 0700, an
//     unpredictable name, under the launcher's directory of the job, which the launcher removes when the job ends
//     however it ended, else $TMPDIR or /tmp): connecting to a Unix socket file needs search permission
//     on its directory, so no other uid (root aside) can even connect, flood or squat a name;
//   - each PE's socket name exists only from its bind until every node-local peer has connected (a
//     connection waits in the listener's queue without the name), each PE removes only the name it created,
//     and the directory's creator removes the directory;
//   - a PE hands its descriptor only to a connecting process whose SO_PEERCRED shows our uid AND the pid
//     of one of this node's PEs (pids all-gathered over the node-local bootstrap first), and a client
//     checks the listener's credentials the same way before trusting what it receives: another job of the
//     same user, which can reach the directory, obtains nothing;
//   - every blocking step (connect, accept, send, receive) is bounded by TSHMEM_INIT_TIMEOUT_MS and fails
//     with a message naming the step and the peer.
// Limitation: all PEs of a node must see the same /tmp (or $TMPDIR of the node's first PE) and share one
// pid namespace (SO_PEERCRED pids are translated to the reader's namespace).
//
// CUDA IPC handles (ipc backend) are all-gathered over the node-local bootstrap: the bootstrap only
// reaches this job's processes, and the legacy IPC handle grants nothing by itself to a process outside
// the job, which would still have to obtain the 64 bytes.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

#if TSHMEM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tshmemi {

/// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd &&other) noexcept : fd_(other.release()) {}
  UniqueFd &operator=(UniqueFd &&other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

/// A descriptor received from a node-local peer, with the byte count the peer announced with it.
struct PeerFd {
  int pe = -1;
  UniqueFd fd;
  uint64_t bytes = 0;
};

/// Collective over ALL PEs (it agrees on the outcome after every step, so a failure anywhere fails it
/// everywhere and nobody waits for a peer that gave up). Each PE offers `own_fd` (with `own_bytes`, e.g.
/// the size of the allocation it describes) to its node-local peers; on success `received` holds one
/// entry per node-local peer other than this PE, ordered by PE. The own descriptor stays the caller's.
/// Each socket step waits at most `timeout_ms` (TSHMEM_INIT_TIMEOUT_MS) for a peer.
/// Socket directories in $TMPDIR or /tmp whose creator is gone (a job killed during its exchange, without a launcher
/// directory to hold them); removed when `remove`. For tshmem-info --stale / --remove-stale.
std::vector<std::string> stale_exchange_directories(bool remove);

Status exchange_fds_node_local(Bootstrap &boot, int own_fd, uint64_t own_bytes, int64_t timeout_ms,
                               std::vector<PeerFd> *received);

#if TSHMEM_HAVE_CUDA
/// Collective over ALL PEs (the allgather is node-local). `handles` receives one handle per node-local PE,
/// by local rank (the own one included).
Status exchange_ipc_handles_node_local(Bootstrap &boot, const cudaIpcMemHandle_t &own,
                                       std::vector<cudaIpcMemHandle_t> *handles);
#endif

}  // namespace tshmemi
