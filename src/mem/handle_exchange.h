// Every crossing of a memory handle between processes, in one file.
//
// POSIX file descriptors (vmm backend) cross over a node-local Unix stream socket with SCM_RIGHTS:
//   - the socket lives in the abstract namespace under a name unique to the job ("tshmem.<job id>.<pe>",
//     the job id a random number PE 0 broadcasts), so nothing is ever created in the file system and a
//     killed job leaves nothing behind;
//   - a PE hands its descriptor only to a connecting process whose SO_PEERCRED shows our uid AND the
//     pid of one of this node's PEs (pids all-gathered over the node-local bootstrap first): an abstract
//     socket has no permission bits, so the credential check is what keeps another user (or another job
//     of ours) from obtaining a descriptor of our GPU memory;
//   - a client checks the server's credentials the same way before trusting what it receives.
// Limitation: all PEs of a node must share one network namespace (abstract sockets are per namespace)
// and one pid namespace (SO_PEERCRED pids are translated to the reader's namespace).
//
// CUDA IPC handles (ipc backend) are all-gathered over the node-local bootstrap: the bootstrap only
// reaches this job's processes, and the legacy IPC handle grants nothing by itself to a process outside
// the job, which would still have to obtain the 64 bytes.
#pragma once

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "bootstrap/bootstrap.h"

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
Status exchange_fds_node_local(Bootstrap &boot, int own_fd, uint64_t own_bytes, std::vector<PeerFd> *received);

/// Collective over ALL PEs (the allgather is node-local). `handles` receives one handle per node-local PE,
/// by local rank (the own one included).
Status exchange_ipc_handles_node_local(Bootstrap &boot, const cudaIpcMemHandle_t &own,
                                       std::vector<cudaIpcMemHandle_t> *handles);

}  // namespace tshmemi
