#include "bootstrap/collective_check.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "bootstrap/agree.h"

namespace tshmemi {
namespace {

struct CallNote {
  std::string description, error;
  bool set = false;
};
thread_local CallNote t_note;  // the calling thread's note for its next checked call

// The request's digest: a 64-bit hash of everything that must be equal across PEs except the sequence (the
// call's name, each argument's name and value, the offset where it is an argument, the note). Each 8-byte word
// (a value, or 8 bytes of a string) is folded in with a multiply-xorshift step and the result mixed once more at
// the end, so that nearby inputs spread over every bit: two different requests share a digest with a chance of
// about 2^-64. Word by word rather than byte by byte: every checked call computes one (a host collective of a few
// bytes takes well under a microsecond), so the hash must cost a few nanoseconds.
class Digest {
 public:
  // A name: its bytes as add_bytes() takes them, the same digest as a loop over its bytes (strlen finds the end a
  // word at a time).
  void add(const char *text) { add_bytes(text, std::strlen(text)); }
  void add(const std::string &text) { add_bytes(text.data(), text.size()); }
  void add(int64_t value) { word(static_cast<uint64_t>(value)); }
  int64_t value() const {
    uint64_t z = h_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return static_cast<int64_t>(z ^ (z >> 31));
  }

 private:
  void add_bytes(const char *bytes, size_t n) {
    const size_t length = n;
    for (; n >= 8; n -= 8, bytes += 8) {
      uint64_t w;
      std::memcpy(&w, bytes, 8);
      word(w);
    }
    if (n > 0) {  // the tail gathered in a register: bytes stored to memory and read back as a word stall
      uint64_t w = 0;
      for (size_t i = 0; i < n; ++i) w |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
      word(w);
    }
    word(length);
  }
  void word(uint64_t w) {
    h_ = (h_ ^ w) * 0x9e3779b97f4a7c15ull;
    h_ ^= h_ >> 29;
  }
  uint64_t h_ = 14695981039346656037ull;
};

int64_t digest_of(const CollectiveRequest &r) {
  Digest d;
  d.add(r.call);
  for (int i = 0; i < r.n_args; ++i) {
    d.add(r.args[i].name);
    d.add(r.args[i].value);
  }
  d.add(r.offset_is_argument ? r.offset : int64_t{-1});
  d.add(r.note);
  return d.value();
}

// Field order inside the failure-path reports.
enum Field { kSeq, kDigest, kOffset, kNumFields };
static_assert(kNumFields <= PeReport::kMaxFields, "a report carries every field");

/// Every PE of the job, through the bootstrap.
class JobGroup : public CheckGroup {
 public:
  JobGroup(Bootstrap &boot, uint64_t &sequence) : boot_(boot), sequence_(sequence) {}
  int size() const override { return boot_.size(); }
  int pe(int index) const override { return index; }
  Status allreduce_min(const int64_t *in, int64_t *out, int count) override {
    return boot_.allreduce(in, out, count, ReduceOp::kMin);
  }
  Status gather(const PeReport &mine, std::vector<PeReport> *all) override { return gather_reports(boot_, mine, all); }
  uint64_t next_sequence() override { return ++sequence_; }

 private:
  Bootstrap &boot_;
  uint64_t &sequence_;  // checked calls made by this PE
};

}  // namespace

CollectiveCheck::CollectiveCheck(Bootstrap &boot) : boot_(boot), job_(std::make_unique<JobGroup>(boot, sequence_)) {}
CollectiveCheck::~CollectiveCheck() = default;

std::string CollectiveRequest::describe() const {
  std::string text = note.empty() ? std::string() : note + ": ";
  text += call;
  text += "(";
  for (int i = 0; i < n_args; ++i)
    text += format("%s%s=%lld", i > 0 ? ", " : "", args[i].name, static_cast<long long>(args[i].value));
  text += ")";
  if (offset >= 0) text += format(" %s %lld", offset_label, static_cast<long long>(offset));
  return text;
}

std::string CollectiveRequest::report() const {
  if (local_status == TSHMEM_SUCCESS) return describe();
  return !note.empty() && local_error.rfind(note, 0) == 0 ? local_error : describe() + ": " + local_error;
}

void note_next_collective(std::string description, std::string error) {
  t_note.description = std::move(description);
  t_note.error = std::move(error);
  t_note.set = true;
}

void drop_collective_note() { t_note = CallNote{}; }

CollectiveRequest take_collective_note(const CollectiveRequest &request) {
  CollectiveRequest noted = request;
  if (!t_note.set) return noted;
  // The caller's note joins the request; its error is this PE's verdict, so every PE fails the call alike.
  noted.note = std::move(t_note.description);
  if (!t_note.error.empty()) {
    noted.local_status = TSHMEM_ERR_INVALID_ARG;
    noted.local_error = std::move(t_note.error);
  }
  drop_collective_note();
  return noted;
}

Status CollectiveCheck::agree(const CollectiveRequest &request) {
  const CallScope scope(request.call);  // names the call in a wait's messages
  const std::lock_guard<std::mutex> lock(mutex_);
  return agree_locked(*job_, request);
}

Status CollectiveCheck::agree_in(CheckGroup &group, const CollectiveRequest &request) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return agree_locked(group, request);
}

Status CollectiveCheck::agree_then_min(const CollectiveRequest &request, const int64_t *in, int64_t *out, int count) {
  const CallScope scope(request.call);
  const std::lock_guard<std::mutex> lock(mutex_);
  TSHMEM_CHECK(agree_locked(*job_, request));
  return boot_.allreduce(in, out, count, ReduceOp::kMin);
}

Status CollectiveCheck::agree_locked(CheckGroup &group, const CollectiveRequest &request) {
  if (!t_note.set) return agree_request(group, request);
  return agree_request(group, take_collective_note(request));
}

Status CollectiveCheck::agree_request(CheckGroup &group, const CollectiveRequest &mine) {
  const uint64_t sequence = group.next_sequence();
  const int64_t failed = mine.local_status != TSHMEM_SUCCESS ? 1 : 0;
  const int64_t digest = digest_of(mine);
#if TSHMEM_SYMMETRY_CHECK
  // Three words, so that min and max together stay within the bootstrap's shared-memory allreduce on one node
  // (NodeSync::kMaxWords): the digest, the offset, and the call's place in this PE's sequence with the local
  // verdict in its lowest bit. Equal minimum and maximum of every word: the same request everywhere.
  constexpr int kWords = 3;
  const int64_t words[kWords] = {digest, mine.offset, static_cast<int64_t>(sequence << 1) | failed};
  // min and max in one call: max(v) = ~min(~v).
  int64_t both[2 * kWords], reduced[2 * kWords];
  for (int i = 0; i < kWords; ++i) {
    both[i] = words[i];
    both[kWords + i] = ~words[i];
  }
  TSHMEM_CHECK(group.allreduce_min(both, reduced, 2 * kWords));
  bool all_equal = true;
  for (int i = 0; i < kWords; ++i) all_equal = all_equal && reduced[i] == ~reduced[kWords + i];
  const bool no_local_failure = (reduced[2] & 1) == 0;  // equal words: the same verdict everywhere
  if (all_equal && no_local_failure) return TSHMEM_SUCCESS;
#else
  const int64_t not_failed = 1 - failed;
  int64_t none_failed = 0;
  TSHMEM_CHECK(group.allreduce_min(&not_failed, &none_failed, 1));
  if (none_failed == 1) return TSHMEM_SUCCESS;
#endif
  return explain_failure(group, mine, digest, sequence);
}

Status CollectiveCheck::explain_failure(CheckGroup &group, const CollectiveRequest &mine, int64_t digest,
                                        uint64_t sequence) {
  const int64_t fields[kNumFields] = {static_cast<int64_t>(sequence), digest, mine.offset};
  std::vector<PeReport> reports;
  TSHMEM_CHECK(group.gather(make_report(mine.local_status, mine.report(), fields, kNumFields), &reports));
  const int n = static_cast<int>(reports.size());
  // Members by index below; messages name them by PE.
  auto pes = [&group](const std::vector<int> &indices) {
    std::vector<int> out;
    for (int i : indices) out.push_back(group.pe(i));
    return pe_list(out);
  };

  // The digest covers the call, its arguments, the note and an offset that names the call's object.
  auto same_request = [](const PeReport &a, const PeReport &b) {
    return a.fields[kSeq] == b.fields[kSeq] && a.fields[kDigest] == b.fields[kDigest];
  };
  // Group PEs by request; the largest group is the reference (ties: the one holding the lowest PE).
  std::vector<std::vector<int>> groups;
  for (int pe = 0; pe < n; ++pe) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const std::vector<int> &g) { return same_request(reports[g.front()], reports[pe]); });
    if (it == groups.end())
      groups.push_back({pe});
    else
      it->push_back(pe);
  }
  // The call as its caller knows it: a binding's note names it first ("tshmem.all_reduce(...)").
  const std::string call = mine.note.empty() ? std::string(mine.call) : mine.note.substr(0, mine.note.find('('));
  if (groups.size() > 1) {
    // The reference is the largest group of PEs that succeeded locally (ties: the lowest PE), so a PE
    // that passed a bad argument is named as the divergent one.
    auto clean = [&](const std::vector<int> &g) {
      return std::all_of(g.begin(), g.end(), [&](int pe) { return reports[pe].status == TSHMEM_SUCCESS; });
    };
    size_t reference = 0;
    for (size_t g = 1; g < groups.size(); ++g)
      if (std::make_pair(clean(groups[g]), groups[g].size()) >
          std::make_pair(clean(groups[reference]), groups[reference].size()))
        reference = g;
    std::vector<int> divergent;
    for (size_t g = 0; g < groups.size(); ++g)
      if (g != reference) divergent.insert(divergent.end(), groups[g].begin(), groups[g].end());
    std::sort(divergent.begin(), divergent.end());
    std::string message = format("%s: collective calls differ across PEs (call #%lld on each PE); divergent PE%s %s.",
                                 call.c_str(), static_cast<long long>(reports[0].fields[kSeq]),
                                 divergent.size() > 1 ? "s" : "", pes(divergent).c_str());
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<int> &members = groups[g];
      message += format(" PE%s %s called %s;", members.size() > 1 ? "s" : "", pes(members).c_str(),
                        reports[members.front()].text);
    }
    message += format(" Every PE must make the same collective calls in the same order; %s.", mine.nothing_done);
    return set_error_message(TSHMEM_ERR_ASYMMETRIC, message);
  }
  // Same request everywhere: some PE failed locally, or the heaps have diverged.
  std::vector<int> failing;
  for (int pe = 0; pe < n; ++pe)
    if (reports[pe].status != TSHMEM_SUCCESS) failing.push_back(pe);
  if (!failing.empty()) {
    std::string message =
        format("%s failed on PE%s %s:", call.c_str(), failing.size() > 1 ? "s" : "", pes(failing).c_str());
    for (int i : failing) message += format(" PE %d: %s;", group.pe(i), reports[i].text);
    message += format(" %s on any PE.", mine.nothing_done);
    return set_error_message(static_cast<Status>(reports[failing.front()].status), message);
  }
  std::string message = format("%s: the PEs' heaps have diverged (same request, different offsets):", call.c_str());
  for (int i = 0; i < n; ++i) message += format(" PE %d: %s;", group.pe(i), reports[i].text);
  return set_error_message(TSHMEM_ERR_ASYMMETRIC, message);
}

}  // namespace tshmemi
