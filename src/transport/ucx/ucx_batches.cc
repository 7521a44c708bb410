// The direct mode's batches of small records (ucx_batches.h).
#include "transport/ucx/ucx_batches.h"

#include <algorithm>

#include "common/error.h"

namespace tshmemi {
namespace ucx {

Batches::Batches(Messenger &messenger, int n_pes, int my_pe, size_t limit)
    : msg_(messenger),
      my_pe_(my_pe),
      limit_(limit),
      buffers_(kBuffers),
      open_(static_cast<size_t>(n_pes), -1),
      unacked_(static_cast<size_t>(n_pes), 0),
      since_(static_cast<size_t>(n_pes)),
      shown_(static_cast<size_t>(n_pes)),
      owed_(static_cast<size_t>(n_pes), 0),
      arrived_(static_cast<size_t>(n_pes), 0),
      acks_(new Ack[static_cast<size_t>(n_pes)]),
      n_pes_(n_pes) {
  for (int i = kBuffers - 1; i >= 0; --i) {
    buffers_[static_cast<size_t>(i)].data.reset(new char[limit]);
    free_.push_back(i);
  }
}

Batches::~Batches() {
  for (Buffer &b : buffers_)
    if (b.request.active) {
      msg_.release(&b.request);
      (void)b.data.release();  // the network may still read it
    }
  bool leak = false;
  for (int pe = 0; pe < n_pes_; ++pe) {
    leak |= acks_[static_cast<size_t>(pe)].request.active;
    msg_.release(&acks_[static_cast<size_t>(pe)].request);
  }
  if (leak) (void)acks_.release();  // a released send may still read its record
}

Status Batches::open_record(int pe, size_t bytes, char **at) {
  *at = nullptr;
  if (bytes > limit_)
    return set_error(TSHMEM_ERR_INTERNAL, "ucx: a record of %zu bytes does not fit a batch of %zu", bytes, limit_);
  const size_t p = static_cast<size_t>(pe);
  if (open_[p] >= 0) {
    Buffer &b = buffers_[static_cast<size_t>(open_[p])];
    if (b.bytes + bytes <= limit_) {
      *at = b.data.get() + b.bytes;
      b.bytes += bytes;
      return TSHMEM_SUCCESS;
    }
    TSHMEM_CHECK(send(pe));  // full: it goes, and the record starts the next one
  }
  if (unacked_[p] >= kUnackedBatches) return TSHMEM_SUCCESS;
  if (free_.empty()) TSHMEM_CHECK(reap());
  if (free_.empty()) return TSHMEM_SUCCESS;
  const int buffer = free_.back();
  free_.pop_back();
  open_[p] = buffer;
  open_list_.push_back(pe);
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  Buffer &b = buffers_[static_cast<size_t>(buffer)];
  b.bytes = bytes;
  *at = b.data.get();
  return TSHMEM_SUCCESS;
}

Status Batches::send(int pe) {
  const size_t p = static_cast<size_t>(pe);
  if (open_[p] < 0) return TSHMEM_SUCCESS;
  Buffer &b = buffers_[static_cast<size_t>(open_[p])];
  TSHMEM_CHECK(msg_.isend(b.data.get(), b.bytes, pe, &b.request));
  ++in_flight_;
  open_[p] = -1;
  open_list_.erase(std::find(open_list_.begin(), open_list_.end(), pe));
  if (unacked_[p]++ == 0) since_[p] = Clock::now();
  shown_[p].store(static_cast<uint32_t>(unacked_[p]), std::memory_order_relaxed);
  return TSHMEM_SUCCESS;
}

Status Batches::send_open() {
  while (!open_list_.empty()) TSHMEM_CHECK(send(open_list_.back()));
  return TSHMEM_SUCCESS;
}

void Batches::acknowledged(int pe, uint64_t count) {
  const size_t p = static_cast<size_t>(pe);
  const int n = static_cast<int>(std::min<uint64_t>(count, static_cast<uint64_t>(unacked_[p])));
  if (n == 0) return;
  unacked_[p] -= n;
  since_[p] = Clock::now();  // the PE answers: the bound runs from here for the rest
  shown_[p].store(static_cast<uint32_t>(unacked_[p]), std::memory_order_relaxed);
  outstanding_.fetch_sub(static_cast<uint64_t>(n), std::memory_order_acq_rel);
}

void Batches::applied(int source) {
  if (owed_[static_cast<size_t>(source)]++ == 0) owing_.push_back(source);
  arrived_[static_cast<size_t>(source)] = 1;
}

Status Batches::send_acks() {
  for (size_t i = 0; i < owing_.size();) {
    const int pe = owing_[i];
    const size_t p = static_cast<size_t>(pe);
    const bool streaming = arrived_[p] != 0 && owed_[p] < static_cast<uint64_t>(kAckEvery);
    arrived_[p] = 0;
    Ack &a = acks_[p];
    bool done = false;
    if (!streaming) TSHMEM_CHECK(msg_.test(&a.request, &done));
    if (!done) {
      ++i;
      continue;
    }
    a.record = wire::credit(owed_[static_cast<size_t>(pe)]);
    owed_[static_cast<size_t>(pe)] = 0;
    TSHMEM_CHECK(msg_.isend(&a.record, wire::kHeader, pe, &a.request));
    owing_[i] = owing_.back();
    owing_.pop_back();
  }
  return TSHMEM_SUCCESS;
}

Status Batches::reap() {
  if (in_flight_ == 0) return TSHMEM_SUCCESS;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    Buffer &b = buffers_[i];
    if (!b.request.active) continue;
    bool done = false;
    TSHMEM_CHECK(msg_.test(&b.request, &done));
    if (!done) continue;
    --in_flight_;
    free_.push_back(static_cast<int>(i));
  }
  return TSHMEM_SUCCESS;
}

std::string Batches::overdue(std::chrono::milliseconds bound) const {
  const Clock::time_point now = Clock::now();
  for (size_t pe = 0; pe < unacked_.size(); ++pe)
    if (unacked_[pe] > 0 && now - since_[pe] > bound)
      return format(
          "%d batch(es) of small puts to PE %zu have not been acknowledged by it for %lld ms "
          "(TSHMEM_PROXY_TIMEOUT_MS); the off-node path of PE %d is stopped",
          unacked_[pe], pe, static_cast<long long>(bound.count()), my_pe_);
  return std::string();
}

std::string Batches::waiting_on() const {
  std::string pes;
  int listed = 0;
  for (size_t pe = 0; pe < shown_.size() && listed < 8; ++pe)
    if (shown_[pe].load(std::memory_order_relaxed) > 0) {
      pes += format("%s%zu", pes.empty() ? "" : ", ", pe);
      ++listed;
    }
  return pes;
}

}  // namespace ucx
}  // namespace tshmemi
