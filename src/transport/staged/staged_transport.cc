// The staged protocol: making it (buffers, posted receives), progress, teardown.
#include "transport/staged/staged.h"

namespace tshmemi {
namespace staged {

StagedTransport::StagedTransport(std::unique_ptr<Messenger> messenger, ProxyMemory &memory, const StagedConfig &config,
                                 TransportSink &sink)
    : msg_(std::move(messenger)),
      memory_(memory),
      sink_(sink),
      heap_(config.heap),
      heap_bytes_(config.heap_bytes),
      chunk_(config.chunk_bytes),
      capacity_(wire::message_capacity(config.chunk_bytes)),
      batch_bytes_(wire::Message::batch_limit(capacity_)),
      my_pe_(config.my_pe),
      n_pes_(config.n_pes),
      dirty_(static_cast<size_t>(config.n_pes), 0),
      credits_(static_cast<size_t>(config.n_pes), kProxyCreditsPerPeer),
      owed_(static_cast<size_t>(config.n_pes), 0),
      credit_slots_(static_cast<size_t>(config.n_pes)),
      notice_slots_(static_cast<size_t>(config.n_pes)),
      awaiting_(static_cast<size_t>(config.n_pes)) {
  for (int i = kProxyMaxPending - 1; i >= 0; --i) free_expected_.push_back(i);
}

StagedTransport::~StagedTransport() {
  bool leak = false;
  withdraw_receives();
  for (std::vector<Control> *slots : {&credit_slots_, &notice_slots_})
    for (Control &c : *slots) {
      leak |= c.request.active;
      msg_->release(&c.request);
    }
  for (size_t i = 0; i < send_.size(); ++i) {
    if (send_requests_[i].active) {
      msg_->release(&send_requests_[i]);
      continue;  // leaked
    }
    memory_.free_staging(send_[i]);
  }
  for (size_t i = 0; i < recv_.size(); ++i)
    if (!recv_held_[i]) memory_.free_staging(recv_[i]);  // else a message may still land there: leaked
  if (amo_slots_ != nullptr) memory_.free_staging(amo_slots_);
  if (leak) TSHMEMI_LOG(kInfo, kLogInit, "off-node proxy: control sends still in flight at teardown were released");
}

Status StagedTransport::create() {
  send_.assign(kProxySendBuffers, nullptr);
  recv_.assign(kProxyRecvBuffers, nullptr);
  send_requests_.resize(kProxySendBuffers);
  send_pe_.assign(kProxySendBuffers, -1);
  send_since_.resize(kProxySendBuffers);
  recv_requests_.resize(kProxyRecvBuffers);
  recv_held_.assign(kProxyRecvBuffers, false);
  for (char *&b : send_) TSHMEM_CHECK(memory_.alloc_staging(capacity_, reinterpret_cast<void **>(&b)));
  for (char *&b : recv_) TSHMEM_CHECK(memory_.alloc_staging(capacity_, reinterpret_cast<void **>(&b)));
  for (int i = 0; i < kProxySendBuffers; ++i) free_.push_back(i);
  TSHMEM_CHECK(memory_.alloc_staging((kAmoSlots + 1) * sizeof(uint64_t), reinterpret_cast<void **>(&amo_slots_)));
  for (int i = 0; i < kProxyRecvBuffers; ++i) TSHMEM_CHECK(post_receive(i));
  return TSHMEM_SUCCESS;
}

Status StagedTransport::progress(bool *worked) {
  if (!outbox_.empty()) TSHMEM_CHECK(seal(outbox_.back()));
  if (!owing_.empty()) TSHMEM_CHECK(return_credits());
  TSHMEM_CHECK(reap_sends());
  TSHMEM_CHECK(send_ready());
  TSHMEM_CHECK(poll_receives());
  TSHMEM_CHECK(serve_replies());
  if (worked_) *worked = true;
  worked_ = false;
  return TSHMEM_SUCCESS;
}

void StagedTransport::close() { withdraw_receives(); }

void StagedTransport::withdraw_receives() {
  std::vector<bool> held;
  msg_->cancel(recv_requests_.data(), recv_requests_.size(), &held);
  for (size_t i = 0; i < held.size(); ++i)
    if (held[i]) recv_held_[i] = true;
}

Status StagedTransport::send_raw(int pe, const void *message, size_t bytes) {
  Messenger::Request request;
  TSHMEM_CHECK(msg_->isend(message, bytes, pe, &request));
  for (bool done = false; !done;) TSHMEM_CHECK(msg_->test(&request, &done));
  return TSHMEM_SUCCESS;
}

bool StagedTransport::passed(const Point &point, const bool copies[2], Status *status) {
  for (int lane : {kOriginLane, kTargetLane}) {
    if (!copies[lane]) continue;
    bool done = false;
    *status = memory_.passed(static_cast<ProxyLane>(lane), point.lane[lane], &done);
    if (*status != TSHMEM_SUCCESS || !done) return false;
  }
  return true;
}

}  // namespace staged
uint64_t staged_transport_staging_bytes(uint64_t chunk_bytes) {
  const uint64_t buffers = uint64_t{kProxySendBuffers + kProxyRecvBuffers} * wire::message_capacity(chunk_bytes);
  return buffers + (staged::kAmoSlots + 1) * sizeof(uint64_t);
}

uint64_t staged_transport_reply_queue_bytes(int n_pes) {
  return uint64_t{static_cast<uint64_t>(n_pes)} * kProxyMaxPending * sizeof(staged::Reply);
}

Status make_staged_transport(std::unique_ptr<Messenger> messenger, ProxyMemory &memory, const StagedConfig &config,
                             TransportSink &sink, std::unique_ptr<Transport> *out) {
  auto transport = std::make_unique<staged::StagedTransport>(std::move(messenger), memory, config, sink);
  TSHMEM_CHECK(transport->create());
  *out = std::move(transport);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
