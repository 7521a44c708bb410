#include "bootstrap/node_sync.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

namespace tshmemi {
namespace {

const char *op_name(int32_t op) {
  switch (static_cast<ReduceOp>(op)) {
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kSum: return "sum";
  }
  return "?";
}

}  // namespace

NodeSync::NodeSync(std::vector<void *> pages, int me, const WaitBounds *bounds, uint64_t first_call)
    : pages_(std::move(pages)), me_(static_cast<size_t>(me)), bounds_(bounds), calls_(first_call) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  oversubscribed_ = cpus > 0 && static_cast<long>(pages_.size()) > cpus;
}

Status NodeSync::wait_for(const Slot &s, uint64_t call, size_t pe) const {
  for (unsigned polls = 0; polls < kNodePollsBeforeYield && !oversubscribed_; ++polls)
    if (s.call.load(std::memory_order_acquire) == call) return TSHMEM_SUCCESS;
  // A PE that is not here within the spins may be descheduled, stopped or gone: the wait is bounded.
  static const WaitBounds kDefaults;
  WaitClock clock(bounds_ != nullptr ? *bounds_ : kDefaults, static_cast<int>(me_),
                  format("node-local PE %zu to join a barrier or allreduce "
                         "(shared memory)",
                         pe));
  while (s.call.load(std::memory_order_acquire) != call) {
    sched_yield();
    if (!clock.keep_waiting()) return set_error(TSHMEM_ERR_TIMEOUT, "%s", clock.expired_message().c_str());
  }
  return TSHMEM_SUCCESS;
}

Status NodeSync::allreduce(const int64_t *in, int64_t *out, int count, ReduceOp op) {
  if (count < 0 || count > kMaxWords)
    return set_error(TSHMEM_ERR_INTERNAL, "node sync: an allreduce of %d words (at most %d)", count, kMaxWords);
  const uint64_t call = ++calls_;
  Slot &mine = slot(me_, call);
  mine.count = count;
  mine.op = static_cast<int32_t>(op);
  std::copy(in, in + count, mine.words);
  mine.call.store(call, std::memory_order_release);  // publishes the words and everything this PE wrote before

  int64_t result[kMaxWords];
  std::copy(in, in + count, result);
  bool same_call = true;
  for (size_t pe = 0; pe < pages_.size(); ++pe) {
    const Slot &theirs = slot(pe, call);
    TSHMEM_CHECK(wait_for(theirs, call, pe));
    same_call = same_call && theirs.count == count && theirs.op == static_cast<int32_t>(op);
    if (!same_call || pe == me_) continue;
    for (int i = 0; i < count; ++i) {
      const int64_t v = theirs.words[i];
      switch (op) {
        case ReduceOp::kMin: result[i] = std::min(result[i], v); break;
        case ReduceOp::kMax: result[i] = std::max(result[i], v); break;
        case ReduceOp::kSum: result[i] += v; break;
      }
    }
  }
  if (!same_call) {
    // Every PE reads the same slots, so every PE fails here alike. The callers' calls match when the library's do
    // (each collective has one shape), so this is a guard against a bug, never an application error.
    std::string text;
    for (size_t pe = 0; pe < pages_.size(); ++pe) {
      const Slot &theirs = slot(pe, call);
      text += format("%s%zu: %s of %d words", pe ? "; " : "", pe, op_name(theirs.op), theirs.count);
    }
    return set_error(TSHMEM_ERR_INTERNAL, "node sync: call %llu differs across the node's PEs (%s)",
                     static_cast<unsigned long long>(call), text.c_str());
  }
  std::copy(result, result + count, out);
  return TSHMEM_SUCCESS;
}

Bootstrap::Bootstrap() = default;
Bootstrap::~Bootstrap() = default;

Status Bootstrap::barrier() {
  TSHMEM_CHECK(usable(current_call()));
  if (!node_sync_) return barrier_impl();
  const Status status = node_sync_->allreduce(nullptr, nullptr, 0, ReduceOp::kMin);
  return status == TSHMEM_SUCCESS ? status : fail(status, last_error_message());
}

Status Bootstrap::allreduce(const int64_t *in, int64_t *out, int count, ReduceOp op) {
  TSHMEM_CHECK(usable(current_call()));
  if (!node_sync_ || count > NodeSync::kMaxWords) return allreduce_impl(in, out, count, op);
  const Status status = node_sync_->allreduce(in, out, count, op);
  return status == TSHMEM_SUCCESS ? status : fail(status, last_error_message());
}

void Bootstrap::attach_node_sync(std::unique_ptr<NodeSync> sync) { node_sync_ = std::move(sync); }

void Bootstrap::detach_node_sync() { node_sync_.reset(); }

}  // namespace tshmemi
