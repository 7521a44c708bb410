// Large host puts as rendezvous active messages (ucx_bulk_puts.h).
#include "transport/ucx/ucx_bulk_puts.h"

#include <atomic>
#include <cstring>

#include "transport/wire.h"

namespace tshmemi {
namespace ucx {
namespace {

/// The active message id of a bulk put (tshmem's only one: UCX's own messages have ids of their own).
constexpr unsigned kPutId = 1;

}  // namespace

BulkPuts::BulkPuts(Worker &worker, char *heap, uint64_t heap_bytes, TransportSink &sink)
    : worker_(worker), heap_(heap), heap_bytes_(heap_bytes), sink_(sink) {}

BulkPuts::~BulkPuts() {
  if (!registered_) return;
  ucp_am_handler_param_t param = {};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
  param.id = kPutId;
  param.cb = nullptr;
  (void)ucp_worker_set_am_recv_handler(worker_.worker(), &param);
}

Status BulkPuts::create() {
  ucp_am_handler_param_t param = {};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS | UCP_AM_HANDLER_PARAM_FIELD_CB |
                     UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = kPutId;
  param.flags = UCP_AM_FLAG_WHOLE_MSG;  // a message UCX sends eagerly arrives in one piece
  param.cb = &BulkPuts::on_put;
  param.arg = this;
  const ucs_status_t s = ucp_worker_set_am_recv_handler(worker_.worker(), &param);
  if (s != UCS_OK) return ucx_error("ucp_worker_set_am_recv_handler (bulk puts)", s);
  registered_ = true;
  return TSHMEM_SUCCESS;
}

ucs_status_ptr_t BulkPuts::issue(int pe, uint64_t offset, const void *src, size_t bytes, Header *header) {
  header->offset = offset;
  header->origin = worker_.my_pe();
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_RNDV;  // the data by rendezvous: zero-copy into the target's heap
  return worker_.issue(pe, [&](ucp_ep_h ep, ucp_rkey_h) {
    return ucp_am_send_nbx(ep, kPutId, header, sizeof(*header), src, bytes, &param);
  });
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
    return UCS_OK;
  }
  ucp_request_param_t param = {};
  const ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker_.worker(), data, dst, length, &param);
  if (UCS_PTR_IS_ERR(r)) {
    sink_.message_refused(
        format("off-node proxy of PE %d: the data of a bulk put from PE %d (offset %llu, bytes %zu) "
               "could not be received: %s",
               worker_.my_pe(), header.origin, static_cast<unsigned long long>(header.offset), length,
               ucs_status_string(UCS_PTR_STATUS(r))));
  } else if (r != nullptr) {
    ucp_request_free(r);  // UCX completes the receive; nothing here waits for it (the origin's flush does)
  }
  return UCS_OK;
}

}  // namespace ucx
}  // namespace tshmemi
