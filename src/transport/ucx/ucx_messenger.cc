// Two-sided messages over UCX's tag API: the tag is the sender's PE, receives match any tag, in the order they were
// posted (UCX keeps MPI's matching order, which the staged protocol relies on). Every buffer is host memory
// (messenger.h), and UCX is told so: a UCX with CUDA support otherwise asks the CUDA driver what each buffer is, a
// driver call per message on the proxy thread of a GPU process.
#include <cstring>
#include <thread>

#include "transport/ucx/ucx_parts.h"

namespace tshmemi {
namespace ucx {
namespace {

ucs_status_ptr_t &handle_of(Messenger::Request *request) {
  static_assert(sizeof(ucs_status_ptr_t) + sizeof(int) <= sizeof(request->handle), "room for UCX's request");
  return *reinterpret_cast<ucs_status_ptr_t *>(request->handle);
}

/// A send's target (-1: a receive), kept beside UCX's request for a failure's message.
int &peer_of(Messenger::Request *request) {
  return *reinterpret_cast<int *>(request->handle + sizeof(ucs_status_ptr_t));
}

class UcxMessenger final : public Messenger {
 public:
  explicit UcxMessenger(Worker &worker) : worker_(worker) {}

  Status isend(const void *data, size_t bytes, int pe, Request *request) override {
    const ucs_status_ptr_t r = worker_.issue(pe, [&](ucp_ep_h ep, ucp_rkey_h) {
      ucp_request_param_t param = {};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
      param.memory_type = UCS_MEMORY_TYPE_HOST;
      return ucp_tag_send_nbx(ep, data, bytes, static_cast<ucp_tag_t>(worker_.my_pe()), &param);
    });
    if (UCS_PTR_IS_ERR(r))
      return set_error(TSHMEM_ERR_SYSTEM, "ucx: sending %zu bytes to PE %d failed: %s", bytes, pe,
                       ucs_status_string(UCS_PTR_STATUS(r)));
    handle_of(request) = r;  // nullptr: complete already
    peer_of(request) = pe;
    request->active = true;
    return TSHMEM_SUCCESS;
  }

  Status irecv(void *data, size_t capacity, Request *request) override {
    ucp_request_param_t param = {};
    // Always a request (no immediate completion): test() reads the sender from it.
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type = UCS_MEMORY_TYPE_HOST;
    const ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_.worker(), data, capacity, 0, 0, &param);
    if (UCS_PTR_IS_ERR(r))
      return set_error(TSHMEM_ERR_SYSTEM, "ucx: posting a receive failed: %s", ucs_status_string(UCS_PTR_STATUS(r)));
    handle_of(request) = r;
    peer_of(request) = -1;
    request->active = true;
    return TSHMEM_SUCCESS;
  }

  Status test(Request *request, bool *done, int *source, size_t *bytes) override {
    *done = false;
    if (!request->active) {
      *done = true;
      return TSHMEM_SUCCESS;
    }
    ucs_status_ptr_t r = handle_of(request);
    ucs_status_t s = UCS_OK;
    if (r != nullptr) {
      if (source != nullptr || bytes != nullptr) {
        ucp_tag_recv_info_t info = {};
        s = ucp_tag_recv_request_test(r, &info);
        if (s == UCS_INPROGRESS) return TSHMEM_SUCCESS;
        if (source != nullptr) *source = static_cast<int>(info.sender_tag);
        if (bytes != nullptr) *bytes = info.length;
      } else {
        s = ucp_request_check_status(r);
        if (s == UCS_INPROGRESS) return TSHMEM_SUCCESS;
      }
      ucp_request_free(r);
    }
    request->active = false;
    *done = true;
    if (s != UCS_OK && peer_of(request) >= 0)
      return set_error(TSHMEM_ERR_SYSTEM, "ucx: a message to PE %d failed: %s", peer_of(request), ucs_status_string(s));
    if (s != UCS_OK) return set_error(TSHMEM_ERR_SYSTEM, "ucx: a receive failed: %s", ucs_status_string(s));
    return TSHMEM_SUCCESS;
  }

  // Every cancel is posted first, then they get one second in all: a receive matched by a rendezvous whose sender
  // stopped stays in progress (UCX cancels only what nothing has matched), and one second each made a finalize
  // after a stopped path take eight.
  void cancel(Request *requests, size_t count, std::vector<bool> *held) override {
    held->assign(count, false);
    for (size_t i = 0; i < count; ++i)
      if (requests[i].active && handle_of(&requests[i]) != nullptr)
        ucp_request_cancel(worker_.worker(), handle_of(&requests[i]));
    const auto in_progress = [&] {
      for (size_t i = 0; i < count; ++i)
        if (requests[i].active && handle_of(&requests[i]) != nullptr &&
            ucp_request_check_status(handle_of(&requests[i])) == UCS_INPROGRESS)
          return true;
      return false;
    };
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (in_progress() && std::chrono::steady_clock::now() < until) ucp_worker_progress(worker_.worker());
    for (size_t i = 0; i < count; ++i) {
      if (!requests[i].active) continue;
      requests[i].active = false;
      const ucs_status_ptr_t r = handle_of(&requests[i]);
      if (r == nullptr) continue;
      (*held)[i] = ucp_request_check_status(r) == UCS_INPROGRESS;
      ucp_request_free(r);  // one still in progress is UCX's to finish
    }
  }

  void release(Request *request) override {
    if (!request->active) return;
    request->active = false;
    if (handle_of(request) != nullptr) ucp_request_free(handle_of(request));
  }

 private:
  Worker &worker_;
};

}  // namespace

std::unique_ptr<Messenger> make_messenger(Worker &worker) { return std::make_unique<UcxMessenger>(worker); }

}  // namespace ucx
}  // namespace tshmemi
