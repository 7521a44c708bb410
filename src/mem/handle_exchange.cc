// See handle_exchange.h for the protocol and why it is safe. The exchange runs single-threaded in four
// agreed steps: every PE listens; every PE connects to every node-local peer (an AF_UNIX connect completes
// as soon as it is queued in the listener's backlog, so nobody needs to accept yet); every PE accepts its
// peers and sends each its descriptor; every PE receives. No step waits on a PE that failed an earlier one.
#include "mem/handle_exchange.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <random>

#include "bootstrap/agree.h"

namespace tshmemi {
namespace {

constexpr uint64_t kHeaderMagic = 0x74736d656d66642eull;  // "tsmemfd."
constexpr int kStepTimeoutMs = 60 * 1000;                 // a safety net only: every peer is known to be ready by then

/// What travels with a descriptor.
struct FdHeader {
  uint64_t magic;
  uint64_t job_id;
  int32_t pe;
  int32_t reserved;
  uint64_t bytes;
};

struct SocketAddress {
  sockaddr_un addr;
  socklen_t length;
  std::string shown;  // for messages: "@tshmem.<job>.<pe>"
};

// An abstract-namespace address: sun_path starts with NUL and is not NUL-terminated.
SocketAddress abstract_address(uint64_t job_id, int pe) {
  SocketAddress out;
  std::memset(&out.addr, 0, sizeof(out.addr));
  out.addr.sun_family = AF_UNIX;
  const std::string name = format("tshmem.%016llx.%d", static_cast<unsigned long long>(job_id), pe);
  std::memcpy(out.addr.sun_path + 1, name.data(), name.size());
  out.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  out.shown = "@" + name;
  return out;
}

// The local rank whose pid is `pid`, or -1.
int local_rank_of_pid(const std::vector<int32_t> &pids, pid_t pid) {
  for (size_t i = 0; i < pids.size(); ++i)
    if (pids[i] == static_cast<int32_t>(pid)) return static_cast<int>(i);
  return -1;
}

Status peer_credentials(int fd, ucred *cred) {
  socklen_t length = sizeof(*cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &length) != 0 || length != sizeof(*cred))
    return set_error(TSHMEM_ERR_SYSTEM, "getsockopt(SO_PEERCRED): %s", std::strerror(errno));
  return TSHMEM_SUCCESS;
}

Status wait_readable(int fd, const char *what) {
  pollfd entry{fd, POLLIN, 0};
  for (;;) {
    const int rc = poll(&entry, 1, kStepTimeoutMs);
    if (rc > 0) return TSHMEM_SUCCESS;
    if (rc == 0)
      return set_error(TSHMEM_ERR_SYSTEM, "%s: nothing arrived within %d s on the node-local handle socket", what,
                       kStepTimeoutMs / 1000);
    if (errno != EINTR) return set_error(TSHMEM_ERR_SYSTEM, "%s: poll: %s", what, std::strerror(errno));
  }
}

Status listen_on(const SocketAddress &address, int backlog, UniqueFd *out) {
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return set_error(TSHMEM_ERR_SYSTEM, "socket(AF_UNIX, SOCK_STREAM): %s", std::strerror(errno));
  if (bind(fd.get(), reinterpret_cast<const sockaddr *>(&address.addr), address.length) != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "bind(%s): %s (another process holds this job's socket name?)",
                     address.shown.c_str(), std::strerror(errno));
  if (listen(fd.get(), backlog) != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "listen(%s, %d): %s", address.shown.c_str(), backlog, std::strerror(errno));
  *out = std::move(fd);
  return TSHMEM_SUCCESS;
}

// Connects to `pe`'s socket and checks that the listener is that PE's process, run by our user.
Status connect_to(const SocketAddress &address, int pe, int32_t expected_pid, UniqueFd *out) {
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return set_error(TSHMEM_ERR_SYSTEM, "socket(AF_UNIX, SOCK_STREAM): %s", std::strerror(errno));
  int rc;
  do {
    rc = connect(fd.get(), reinterpret_cast<const sockaddr *>(&address.addr), address.length);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "connect(%s) to PE %d: %s", address.shown.c_str(), pe, std::strerror(errno));
  ucred cred;
  TSHMEM_CHECK(peer_credentials(fd.get(), &cred));
  if (cred.uid != geteuid() || cred.pid != expected_pid)
    return set_error(TSHMEM_ERR_SYSTEM,
                     "the process listening on %s is pid %d uid %d, not PE %d (pid %d uid %d): refusing its descriptor",
                     address.shown.c_str(), static_cast<int>(cred.pid), static_cast<int>(cred.uid), pe,
                     static_cast<int>(expected_pid), static_cast<int>(geteuid()));
  *out = std::move(fd);
  return TSHMEM_SUCCESS;
}

Status send_fd(int socket_fd, const FdHeader &header, int fd_to_send, int peer_pe) {
  iovec iov{const_cast<FdHeader *>(&header), sizeof(header)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  std::memset(control, 0, sizeof(control));
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  cmsghdr *cmsg = CMSG_FIRSTHDR(&message);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd_to_send, sizeof(int));
  ssize_t sent;
  do {
    sent = sendmsg(socket_fd, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(sizeof(header)))
    return set_error(TSHMEM_ERR_SYSTEM, "sendmsg(SCM_RIGHTS) to PE %d: %s", peer_pe,
                     sent < 0 ? std::strerror(errno) : "short write");
  return TSHMEM_SUCCESS;
}

// Accepts connections until every node-local peer has been served once. A connection from anyone else
// (another user, another job, a second connection of a served peer) is closed without a descriptor.
Status serve(int listener, const std::vector<int32_t> &pids, int my_local_rank, const FdHeader &header, int own_fd,
             const std::vector<int> &local_pes) {
  std::vector<bool> served(pids.size(), false);
  served[static_cast<size_t>(my_local_rank)] = true;
  size_t remaining = pids.size() - 1;
  while (remaining > 0) {
    TSHMEM_CHECK(wait_readable(listener, "handing out the heap descriptor"));
    UniqueFd connection(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return set_error(TSHMEM_ERR_SYSTEM, "accept on the node-local handle socket: %s", std::strerror(errno));
    }
    ucred cred{};
    const bool known = peer_credentials(connection.get(), &cred) == TSHMEM_SUCCESS;
    const int rank = known ? local_rank_of_pid(pids, cred.pid) : -1;
    if (!known || cred.uid != geteuid() || rank < 0 || served[static_cast<size_t>(rank)]) {
      TSHMEMI_LOG(kWarn, kLogMem,
                  "handle socket: refused a connection from pid %d uid %d (not a PE of this job on this node)",
                  static_cast<int>(cred.pid), static_cast<int>(cred.uid));
      continue;
    }
    TSHMEM_CHECK(send_fd(connection.get(), header, own_fd, local_pes[static_cast<size_t>(rank)]));
    served[static_cast<size_t>(rank)] = true;
    --remaining;
  }
  return TSHMEM_SUCCESS;
}

Status receive_fd(int socket_fd, uint64_t job_id, int expected_pe, PeerFd *out) {
  FdHeader header;
  std::memset(&header, 0, sizeof(header));
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  size_t got = 0;
  UniqueFd fd;
  while (got < sizeof(header)) {
    TSHMEM_CHECK(wait_readable(socket_fd, "receiving a peer's heap descriptor"));
    iovec iov{reinterpret_cast<char *>(&header) + got, sizeof(header) - got};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(socket_fd, &message, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return set_error(TSHMEM_ERR_SYSTEM, "recvmsg from PE %d: %s", expected_pe,
                       n < 0 ? std::strerror(errno) : "connection closed before the descriptor arrived");
    if (message.msg_flags & MSG_CTRUNC)
      return set_error(TSHMEM_ERR_SYSTEM, "recvmsg from PE %d: control data truncated", expected_pe);
    for (cmsghdr *cmsg = CMSG_FIRSTHDR(&message); cmsg != nullptr; cmsg = CMSG_NXTHDR(&message, cmsg)) {
      if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
      int received = -1;
      std::memcpy(&received, CMSG_DATA(cmsg), sizeof(int));
      if (fd.valid()) {
        ::close(received);
        return set_error(TSHMEM_ERR_SYSTEM, "PE %d sent more than one descriptor", expected_pe);
      }
      fd.reset(received);
    }
    got += static_cast<size_t>(n);
  }
  if (header.magic != kHeaderMagic || header.job_id != job_id || header.pe != expected_pe)
    return set_error(TSHMEM_ERR_SYSTEM,
                     "the descriptor message from PE %d is malformed (magic %#llx, job %#llx, PE %d)", expected_pe,
                     static_cast<unsigned long long>(header.magic), static_cast<unsigned long long>(header.job_id),
                     header.pe);
  if (!fd.valid()) return set_error(TSHMEM_ERR_SYSTEM, "PE %d's message carried no descriptor", expected_pe);
  out->pe = expected_pe;
  out->fd = std::move(fd);
  out->bytes = header.bytes;
  return TSHMEM_SUCCESS;
}

}  // namespace

Status exchange_fds_node_local(Bootstrap &boot, int own_fd, uint64_t own_bytes, std::vector<PeerFd> *received) {
  received->clear();
  const std::vector<int> &local_pes = boot.local_pes();
  const int my_local = boot.local_rank();
  const bool has_peers = local_pes.size() > 1;

  // A job-unique socket name, and the pids that may ask for our descriptor.
  uint64_t job_id = 0;
  if (boot.rank() == 0)
    job_id = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}() ^
             (static_cast<uint64_t>(getpid()) << 16);
  TSHMEM_CHECK(boot.broadcast(&job_id, sizeof(job_id), 0));
  const int32_t my_pid = static_cast<int32_t>(getpid());
  std::vector<int32_t> pids(local_pes.size());
  TSHMEM_CHECK(boot.local_allgather(&my_pid, pids.data(), sizeof(my_pid)));

  UniqueFd listener;
  Status status = TSHMEM_SUCCESS;
  if (has_peers)
    status = listen_on(abstract_address(job_id, boot.rank()), static_cast<int>(local_pes.size()), &listener);
  TSHMEM_CHECK(agree_on_status(boot, status, "heap handle exchange: opening the node-local socket"));

  std::vector<UniqueFd> clients(local_pes.size());
  for (size_t lr = 0; lr < local_pes.size() && status == TSHMEM_SUCCESS; ++lr) {
    if (static_cast<int>(lr) == my_local) continue;
    status = connect_to(abstract_address(job_id, local_pes[lr]), local_pes[lr], pids[lr], &clients[lr]);
  }
  TSHMEM_CHECK(agree_on_status(boot, status, "heap handle exchange: connecting to the node-local peers"));

  FdHeader header{kHeaderMagic, job_id, boot.rank(), 0, own_bytes};
  if (has_peers) status = serve(listener.get(), pids, my_local, header, own_fd, local_pes);
  TSHMEM_CHECK(agree_on_status(boot, status, "heap handle exchange: handing out the heap descriptor"));
  listener.reset();  // the name disappears with the socket

  std::vector<PeerFd> got;
  for (size_t lr = 0; lr < local_pes.size() && status == TSHMEM_SUCCESS; ++lr) {
    if (static_cast<int>(lr) == my_local) continue;
    PeerFd peer;
    status = receive_fd(clients[lr].get(), job_id, local_pes[lr], &peer);
    if (status == TSHMEM_SUCCESS) got.push_back(std::move(peer));
  }
  TSHMEM_CHECK(agree_on_status(boot, status, "heap handle exchange: receiving the peers' heap descriptors"));
  *received = std::move(got);
  return TSHMEM_SUCCESS;
}

Status exchange_ipc_handles_node_local(Bootstrap &boot, const cudaIpcMemHandle_t &own,
                                       std::vector<cudaIpcMemHandle_t> *handles) {
  handles->assign(boot.local_pes().size(), cudaIpcMemHandle_t{});
  return boot.local_allgather(&own, handles->data(), sizeof(cudaIpcMemHandle_t));
}

}  // namespace tshmemi
