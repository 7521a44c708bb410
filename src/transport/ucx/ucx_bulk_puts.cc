// Large host puts as rendezvous active messages (ucx_bulk_puts.h).
#include "transport/ucx/ucx_bulk_puts.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>

#include "transport/wire.h"

namespace tshmemi {
namespace ucx {
namespace {

/// The active message ids of a bulk put and of its acknowledgement (UCX's own messages have ids of their own).
constexpr unsigned kPutId = 1;
constexpr unsigned kAckId = 2;

/// A receive by rendezvous in progress: whom to acknowledge once it completes.
struct Receiving {
  BulkPuts *puts;
  int origin;
  uint64_t ticket;
};

}  // namespace

BulkPuts::BulkPuts(Worker &worker, char *heap, uint64_t heap_bytes, TransportSink &sink)
    : worker_(worker), heap_(heap), heap_bytes_(heap_bytes), sink_(sink) {}

BulkPuts::~BulkPuts() {
  if (!registered_) return;
  for (unsigned id : {kPutId, kAckId}) {
    ucp_am_handler_param_t param = {};
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
    param.id = id;
    param.cb = nullptr;
    (void)ucp_worker_set_am_recv_handler(worker_.worker(), &param);
  }
}

Status BulkPuts::set_handler(unsigned id, ucp_am_recv_callback_t cb) {
  ucp_am_handler_param_t param = {};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS | UCP_AM_HANDLER_PARAM_FIELD_CB |
                     UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = id;
  param.flags = UCP_AM_FLAG_WHOLE_MSG;  // a message UCX sends eagerly arrives in one piece
  param.cb = cb;
  param.arg = this;
  const ucs_status_t s = ucp_worker_set_am_recv_handler(worker_.worker(), &param);
  if (s != UCS_OK) return ucx_error("ucp_worker_set_am_recv_handler (bulk puts)", s);
  return TSHMEM_SUCCESS;
}

Status BulkPuts::create() {
  registered_ = true;  // the destructor removes whichever was set
  TSHMEM_CHECK(set_handler(kPutId, &BulkPuts::on_put));
  return set_handler(kAckId, &BulkPuts::on_ack);
}

ucs_status_ptr_t BulkPuts::issue(int pe, uint64_t offset, const void *src, size_t bytes, Header *header) {
  header->offset = offset;
  header->origin = worker_.my_pe();
  {
    const std::lock_guard<std::mutex> lock(tickets_mutex_);
    header->ticket = ++last_ticket_;
    pending_[header->ticket] = pe;
  }
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_RNDV;  // the data by rendezvous: zero-copy into the target's heap
  return worker_.issue(pe, [&](ucp_ep_h ep, ucp_rkey_h) {
    return ucp_am_send_nbx(ep, kPutId, header, sizeof(*header), src, bytes, &param);
  });
}

bool BulkPuts::arrived(uint64_t ticket) {
  const std::lock_guard<std::mutex> lock(tickets_mutex_);
  return pending_.find(ticket) == pending_.end();
}

bool BulkPuts::all_arrived() {
  const std::lock_guard<std::mutex> lock(tickets_mutex_);
  return pending_.empty();
}

std::vector<int> BulkPuts::pending() {
  std::vector<int> pes;
  {
    const std::lock_guard<std::mutex> lock(tickets_mutex_);
    for (const auto &entry : pending_) pes.push_back(entry.second);
  }
  std::sort(pes.begin(), pes.end());
  pes.erase(std::unique(pes.begin(), pes.end()), pes.end());
  return pes;
}

void BulkPuts::forget(uint64_t ticket) {
  const std::lock_guard<std::mutex> lock(tickets_mutex_);
  pending_.erase(ticket);
}

void BulkPuts::forget_pe(int pe) {
  const std::lock_guard<std::mutex> lock(tickets_mutex_);
  for (auto it = pending_.begin(); it != pending_.end();) it = it->second == pe ? pending_.erase(it) : std::next(it);
}

ucs_status_t BulkPuts::on_ack(void *arg, const void *header, size_t header_length, void *, size_t,
                              const ucp_am_recv_param_t *) {
  uint64_t ticket = 0;
  if (header_length != sizeof(ticket)) return UCS_OK;  // not tshmem's: nothing waits for it
  std::memcpy(&ticket, header, sizeof(ticket));
  BulkPuts *self = static_cast<BulkPuts *>(arg);
  const std::lock_guard<std::mutex> lock(self->tickets_mutex_);
  self->pending_.erase(ticket);
  return UCS_OK;
}

void BulkPuts::acknowledge(int origin, uint64_t ticket) {
  // UCX reads the header until the send completes: it lives on the heap until then.
  uint64_t *sent = new uint64_t(ticket);
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = [](void *request, ucs_status_t, void *user_data) {
    delete static_cast<uint64_t *>(user_data);
    ucp_request_free(request);
  };
  param.user_data = sent;
  const ucs_status_ptr_t r = worker_.issue(origin, [&](ucp_ep_h ep, ucp_rkey_h) {
    return ucp_am_send_nbx(ep, kAckId, sent, sizeof(*sent), nullptr, 0, &param);
  });
  if (!UCS_PTR_IS_PTR(r)) delete sent;  // done at once, or not sent (the origin's bound says so there)
}

void BulkPuts::on_received(void *request, ucs_status_t status, size_t, void *user_data) {
  const Receiving *receiving = static_cast<const Receiving *>(user_data);
  if (status == UCS_OK) receiving->puts->acknowledge(receiving->origin, receiving->ticket);
  delete receiving;
  ucp_request_free(request);  // freed here, not where it was issued: a freed request's callback is not called
}

ucs_status_t BulkPuts::on_put(void *arg, const void *header, size_t header_length, void *data, size_t length,
                              const ucp_am_recv_param_t *param) {
  Header h;
  if (header_length == sizeof(h)) std::memcpy(&h, header, sizeof(h));
  return static_cast<BulkPuts *>(arg)->receive(h, header_length, data, length,
                                               (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0);
}

// On the thread that progresses the worker. A refusal is logged here and returned to the origin, whose put fails.
ucs_status_t BulkPuts::receive(const Header &header, size_t header_length, void *data, size_t length, bool rendezvous) {
  wire::Record record;
  record.kind = wire::kPut;
  record.offset = header.offset;
  record.bytes = length;
  const char *rule = header_length != sizeof(Header) ? "a bulk put whose header is not tshmem's"
                                                     : wire::check_access(record, heap_bytes_);
  if (rule == nullptr) rule = wire::check_reserved(record, heap_bytes_);
  if (rule != nullptr) {
    sink_.message_refused(wire::record_refusal(worker_.my_pe(), header.origin, rule, record));
    return rendezvous ? kRefused : UCS_OK;  // the origin's send completes with it; an eager one is just dropped
  }
  char *dst = heap_ + header.offset;
  if (!rendezvous) {  // sent eagerly after all: the data is here
    std::memcpy(dst, data, length);
    std::atomic_thread_fence(std::memory_order_release);
    acknowledge(header.origin, header.ticket);
    return UCS_OK;
  }
  Receiving *receiving = new Receiving{this, header.origin, header.ticket};
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.recv_am = &BulkPuts::on_received;
  param.user_data = receiving;
  const ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker_.worker(), data, dst, length, &param);
  if (!UCS_PTR_IS_PTR(r)) delete receiving;  // the callback runs only for a receive left in progress
  if (r == nullptr) acknowledge(header.origin, header.ticket);
  if (UCS_PTR_IS_ERR(r)) {
    sink_.message_refused(
        format("off-node proxy of PE %d: the data of a bulk put from PE %d (offset %llu, bytes %zu) "
               "could not be received: %s",
               worker_.my_pe(), header.origin, static_cast<unsigned long long>(header.offset), length,
               ucs_status_string(UCS_PTR_STATUS(r))));
  }  // else in progress: on_received acknowledges it and frees the request
  return UCS_OK;
}

}  // namespace ucx
}  // namespace tshmemi
