#include "heap/symmetry_check.h"

#include <algorithm>
#include <map>
#include <vector>

#include "bootstrap/agree.h"

namespace tshmemi {
namespace {

// Field order inside the failure-path reports.
enum Field { kSeq, kKind, kSize, kAlign, kOffset, kStatus, kNote, kNumFields };
static_assert(kNumFields <= PeReport::kMaxFields, "a report carries every field");

// Which fields describe the *request* (a difference there means the PEs called differently).
constexpr Field kRequestFields[] = {kSeq, kKind, kSize, kAlign, kNote};

// A note compared as a 62-bit FNV-1a hash (0: no note), so it fits the allreduce's words; the notes themselves
// travel in the reports of the failure path, which name them.
int64_t note_hash(const std::string &note) {
  if (note.empty()) return 0;
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : note) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>((h >> 2) | 1);
}

struct CallNote {
  std::string description, error;
  bool set = false;
};
thread_local CallNote t_note;  // the calling thread's note for its next checked call

}  // namespace

void note_next_collective(std::string description, std::string error) {
  t_note.description = std::move(description);
  t_note.error = std::move(error);
  t_note.set = true;
}

void drop_collective_note() { t_note = CallNote{}; }

const char *collective_call_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kMalloc: return "tshmem_malloc";
    case CollectiveKind::kCalloc: return "tshmem_calloc";
    case CollectiveKind::kAlign: return "tshmem_align";
    case CollectiveKind::kFree: return "tshmem_free";
    case CollectiveKind::kBarrier: return "tshmem_barrier_all";
    case CollectiveKind::kFinalize: return "tshmem_finalize";
    case CollectiveKind::kMulticast: return "tshmem_init (multicast region)";
    case CollectiveKind::kTeamSplit: return "tshmem_team_split_strided";
    case CollectiveKind::kReduce: return "tshmem_<T>_<op>_reduce";
    case CollectiveKind::kFcollect: return "tshmem_<T>_fcollect";
    case CollectiveKind::kAlltoall: return "tshmem_<T>_alltoall";
    case CollectiveKind::kBroadcast: return "tshmem_<T>_broadcast";
    case CollectiveKind::kTeamBarrier: return "tshmem_barrier";
    case CollectiveKind::kRegister: return "tshmemx_buffer_register_symmetric";
    case CollectiveKind::kUnregister: return "tshmemx_buffer_unregister_symmetric";
  }
  return "a collective call";
}

namespace {

std::string describe_call(const CollectiveRequest &r) {
  const CollectiveKind kind = r.kind;
  const int64_t size = r.size, alignment = r.alignment, offset = r.offset;
  std::string text = collective_call_name(kind);
  switch (kind) {
    case CollectiveKind::kMalloc:
    case CollectiveKind::kCalloc: text += format("(size=%lld)", static_cast<long long>(size)); break;
    case CollectiveKind::kAlign:
    case CollectiveKind::kMulticast:
      text += format("(alignment=%lld, size=%lld)", static_cast<long long>(alignment), static_cast<long long>(size));
      break;
    case CollectiveKind::kFree:
      text += offset >= 0 ? format("(block at offset %lld, %lld bytes)", static_cast<long long>(offset),
                                   static_cast<long long>(size))
                          : std::string("(not a live block)");
      return text;
    case CollectiveKind::kBarrier:
    case CollectiveKind::kFinalize: text += "()"; return text;
    case CollectiveKind::kTeamSplit:
      text += format("(parent=%d, start=%d, stride=%d, size=%d)",
                     alignment > 0 ? __builtin_ctzll(static_cast<uint64_t>(alignment)) : -1,
                     static_cast<int>(size & 0xffff), static_cast<int>(size >> 16 & 0xffff),
                     static_cast<int>(size >> 32 & 0xffff));
      return text;
    case CollectiveKind::kReduce:
    case CollectiveKind::kFcollect:
    case CollectiveKind::kAlltoall:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kTeamBarrier: {
      const int team = alignment > 0 ? __builtin_ctzll(static_cast<uint64_t>(alignment)) : -1;
      const long long low = static_cast<long long>(size & ((int64_t{1} << 40) - 1));
      if (kind == CollectiveKind::kReduce)
        text += format("(team=%d, count=%lld, dtype=%d, op=%d)", team, low, static_cast<int>(size >> 40 & 0xf),
                       static_cast<int>(size >> 44 & 0xf));
      else if (kind == CollectiveKind::kBroadcast)
        text += format("(team=%d, nbytes=%lld, root=%d)", team, low, static_cast<int>(size >> 40 & 0xff));
      else if (kind == CollectiveKind::kTeamBarrier)
        text += format("(team=%d)", team);
      else
        text += format("(team=%d, nbytes=%lld)", team, low);
      if (offset >= 0) text += format(" with dst at heap offset %lld", static_cast<long long>(offset));
      return text;
    }
    case CollectiveKind::kRegister:
    case CollectiveKind::kUnregister:
      text += format("(size=%lld)", static_cast<long long>(size));
      if (offset >= 0) text += format(" at registration offset %lld", static_cast<long long>(offset));
      return text;
  }
  if (offset >= 0) text += format(" -> offset %lld", static_cast<long long>(offset));
  return text;
}

}  // namespace

std::string CollectiveRequest::describe() const {
  return note.empty() ? describe_call(*this) : note + ": " + describe_call(*this);
}

#if TSHMEM_SYMMETRY_CHECK
namespace {

// The request in two words, exact wherever a PE succeeded locally (the only case in which the words
// decide: any local failure takes the explain path, which compares the full fields). Heaps are below
// 2^48 bytes (checked at init), so size, offset + 1 and log2(alignment) + 1 fit:
//   word 0 = size | kind << 48 | status << 52 | (log2(alignment) + 1) << 53     (alignment 0: 0; kind: 4 bits)
//   word 1 = (offset + 1) | (sequence mod 2^15) << 48
//   word 2 = the note's hash (0 without a note)
// Three words instead of seven shrink the allreduce that every collective call pays for.
constexpr int kPackedWords = 3;
constexpr uint64_t kLow48 = (uint64_t{1} << 48) - 1;

bool pack_request(uint64_t sequence, const CollectiveRequest &r, int64_t status, int64_t words[kPackedWords]) {
  const uint64_t size = static_cast<uint64_t>(r.size), offset_plus_1 = static_cast<uint64_t>(r.offset + 1);
  const uint64_t alignment = static_cast<uint64_t>(r.alignment);
  uint64_t align_code = 0;
  if (alignment != 0) {
    if ((alignment & (alignment - 1)) != 0) return false;
    align_code = static_cast<uint64_t>(__builtin_ctzll(alignment)) + 1;
  }
  static_assert(static_cast<uint64_t>(CollectiveKind::kUnregister) < 16, "kind has 4 bits");
  if (size > kLow48 || offset_plus_1 > kLow48 || align_code > 63) return false;
  words[0] = static_cast<int64_t>(size | static_cast<uint64_t>(r.kind) << 48 | static_cast<uint64_t>(status) << 52 |
                                  align_code << 53);
  words[1] = static_cast<int64_t>(offset_plus_1 | (sequence & 0x7fff) << 48);
  words[2] = note_hash(r.note);
  return true;
}

}  // namespace
#endif

Status SymmetryCheck::agree(const CollectiveRequest &request) {
  if (!t_note.set) return agree_request(request);
  // The caller's note joins the request; its error is this PE's verdict, so every PE fails the call alike.
  CollectiveRequest noted = request;
  noted.note = std::move(t_note.description);
  if (!t_note.error.empty()) {
    noted.local_status = TSHMEM_ERR_INVALID_ARG;
    noted.local_error = std::move(t_note.error);
  }
  drop_collective_note();
  return agree_request(noted);
}

Status SymmetryCheck::agree_request(const CollectiveRequest &mine) {
  ++sequence_;
  int64_t status = mine.local_status != TSHMEM_SUCCESS ? 1 : 0;
#if TSHMEM_SYMMETRY_CHECK
  int64_t words[kPackedWords] = {0, 0};
  if (!pack_request(sequence_, mine, status, words)) {
    // Only a locally failed request can fall outside the packing range; make sure it takes the exact path.
    if (status == 0) return set_error(TSHMEM_ERR_INTERNAL, "symmetry check: request outside the packed range");
    words[0] = static_cast<int64_t>(uint64_t{1} << 52);
    words[1] = 0;
    words[2] = 0;
  }
  // min and max in one call: max(v) = ~min(~v).
  int64_t both[2 * kPackedWords], reduced[2 * kPackedWords];
  for (int i = 0; i < kPackedWords; ++i) {
    both[i] = words[i];
    both[kPackedWords + i] = ~words[i];
  }
  TSHMEM_CHECK(boot_.allreduce(both, reduced, 2 * kPackedWords, ReduceOp::kMin));
  bool all_equal = true;
  for (int i = 0; i < kPackedWords; ++i) all_equal = all_equal && reduced[i] == ~reduced[kPackedWords + i];
  const bool no_local_failure = (static_cast<uint64_t>(reduced[0]) >> 52 & 1) == 0;  // equal words: same status bit
  if (all_equal && no_local_failure) return TSHMEM_SUCCESS;
#else
  int64_t any_failed = 0;
  TSHMEM_CHECK(boot_.allreduce(&status, &any_failed, 1, ReduceOp::kMax));
  if (any_failed == 0) return TSHMEM_SUCCESS;
#endif
  return explain_failure(mine);
}

Status SymmetryCheck::explain_failure(const CollectiveRequest &mine) {
  const int64_t fields[kNumFields] = {static_cast<int64_t>(sequence_),
                                      static_cast<int64_t>(mine.kind),
                                      mine.size,
                                      mine.alignment,
                                      mine.offset,
                                      static_cast<int64_t>(mine.local_status),
                                      note_hash(mine.note)};
  std::string text = mine.describe();
  if (mine.local_status != TSHMEM_SUCCESS) text += ": " + mine.local_error;
  std::vector<PeReport> reports;
  TSHMEM_CHECK(gather_reports(boot_, make_report(mine.local_status, text, fields, kNumFields), &reports));
  const int n = static_cast<int>(reports.size());

  auto same_request = [](const PeReport &a, const PeReport &b) {
    for (Field f : kRequestFields)
      if (a.fields[f] != b.fields[f]) return false;
    // For free, the block *is* the request; for the collectives and registrations, the buffer's offset is part
    // of the call (every PE must name the same symmetric object).
    const bool offset_is_request = a.fields[kKind] == static_cast<int64_t>(CollectiveKind::kFree) ||
                                   a.fields[kKind] >= static_cast<int64_t>(CollectiveKind::kReduce);
    return !offset_is_request || a.fields[kOffset] == b.fields[kOffset];
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
  const std::string call = collective_call_name(mine.kind);
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
                                 divergent.size() > 1 ? "s" : "", pe_list(divergent).c_str());
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<int> &group = groups[g];
      message += format(" PE%s %s called %s;", group.size() > 1 ? "s" : "", pe_list(group).c_str(),
                        reports[group.front()].text);
    }
    message += " Every PE must make the same collective calls in the same order; nothing was allocated or freed.";
    return set_error_message(TSHMEM_ERR_ASYMMETRIC, message);
  }
  // Same request everywhere: some PE failed locally, or the heaps have diverged.
  std::vector<int> failing;
  for (int pe = 0; pe < n; ++pe)
    if (reports[pe].status != TSHMEM_SUCCESS) failing.push_back(pe);
  if (!failing.empty()) {
    std::string message =
        format("%s failed on PE%s %s:", call.c_str(), failing.size() > 1 ? "s" : "", pe_list(failing).c_str());
    for (int pe : failing) message += format(" PE %d: %s;", pe, reports[pe].text);
    message += " nothing was allocated or freed on any PE.";
    return set_error_message(static_cast<Status>(reports[failing.front()].status), message);
  }
  std::string message = format("%s: the PEs' heaps have diverged (same request, different offsets):", call.c_str());
  for (int pe = 0; pe < n; ++pe) message += format(" PE %d: %s;", pe, reports[pe].text);
  return set_error_message(TSHMEM_ERR_ASYMMETRIC, message);
}

}  // namespace tshmemi
