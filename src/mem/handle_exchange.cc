// See handle_exchange.h for the protocol and why it is safe. The exchange runs single-threaded in agreed
// steps: the node's first PE creates the private directory; every PE listens in it; every PE connects to
// every node-local peer (an AF_UNIX connect completes as soon as it is queued in the listener's backlog, so
// nobody needs to accept yet) and then removes its own socket name; every PE accepts its peers and sends
// each its descriptor; every PE receives. No step waits on a PE that failed an earlier one, and none waits
// longer than the timeout on a peer.
#include "mem/handle_exchange.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "bootstrap/agree.h"
#include "init_steps.h"

namespace tshmemi {
namespace {

constexpr uint64_t kHeaderMagic = 0x74736d656d66642eull;  // "tsmemfd."
constexpr size_t kDirBytes = 96;  // the directory path, sent as a fixed-size buffer; leaves room for "/<local rank>"

/// What travels with a descriptor.
struct FdHeader {
  uint64_t magic;
  uint64_t job_id;
  int32_t pe;
  int32_t reserved;
  uint64_t bytes;
};

/// The end of a step: every wait inside it gives up at the same moment.
class Deadline {
 public:
  explicit Deadline(int64_t timeout_ms)
      : timeout_ms_(timeout_ms), end_(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)) {}
  /// Milliseconds left, at least 0.
  int remaining_ms() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - std::chrono::steady_clock::now());
    return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
  }
  bool passed() const { return std::chrono::steady_clock::now() >= end_; }
  int64_t timeout_ms() const { return timeout_ms_; }

 private:
  int64_t timeout_ms_;
  std::chrono::steady_clock::time_point end_;
};

std::string socket_path(const std::string &dir, int local_rank) { return dir + "/" + std::to_string(local_rank); }

Status make_address(const std::string &path, sockaddr_un *addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path))
    return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: socket path %s is longer than %zu bytes", path.c_str(),
                     sizeof(addr->sun_path) - 1);
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return TSHMEM_SUCCESS;
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

// Waits until `fd` has `events`, at most until `deadline`; `what` names the step and the peer.
Status wait_for(int fd, short events, const Deadline &deadline, const std::string &what) {
  pollfd entry{fd, events, 0};
  for (;;) {
    const int rc = poll(&entry, 1, deadline.remaining_ms());
    if (rc > 0) return TSHMEM_SUCCESS;
    if (rc == 0)
      return set_error(TSHMEM_ERR_SYSTEM, "%s: nothing within %lld ms (TSHMEM_INIT_TIMEOUT_MS)", what.c_str(),
                       static_cast<long long>(deadline.timeout_ms()));
    if (errno != EINTR) return set_error(TSHMEM_ERR_SYSTEM, "%s: poll: %s", what.c_str(), std::strerror(errno));
  }
}

// Whether `base` can hold the socket directory: an absolute path short enough for every socket path under it.
bool fits(const char *base) {
  return base != nullptr && base[0] == '/' && std::strlen(base) + sizeof("/tshmem-4294967295-XXXXXX") < kDirBytes;
}

// $TMPDIR when it fits, else /tmp: where directories of jobs that ended by a kill may be left (the reaper's place).
std::string temporary_base() {
  const char *tmpdir = std::getenv("TMPDIR");
  return fits(tmpdir) ? tmpdir : "/tmp";
}

// The launcher's own directory of this job when it has one that fits and is ours (PMIx launchers: PMIX_SERVER_TMPDIR;
// Open MPI: its job-family session directory): the launcher removes it when the job ends, however its processes
// ended, so a PE killed during the exchange leaves nothing behind. Else temporary_base().
std::string directory_base() {
  for (const char *variable : {"PMIX_SERVER_TMPDIR", "OMPI_MCA_orte_jobfam_session_dir"}) {
    const char *dir = std::getenv(variable);
    struct stat info;
    if (fits(dir) && lstat(dir, &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == geteuid()) return dir;
  }
  return temporary_base();
}

// A job killed during the exchange whose directory the launcher does not remove (no launcher directory) leaves it
// (and the socket names in it): nothing runs in a SIGKILLed process. The directory's name carries its creator's pid,
// so the next exchange on the node, or tshmem-info --remove-stale, removes every such directory of our uid whose
// creator is gone (a pid still in use, even by another program, keeps its directory: never a live job's).
void visit_stale_directories(const std::string &base, bool remove, std::vector<std::string> *found) {
  DIR *dir = opendir(base.c_str());
  if (dir == nullptr) return;
  while (const dirent *entry = readdir(dir)) {
    const char *name = entry->d_name;
    if (std::strncmp(name, "tshmem-", 7) != 0) continue;
    char *end = nullptr;
    const long pid = std::strtol(name + 7, &end, 10);
    if (end == name + 7 || *end != '-' || std::strlen(end + 1) != 6 || pid <= 0) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    const std::string path = base + "/" + name;
    struct stat info;
    if (lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != geteuid() ||
        (info.st_mode & 077) != 0)
      continue;
    if (found != nullptr) found->push_back(path);
    if (!remove) continue;
    if (DIR *inner = opendir(path.c_str())) {
      while (const dirent *socket = readdir(inner)) {
        const char *s = socket->d_name;
        if (*s != '\0' && std::strspn(s, "0123456789") == std::strlen(s)) unlink((path + "/" + s).c_str());
      }
      closedir(inner);
    }
    if (rmdir(path.c_str()) == 0)
      TSHMEMI_LOG(kInfo, kLogMem, "handle exchange: removed %s (its job is gone)", path.c_str());
  }
  closedir(dir);
}

// The node's first PE: a fresh directory only our uid can enter (mkdtemp: mode 0700, random name, O_EXCL
// semantics, so a name someone else holds is skipped, never reused), named after this process.
Status create_directory(char (&path)[kDirBytes]) {
  visit_stale_directories(temporary_base(), true, nullptr);
  const std::string pattern = directory_base() + "/tshmem-" + std::to_string(getpid()) + "-XXXXXX";
  std::memset(path, 0, sizeof(path));
  std::memcpy(path, pattern.c_str(), pattern.size());
  if (mkdtemp(path) == nullptr) {
    const int saved = errno;
    std::memset(path, 0, sizeof(path));
    return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: mkdtemp(%s): %s", pattern.c_str(), std::strerror(saved));
  }
  return TSHMEM_SUCCESS;
}

// Every other PE: the directory is a real directory of our uid that nobody else may enter.
Status check_directory(const std::string &path, int creator_pe) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: PE %d's socket directory %s: %s", creator_pe, path.c_str(),
                     std::strerror(errno));
  if (!S_ISDIR(info.st_mode) || info.st_uid != geteuid() || (info.st_mode & 077) != 0)
    return set_error(TSHMEM_ERR_SYSTEM,
                     "handle exchange: PE %d's socket directory %s is not a private directory of uid %d (uid %d, mode "
                     "%o)",
                     creator_pe, path.c_str(), static_cast<int>(geteuid()), static_cast<int>(info.st_uid),
                     static_cast<unsigned>(info.st_mode & 07777));
  return TSHMEM_SUCCESS;
}

Status listen_on(const std::string &path, UniqueFd *out) {
  sockaddr_un addr;
  TSHMEM_CHECK(make_address(path, &addr));
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return set_error(TSHMEM_ERR_SYSTEM, "socket(AF_UNIX, SOCK_STREAM): %s", std::strerror(errno));
  if (bind(fd.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)) != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: bind(%s): %s", path.c_str(), std::strerror(errno));
  *out = std::move(fd);  // bound: the caller now owns the name and removes it
  if (listen(out->get(), SOMAXCONN) != 0)
    return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: listen(%s): %s", path.c_str(), std::strerror(errno));
  return TSHMEM_SUCCESS;
}

// Connects to `pe`'s socket and checks that the listener is that PE's process, run by our user. A full
// listen queue is retried until the deadline.
Status connect_to(const std::string &path, int pe, int32_t expected_pid, const Deadline &deadline, UniqueFd *out) {
  sockaddr_un addr;
  TSHMEM_CHECK(make_address(path, &addr));
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return set_error(TSHMEM_ERR_SYSTEM, "socket(AF_UNIX, SOCK_STREAM): %s", std::strerror(errno));
  for (;;) {
    if (connect(fd.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)) == 0) break;
    if (errno == EINTR) continue;
    if (errno != EAGAIN)
      return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: connecting to PE %d (%s): %s", pe, path.c_str(),
                       std::strerror(errno));
    if (deadline.passed())
      return set_error(TSHMEM_ERR_SYSTEM,
                       "handle exchange: connecting to PE %d (%s): its listen queue stayed full for %lld ms "
                       "(TSHMEM_INIT_TIMEOUT_MS)",
                       pe, path.c_str(), static_cast<long long>(deadline.timeout_ms()));
    poll(nullptr, 0, 1);  // the queue drains as the listener accepts
  }
  ucred cred;
  TSHMEM_CHECK(peer_credentials(fd.get(), &cred));
  if (cred.uid != geteuid() || cred.pid != expected_pid)
    return set_error(TSHMEM_ERR_SYSTEM,
                     "handle exchange: the process listening on %s is pid %d uid %d, not PE %d (pid %d uid %d): "
                     "refusing its descriptor",
                     path.c_str(), static_cast<int>(cred.pid), static_cast<int>(cred.uid), pe,
                     static_cast<int>(expected_pid), static_cast<int>(geteuid()));
  *out = std::move(fd);
  return TSHMEM_SUCCESS;
}

Status send_fd(int socket_fd, const FdHeader &header, int fd_to_send, int peer_pe, const Deadline &deadline) {
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
  for (;;) {
    const ssize_t sent = sendmsg(socket_fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent == static_cast<ssize_t>(sizeof(header))) return TSHMEM_SUCCESS;
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && errno == EAGAIN) {
      TSHMEM_CHECK(wait_for(socket_fd, POLLOUT, deadline, format("handle exchange: sending to PE %d", peer_pe)));
      continue;
    }
    return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: sendmsg(SCM_RIGHTS) to PE %d: %s", peer_pe,
                     sent < 0 ? std::strerror(errno) : "short write");
  }
}

// The PEs of `pes` whose entry in `done` is false, as "1, 3".
std::string pending_pes(const std::vector<bool> &done, const std::vector<int> &pes) {
  std::string list;
  for (size_t i = 0; i < done.size(); ++i)
    if (!done[i]) list += (list.empty() ? "" : ", ") + std::to_string(pes[i]);
  return list;
}

// Accepts connections until every node-local peer has been served once. A connection from anyone else
// (another job of our user, a second connection of a served peer) is closed without a descriptor.
Status serve(int listener, const std::vector<int32_t> &pids, int my_local_rank, const FdHeader &header, int own_fd,
             const std::vector<int> &local_pes, const Deadline &deadline) {
  std::vector<bool> served(pids.size(), false);
  served[static_cast<size_t>(my_local_rank)] = true;
  size_t remaining = pids.size() - 1;
  while (remaining > 0) {
    UniqueFd connection(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!connection.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN) return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: accept: %s", std::strerror(errno));
      TSHMEM_CHECK(wait_for(
          listener, POLLIN, deadline,
          "handle exchange: waiting for PE(s) " + pending_pes(served, local_pes) + " to collect this PE's descriptor"));
      continue;
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
    TSHMEM_CHECK(send_fd(connection.get(), header, own_fd, local_pes[static_cast<size_t>(rank)], deadline));
    served[static_cast<size_t>(rank)] = true;
    --remaining;
  }
  return TSHMEM_SUCCESS;
}

Status receive_fd(int socket_fd, uint64_t job_id, int expected_pe, const Deadline &deadline, PeerFd *out) {
  FdHeader header;
  std::memset(&header, 0, sizeof(header));
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  size_t got = 0;
  UniqueFd fd;
  while (got < sizeof(header)) {
    iovec iov{reinterpret_cast<char *>(&header) + got, sizeof(header) - got};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(socket_fd, &message, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      TSHMEM_CHECK(
          wait_for(socket_fd, POLLIN, deadline, format("handle exchange: receiving PE %d's descriptor", expected_pe)));
      continue;
    }
    if (n <= 0)
      return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: recvmsg from PE %d: %s", expected_pe,
                       n < 0 ? std::strerror(errno) : "connection closed before the descriptor arrived");
    if (message.msg_flags & MSG_CTRUNC)
      return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: recvmsg from PE %d: control data truncated", expected_pe);
    for (cmsghdr *cmsg = CMSG_FIRSTHDR(&message); cmsg != nullptr; cmsg = CMSG_NXTHDR(&message, cmsg)) {
      if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
      int received = -1;
      std::memcpy(&received, CMSG_DATA(cmsg), sizeof(int));
      if (fd.valid()) {
        ::close(received);
        return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: PE %d sent more than one descriptor", expected_pe);
      }
      fd.reset(received);
    }
    got += static_cast<size_t>(n);
  }
  if (header.magic != kHeaderMagic || header.job_id != job_id || header.pe != expected_pe)
    return set_error(TSHMEM_ERR_SYSTEM,
                     "handle exchange: the descriptor message from PE %d is malformed (magic %#llx, job %#llx, PE %d)",
                     expected_pe, static_cast<unsigned long long>(header.magic),
                     static_cast<unsigned long long>(header.job_id), header.pe);
  if (!fd.valid())
    return set_error(TSHMEM_ERR_SYSTEM, "handle exchange: PE %d's message carried no descriptor", expected_pe);
  out->pe = expected_pe;
  out->fd = std::move(fd);
  out->bytes = header.bytes;
  return TSHMEM_SUCCESS;
}

/// The names this PE created, removed by it alone: its socket, and (on the node's first PE) the directory.
struct OwnNames {
  std::string socket;               ///< non-empty from bind until unlinked
  std::string directory;            ///< non-empty on the creator while the directory exists
  bool node_has_directory = false;  ///< every PE of the node knows the directory (the same on all of them)

  void remove_socket() {
    if (!socket.empty()) unlink(socket.c_str());
    socket.clear();
  }
  void remove_directory() {
    if (!directory.empty() && rmdir(directory.c_str()) != 0)
      TSHMEMI_LOG(kWarn, kLogMem, "handle exchange: rmdir(%s): %s", directory.c_str(), std::strerror(errno));
    directory.clear();
  }
};

Status exchange_steps(Bootstrap &boot, int own_fd, uint64_t own_bytes, int64_t timeout_ms, OwnNames *names,
                      std::vector<PeerFd> *received) {
  const std::vector<int> &local_pes = boot.local_pes();
  const int my_local = boot.local_rank();
  const bool has_peers = local_pes.size() > 1;

  // A job id (checked in every message), and the pids that may ask for our descriptor.
  uint64_t job_id = 0;
  if (boot.rank() == 0)
    job_id = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}() ^
             (static_cast<uint64_t>(getpid()) << 16);
  TSHMEM_CHECK(boot.broadcast(&job_id, sizeof(job_id), 0));
  const int32_t my_pid = static_cast<int32_t>(getpid());
  std::vector<int32_t> pids(local_pes.size());
  TSHMEM_CHECK(boot.local_allgather(&my_pid, pids.data(), sizeof(my_pid)));

  // 1. The node's first PE creates the private directory; every PE of the node learns its path.
  char created[kDirBytes] = {};
  Status status = TSHMEM_SUCCESS;
  if (has_peers && my_local == 0) {
    status = create_directory(created);
    if (status == TSHMEM_SUCCESS) names->directory = created;
  }
  TSHMEM_CHECK(agree_on_status(boot, status, "handle exchange: creating the node's private socket directory"));
  std::vector<char> paths(local_pes.size() * kDirBytes);
  TSHMEM_CHECK(boot.local_allgather(created, paths.data(), kDirBytes));
  const std::string directory(paths.data(), strnlen(paths.data(), kDirBytes));
  names->node_has_directory = has_peers;

  // 2. Every PE listens.
  UniqueFd listener;
  if (has_peers && my_local != 0) status = check_directory(directory, local_pes[0]);
  if (has_peers && status == TSHMEM_SUCCESS) {
    const std::string path = socket_path(directory, my_local);
    status = listen_on(path, &listener);
    if (listener.valid()) names->socket = path;
  }
  TSHMEM_CHECK(agree_on_status(boot, status, "handle exchange: opening the node-local socket"));
  pause_if_armed(boot, InitStep::kHeapExchange);  // the kill tests' moment: the directory and sockets exist

  // 3. Every PE connects to every peer; once all are queued, nobody needs a name any more.
  std::vector<UniqueFd> clients(local_pes.size());
  {
    const Deadline deadline(timeout_ms);
    for (size_t lr = 0; lr < local_pes.size() && status == TSHMEM_SUCCESS; ++lr) {
      if (static_cast<int>(lr) == my_local) continue;
      status =
          connect_to(socket_path(directory, static_cast<int>(lr)), local_pes[lr], pids[lr], deadline, &clients[lr]);
    }
  }
  TSHMEM_CHECK(agree_on_status(boot, status, "handle exchange: connecting to the node-local peers"));
  names->remove_socket();

  // 4. Every PE hands its descriptor to each peer.
  FdHeader header{kHeaderMagic, job_id, boot.rank(), 0, own_bytes};
  if (has_peers) status = serve(listener.get(), pids, my_local, header, own_fd, local_pes, Deadline(timeout_ms));
  TSHMEM_CHECK(agree_on_status(boot, status, "handle exchange: handing out the descriptors"));
  listener.reset();
  names->remove_directory();  // every PE removed its socket before the agreement above: the directory is empty

  // 5. Every PE receives.
  std::vector<PeerFd> got;
  {
    const Deadline deadline(timeout_ms);
    for (size_t lr = 0; lr < local_pes.size() && status == TSHMEM_SUCCESS; ++lr) {
      if (static_cast<int>(lr) == my_local) continue;
      PeerFd peer;
      status = receive_fd(clients[lr].get(), job_id, local_pes[lr], deadline, &peer);
      if (status == TSHMEM_SUCCESS) got.push_back(std::move(peer));
    }
  }
  TSHMEM_CHECK(agree_on_status(boot, status, "handle exchange: receiving the peers' descriptors"));
  *received = std::move(got);
  return TSHMEM_SUCCESS;
}

}  // namespace

std::vector<std::string> stale_exchange_directories(bool remove) {
  std::vector<std::string> found;
  visit_stale_directories(temporary_base(), remove, &found);
  if (temporary_base() != "/tmp") visit_stale_directories("/tmp", remove, &found);
  return found;
}

Status exchange_fds_node_local(Bootstrap &boot, int own_fd, uint64_t own_bytes, int64_t timeout_ms,
                               std::vector<PeerFd> *received) {
  received->clear();
  OwnNames names;
  const Status status = exchange_steps(boot, own_fd, own_bytes, timeout_ms, &names, received);
  if (status != TSHMEM_SUCCESS) {
    // A failed step, agreed on every PE: each removes its own socket name, then (once every PE of the node
    // has) the creator removes the directory. Nobody removes a name it did not create.
    const std::string message = last_error_message();
    names.remove_socket();
    if (names.node_has_directory) boot.local_barrier();
    names.remove_directory();
    set_error_message(status, message);
  }
  return status;
}

#if TSHMEM_HAVE_CUDA
Status exchange_ipc_handles_node_local(Bootstrap &boot, const cudaIpcMemHandle_t &own,
                                       std::vector<cudaIpcMemHandle_t> *handles) {
  handles->assign(boot.local_pes().size(), cudaIpcMemHandle_t{});
  return boot.local_allgather(&own, handles->data(), sizeof(cudaIpcMemHandle_t));
}
#endif

}  // namespace tshmemi
