// The staged protocol's flow control (credits) and control messages (credits, the stop notice).
#include "transport/staged/staged.h"

namespace tshmemi {
namespace staged {

void StagedTransport::tell_stopped() {
  for (int pe = 0; pe < n_pes_; ++pe) {
    if (pe == my_pe_) continue;
    Control &c = notice_slots_[static_cast<size_t>(pe)];
    c.record = wire::gone();
    (void)msg_->isend(&c.record, wire::kHeader, pe, &c.request);
  }
}

void StagedTransport::owe_credit(int source) {
  if (source == my_pe_) {  // a message to this PE itself: its credit comes back at once
    ++credits_[static_cast<size_t>(source)];
    return;
  }
  if (++owed_[static_cast<size_t>(source)] == kCreditReturn) owing_.push_back(source);
}

Status StagedTransport::return_credits() {
  for (size_t i = 0; i < owing_.size();) {
    const int pe = owing_[i];
    Control &c = credit_slots_[static_cast<size_t>(pe)];
    bool done = false;
    TSHMEM_CHECK(msg_->test(&c.request, &done));
    if (!done) {
      ++i;
      continue;
    }
    c.record = wire::credit(static_cast<uint64_t>(owed_[static_cast<size_t>(pe)]));
    owed_[static_cast<size_t>(pe)] = 0;
    TSHMEM_CHECK(msg_->isend(&c.record, wire::kHeader, pe, &c.request));
    owing_[i] = owing_.back();
    owing_.pop_back();
  }
  return TSHMEM_SUCCESS;
}

Status StagedTransport::handle_control(int source, const wire::Record &record) {
  if (source < 0 || source >= n_pes_ || source == my_pe_) return TSHMEM_SUCCESS;
  if (record.kind == wire::kGone) {
    sink_.peer_stopped(source);  // it told every PE itself
    return TSHMEM_SUCCESS;
  }
  int &credits = credits_[static_cast<size_t>(source)];
  const uint64_t returned = std::min<uint64_t>(record.value, kProxyCreditsPerPeer);
  credits = std::min(kProxyCreditsPerPeer, credits + static_cast<int>(returned));
  return TSHMEM_SUCCESS;
}

}  // namespace staged
}  // namespace tshmemi
