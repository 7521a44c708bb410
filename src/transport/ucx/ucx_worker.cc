// The UCX context, worker, endpoints and remote keys (ucx_worker.h).
#include "transport/ucx/ucx_worker.h"

#include <dlfcn.h>
#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "bootstrap/agree.h"

namespace tshmemi {
namespace ucx {

std::string loaded_version() { return ucp_get_version_string(); }

std::string loaded_library() {
  Dl_info info = {};
  if (dladdr(reinterpret_cast<void *>(&ucp_get_version_string), &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

namespace {

// UCX's report that an endpoint failed (its peer died, or closed its side by force): every request on it fails with
// the status, which is what the waits report. Installed so that UCX does not log the failure as unhandled.
void endpoint_failed(void *, ucp_ep_h, ucs_status_t) {}

// Whether UCX_TLS leaves UCX its shared-memory transports (posix, sysv): unset, an exclusion list ("^..."), or a list
// naming them, "sm", "shm", "mm" or "all". A setting of theirs given to a UCX that loads neither is warned of.
bool shared_memory_transports() {
  const char *tls = std::getenv("UCX_TLS");
  if (tls == nullptr || tls[0] == '^') return true;
  std::string list = tls;
  for (size_t at = 0; at <= list.size();) {
    const size_t end = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, end - at);
    for (const char *memory : {"sm", "shm", "mm", "posix", "sysv", "all"})
      if (name == memory) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

Status ucx_error(const char *call, ucs_status_t status) {
  return set_error(TSHMEM_ERR_SYSTEM, "ucx: %s failed: %s", call, ucs_status_string(status));
}

Worker::~Worker() {
  // After a stopped path, endpoints without error handling (the staged mode's) stay open, and so do the worker and
  // context: UCX closes such an endpoint only by flushing it, which a stopped peer never completes, and destroying
  // the worker then purges what is pending on it, which aborts the process where a connection's setup to that peer
  // was under way (UCX 1.13 over tcp: an assertion in uct_tcp_ep_pending_purge, offnode_bound_test). The process
  // keeps them until it exits; finalize has said that it tore down without the peers.
  if (abandoned_ && !cancellable_) return;
  // Endpoints close without waiting for peers (ucp_ep_close_nbx, force: a peer may be gone or stopped). Every close
  // is posted first; their requests then get one second in all, however many peers there are; then the rest, which
  // waits for no peer.
  for (ucp_rkey_h &rkey : rkeys_)
    if (rkey != nullptr) ucp_rkey_destroy(rkey);
  std::vector<ucs_status_ptr_t> closing;
  for (ucp_ep_h &ep : eps_) {
    if (ep == nullptr) continue;
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(request)) closing.push_back(request);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  const auto in_progress = [&closing] {
    return std::any_of(closing.begin(), closing.end(),
                       [](ucs_status_ptr_t r) { return ucp_request_check_status(r) == UCS_INPROGRESS; });
  };
  while (in_progress() && std::chrono::steady_clock::now() < until) ucp_worker_progress(worker_);
  for (ucs_status_ptr_t request : closing) ucp_request_free(request);
  if (memh_ != nullptr) ucp_mem_unmap(context_, memh_);
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

Status Worker::create(Bootstrap &boot, const std::vector<int> &node_of_pe, bool wakeup, bool cancellable,
                      std::string *unavailable) {
  // Every step's verdict is agreed before the next collective one (start), so a PE whose UCX fails does not leave
  // the others waiting in an exchange, and every PE reaches the same verdict.
  if (start(boot, node_of_pe, wakeup, cancellable) != TSHMEM_SUCCESS) *unavailable = last_error_message();
  return TSHMEM_SUCCESS;
}

Status Worker::exchange(Bootstrap &boot, const void *mine, size_t bytes, std::vector<char> *all, size_t *stride) {
  const int64_t size = static_cast<int64_t>(bytes);
  int64_t largest = 0;
  TSHMEM_CHECK(boot.allreduce(&size, &largest, 1, ReduceOp::kMax));
  *stride = sizeof(uint64_t) + static_cast<size_t>(largest);
  std::vector<char> padded(*stride, 0);
  const uint64_t length = bytes;
  std::memcpy(padded.data(), &length, sizeof(length));
  if (bytes > 0) std::memcpy(padded.data() + sizeof(length), mine, bytes);
  all->assign(*stride * static_cast<size_t>(n_pes_), 0);
  return boot.allgather(padded.data(), all->data(), *stride);
}

// Collective steps are run on every PE whatever happened locally before them (a local failure is carried to the
// end and agreed there), so no PE waits in an exchange another has left.
Status Worker::start(Bootstrap &boot, const std::vector<int> &node_of_pe, bool wakeup, bool cancellable) {
  Status local = TSHMEM_SUCCESS;
  cancellable_ = cancellable;
  ucp_config_t *config = nullptr;
  my_pe_ = boot.rank();
  n_pes_ = boot.size();
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) local = ucx_error("ucp_config_read", s);
  // Over tcp UCX carries what it does not send by its zero-copy rendezvous in messages of at most the segment sizes
  // (UCX_TCP_TX_SEG_SIZE 8 KiB and UCX_TCP_RX_SEG_SIZE 64 KiB in UCX 1.13), each copied at both ends and handled by
  // the target's progress: a put or get (no RMA lane over tcp), and, on endpoints with error handling (`cancellable`:
  // the direct mode), the rendezvous data of the large host puts too. There 512 KiB segments take a 1 MiB transfer in
  // 2 messages instead of 16: 1.3-1.8x the MPI transport's bandwidth at 1-4 MiB, where 64 KiB ones gave 0.55-0.75x of
  // it (docs/results.md), for 8 segments each way per process once used (UCX_TCP_{TX,RX}_BUFS_GROW), 8 MiB. The staged
  // mode's endpoints (no error handling) keep tcp's zero-copy rendezvous for its chunks and 64 KiB sends (their
  // bandwidth on a 1 x H200 host: docs/results.md). A user who sets either size keeps UCX's other one. UCX applies a
  // transport's setting given to ucp_config_modify by its name without the transport's prefix ({TX,RX}_SEG_SIZE: tcp's
  // only; "TCP_TX_SEG_SIZE" is accepted and ignored), checked with ucp_ep_print_info.
  if (local == TSHMEM_SUCCESS && std::getenv("UCX_TCP_TX_SEG_SIZE") == nullptr &&
      std::getenv("UCX_TCP_RX_SEG_SIZE") == nullptr) {
    (void)ucp_config_modify(config, "TX_SEG_SIZE", cancellable ? "512K" : "64K");
    if (cancellable) (void)ucp_config_modify(config, "RX_SEG_SIZE", "512K");
  }
  // The endpoints handle errors (UCP_ERR_HANDLING_MODE_PEER: ucx_worker.h, cancelling), and UCX gives such an
  // endpoint only transports that say they do. Its shared-memory transports (posix, sysv) say so only when asked
  // (UCX_{POSIX,SYSV}_ERROR_HANDLING, "n" by default); without them UCX would reach a PE of this host over tcp.
  // They detect a peer's death by its shared-memory file, which ERROR_HANDLING=y exposes; UCX 1.13 matches the name
  // with the prefix of the table they share ("MM_"), for both (a name it matches nowhere, it warns of at start).
  if (local == TSHMEM_SUCCESS && cancellable && shared_memory_transports() &&
      std::getenv("UCX_POSIX_ERROR_HANDLING") == nullptr && std::getenv("UCX_SYSV_ERROR_HANDLING") == nullptr)
    (void)ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
  if (local == TSHMEM_SUCCESS) {
    ucp_params_t params = {};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    // WAKEUP: an idle proxy thread sleeps on the worker's event descriptor, so a peer's operation that needs this
    // PE's progress (an emulated put over shared memory or tcp) wakes it at once rather than after its pause.
    // AM: the direct mode's large host puts by rendezvous (ucx_bulk_puts.h).
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_TAG | UCP_FEATURE_AM;
    if (wakeup) params.features |= UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 1;
    s = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (s != UCS_OK) local = ucx_error("ucp_init", s);
  }
  if (local == TSHMEM_SUCCESS) {
    ucp_context_attr_t attr = {};
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(context_, &attr) == UCS_OK)
      cuda_memory_ = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    ucp_worker_params_t wp = {};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_MULTI;
    s = ucp_worker_create(context_, &wp, &worker_);
    if (s != UCS_OK) local = ucx_error("ucp_worker_create", s);
  }
  if (local == TSHMEM_SUCCESS) {
    ucp_worker_attr_t attr = {};
    attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    s = ucp_worker_query(worker_, &attr);
    if (s != UCS_OK)
      local = ucx_error("ucp_worker_query", s);
    else if (attr.thread_mode != UCS_THREAD_MODE_MULTI)
      local = set_error(TSHMEM_ERR_CONFIG,
                        "ucx: the worker does not serve several threads (UCS_THREAD_MODE_MULTI refused; a UCX built "
                        "without thread support?): host calls and the proxy thread share it");
  }
  if (local == TSHMEM_SUCCESS && wakeup && ucp_worker_get_efd(worker_, &efd_) != UCS_OK) efd_ = -1;  // it sleeps
  TSHMEM_CHECK(agree_on_status(boot, local, "ucx: starting the context"));
  return endpoints(boot, node_of_pe);
}

Status Worker::map_heap(Bootstrap &boot, void *heap, uint64_t heap_bytes, bool gpu, std::string *unavailable) {
  if (map(boot, heap, heap_bytes, gpu) != TSHMEM_SUCCESS) *unavailable = last_error_message();
  return TSHMEM_SUCCESS;
}

Status Worker::map(Bootstrap &boot, void *heap, uint64_t heap_bytes, bool gpu) {
  Status local = TSHMEM_SUCCESS;
  ucs_status_t s = UCS_OK;
  {
    ucp_mem_map_params_t mp = {};
    mp.field_mask =
        UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.address = heap;
    mp.length = heap_bytes;
    mp.memory_type = gpu ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    s = ucp_mem_map(context_, &mp, &memh_);
    if (s != UCS_OK) local = ucx_error("ucp_mem_map of the heap", s);
  }
  TSHMEM_CHECK(agree_on_status(boot, local, "ucx: registering the heap"));
  // Every PE's heap base and remote key.
  void *packed = nullptr;
  size_t packed_bytes = 0;
  s = ucp_rkey_pack(context_, memh_, &packed, &packed_bytes);
  if (s != UCS_OK) local = ucx_error("ucp_rkey_pack", s);
  std::vector<char> keys;
  size_t stride = 0;
  const Status keyed = exchange(boot, packed, local == TSHMEM_SUCCESS ? packed_bytes : 0, &keys, &stride);
  if (packed != nullptr) ucp_rkey_buffer_release(packed);
  TSHMEM_CHECK(keyed);
  const uint64_t base = reinterpret_cast<uint64_t>(heap);
  bases_.assign(static_cast<size_t>(n_pes_), 0);
  TSHMEM_CHECK(boot.allgather(&base, bases_.data(), sizeof(base)));
  rkeys_.assign(static_cast<size_t>(n_pes_), nullptr);
  for (int pe = 0; pe < n_pes_ && local == TSHMEM_SUCCESS; ++pe) {
    ucp_ep_h ep = eps_[static_cast<size_t>(pe)];
    if (ep == nullptr) continue;
    s = ucp_ep_rkey_unpack(ep, keys.data() + static_cast<size_t>(pe) * stride + sizeof(uint64_t),
                           &rkeys_[static_cast<size_t>(pe)]);
    if (s != UCS_OK)
      local = set_error(TSHMEM_ERR_SYSTEM, "ucx: ucp_ep_rkey_unpack of PE %d's heap key failed: %s", pe,
                        ucs_status_string(s));
  }
  return agree_on_status(boot, local, "ucx: the heap's remote keys");
}

// Worker addresses, then an endpoint to every PE: the proxy serves a request to any PE (its own and its node's too:
// tests drive the off-node path that way), and UCX picks the transport (self, shared memory, the network).
Status Worker::endpoints(Bootstrap &boot, const std::vector<int> &node_of_pe) {
  Status local = TSHMEM_SUCCESS;
  ucp_address_t *address = nullptr;
  size_t address_bytes = 0;
  ucs_status_t s = ucp_worker_get_address(worker_, &address, &address_bytes);
  if (s != UCS_OK) local = ucx_error("ucp_worker_get_address", s);
  std::vector<char> addresses;
  size_t stride = 0;
  const Status exchanged = exchange(boot, address, local == TSHMEM_SUCCESS ? address_bytes : 0, &addresses, &stride);
  if (address != nullptr) ucp_worker_release_address(worker_, address);
  TSHMEM_CHECK(exchanged);
  eps_.assign(static_cast<size_t>(n_pes_), nullptr);
  cancelled_.assign(static_cast<size_t>(n_pes_), std::string());
  for (int pe = 0; pe < n_pes_ && local == TSHMEM_SUCCESS; ++pe) {
    ucp_ep_params_t ep = {};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    if (cancellable_) {  // so that cancel() may close it by force
      ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      ep.err_handler.cb = &endpoint_failed;
      ep.err_handler.arg = nullptr;
    }
    ep.address =
        reinterpret_cast<const ucp_address_t *>(addresses.data() + static_cast<size_t>(pe) * stride + sizeof(uint64_t));
    s = ucp_ep_create(worker_, &ep, &eps_[static_cast<size_t>(pe)]);
    if (s != UCS_OK)
      local = set_error(TSHMEM_ERR_SYSTEM, "ucx: ucp_ep_create to PE %d failed: %s", pe, ucs_status_string(s));
  }
  (void)node_of_pe;
  return agree_on_status(boot, local, "ucx: endpoints");
}

void Worker::cancel(int pe, const std::string &why) {
  const size_t p = static_cast<size_t>(pe);
  if (on_cancel_ && cancelled(pe).empty()) on_cancel_(pe);  // it issues on the endpoint: before the lock below
  std::unique_lock<std::shared_mutex> closing(endpoints_mutex_);
  if (eps_[p] == nullptr || !cancelled_[p].empty()) return;
  cancelled_[p] = why;
  if (!cancellable_) return;  // UCX closes no endpoint without error handling by force: it stays for the teardown
  if (p < rkeys_.size() && rkeys_[p] != nullptr) ucp_rkey_destroy(rkeys_[p]);  // unpacked on the endpoint
  if (p < rkeys_.size()) rkeys_[p] = nullptr;
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  // A forced close completes at once (its request, if any, is released: nothing waits on it); the requests on the
  // endpoint are completed with UCS_ERR_CANCELED once its transports are discarded, which may take progress.
  const ucs_status_ptr_t closed = ucp_ep_close_nbx(eps_[p], &param);
  if (UCS_PTR_IS_PTR(closed)) ucp_request_free(closed);
  eps_[p] = nullptr;
}

bool Worker::wait_cancelled(ucs_status_ptr_t request) {
  if (!cancellable_) return false;
  return progress_until(std::chrono::steady_clock::now(), std::chrono::seconds(1),
                        [&] { return ucp_request_check_status(request) != UCS_INPROGRESS; });
}

std::string Worker::cancelled(int pe) const {
  std::shared_lock<std::shared_mutex> held(endpoints_mutex_);
  return cancelled_[static_cast<size_t>(pe)];
}

Status Worker::wait(ucs_status_ptr_t request, std::chrono::milliseconds bound, const char *call, const char *what,
                    int pe, ucs_status_t *outcome) {
  if (outcome != nullptr) *outcome = UCS_OK;
  if (request == nullptr) return TSHMEM_SUCCESS;
  if (UCS_PTR_IS_ERR(request)) {
    if (outcome != nullptr) *outcome = UCS_PTR_STATUS(request);
    const std::string why = pe >= 0 ? cancelled(pe) : std::string();
    if (!why.empty())
      return set_error(TSHMEM_ERR_TIMEOUT,
                       "%s: PE %d does not reach PE %d through ucx any more: its endpoint was closed when an earlier "
                       "bound expired (%s)",
                       call, my_pe_, pe, why.c_str());
    return set_error(TSHMEM_ERR_SYSTEM, "%s: ucx could not issue %s to PE %d: %s", call, what, pe,
                     ucs_status_string(UCS_PTR_STATUS(request)));
  }
  ucs_status_t s = UCS_INPROGRESS;
  if (!progress_until(std::chrono::steady_clock::now(), bound,
                      [&] { return (s = ucp_request_check_status(request)) != UCS_INPROGRESS; })) {
    const std::string message = format("%s: PE %d waited %lld ms for %s%s and gives up (TSHMEM_PROXY_TIMEOUT_MS)", call,
                                       my_pe_, static_cast<long long>(bound.count()), what,
                                       pe >= 0 ? format(" (to PE %d, through ucx)", pe).c_str() : " (through ucx)");
    if (pe < 0) {  // a flush: what it waits for was issued and waited for by calls that have returned
      ucp_request_free(request);
      return set_error(TSHMEM_ERR_TIMEOUT, "%s", message.c_str());
    }
    // Given up: what is outstanding to the PE is cancelled before the caller learns it, so that UCX neither
    // writes its destination nor reads its source later (the PE may run again).
    cancel(pe, message);
    const bool cancelled_in_time = wait_cancelled(request);
    ucp_request_free(request);
    return set_error(TSHMEM_ERR_TIMEOUT, "%s; %s", message.c_str(),
                     cancelled_in_time ? "what was outstanding to that PE is cancelled (its ucx endpoint closed)"
                     : cancellable_
                         ? "its ucx endpoint is closed, but ucx had not cancelled the request a second later"
                         : "what was outstanding to that PE could not be cancelled (this mode's ucx endpoints have "
                           "no error handling) and may still complete");
  }
  ucp_request_free(request);
  if (outcome != nullptr) *outcome = s;
  if (s != UCS_OK) {
    const std::string why = pe >= 0 ? cancelled(pe) : std::string();
    if (s == UCS_ERR_CANCELED && !why.empty())
      return set_error(TSHMEM_ERR_TIMEOUT, "%s: %s to PE %d was cancelled: an earlier bound expired (%s)", call, what,
                       pe, why.c_str());
    return set_error(TSHMEM_ERR_SYSTEM, "%s: %s to PE %d failed in ucx: %s", call, what, pe, ucs_status_string(s));
  }
  return TSHMEM_SUCCESS;
}

unsigned Worker::progress_from_application() {
  application_progress_.fetch_add(1, std::memory_order_relaxed);
  return ucp_worker_progress(worker_);
}

void Worker::wait_for_event(std::chrono::microseconds most) {
  // Armed, the descriptor signals what arrives from now on; UCS_ERR_BUSY: something is there already.
  if (efd_ < 0) {
    std::this_thread::sleep_for(most);
    return;
  }
  if (ucp_worker_arm(worker_) != UCS_OK) return;
  pollfd fd = {efd_, POLLIN, 0};
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(most);
  const timespec timeout = {static_cast<time_t>(seconds.count()),
                            static_cast<long>(std::chrono::nanoseconds(most - seconds).count())};
  (void)ppoll(&fd, 1, &timeout, nullptr);  // a signal or a timeout: the next pass looks again
}

Status Worker::flush(std::chrono::milliseconds bound, const char *call) {
  ucp_request_param_t param = {};
  return wait(ucp_worker_flush_nbx(worker_, &param), bound, call,
              "every operation issued before to complete at its target", -1);
}

}  // namespace ucx
}  // namespace tshmemi
