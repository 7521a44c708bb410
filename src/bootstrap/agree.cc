#include "bootstrap/agree.h"

#include <algorithm>
#include <cstring>

namespace tshmemi {

PeReport make_report(Status status, const std::string &text, const int64_t *fields, int n_fields) {
  PeReport report;
  std::memset(&report, 0, sizeof(report));
  report.status = static_cast<int32_t>(status);
  for (int i = 0; i < n_fields && i < PeReport::kMaxFields; ++i) report.fields[i] = fields[i];
  if (text.size() < sizeof(report.text)) {
    std::memcpy(report.text, text.c_str(), text.size());
    return report;
  }
  // Too long: cut at the last space that leaves room for the mark, never inside a word.
  const size_t room = sizeof(report.text) - 1 - 4;
  size_t cut = text.rfind(' ', room);
  if (cut == std::string::npos || cut == 0) cut = room;
  std::memcpy(report.text, text.data(), cut);
  std::memcpy(report.text + cut, " ...", 4);
  return report;
}

Status gather_reports(Bootstrap &boot, const PeReport &mine, std::vector<PeReport> *all) {
  all->assign(static_cast<size_t>(boot.size()), PeReport{});
  return boot.allgather(&mine, all->data(), sizeof(PeReport));
}

std::string pe_list(const std::vector<int> &pes) {
  std::string out;
  for (size_t i = 0; i < pes.size();) {
    size_t j = i;
    while (j + 1 < pes.size() && pes[j + 1] == pes[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(pes[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(pes[j]);
    i = j + 1;
  }
  return out;
}

Status agree_on_status(Bootstrap &boot, Status local, const char *step) {
  const int64_t mine = local != TSHMEM_SUCCESS ? 1 : 0;
  int64_t any_failed = 0;
  TSHMEM_CHECK(boot.allreduce(&mine, &any_failed, 1, ReduceOp::kMax));
  if (any_failed == 0) return TSHMEM_SUCCESS;

  const std::string my_text = local != TSHMEM_SUCCESS ? last_error_message() : std::string();
  std::vector<PeReport> reports;
  TSHMEM_CHECK(gather_reports(boot, make_report(local, my_text), &reports));
  Status agreed = TSHMEM_SUCCESS;
  std::string message = format("%s failed on ", step);
  bool first = true;
  for (size_t pe = 0; pe < reports.size(); ++pe) {
    if (reports[pe].status == TSHMEM_SUCCESS) continue;
    if (agreed == TSHMEM_SUCCESS) agreed = static_cast<Status>(reports[pe].status);
    message += format("%sPE %zu: %s", first ? "" : "; ", pe, reports[pe].text);
    first = false;
  }
  return set_error_message(agreed, message);
}

}  // namespace tshmemi

namespace tshmemi {

Status agree_on_fields(Bootstrap &boot, const std::vector<AgreedField> &fields, const char *step) {
  const size_t n = fields.size();
  std::vector<int64_t> both(2 * n), reduced(2 * n);
  for (size_t i = 0; i < n; ++i) {
    both[i] = fields[i].value;
    both[n + i] = ~fields[i].value;  // max(v) = ~min(~v): min and max in one call
  }
  TSHMEM_CHECK(boot.allreduce(both.data(), reduced.data(), static_cast<int>(2 * n), ReduceOp::kMin));
  std::vector<size_t> differing;
  for (size_t i = 0; i < n; ++i)
    if (reduced[i] != ~reduced[n + i]) differing.push_back(i);
  if (differing.empty()) return TSHMEM_SUCCESS;

  std::string message = format("%s: configuration differs across PEs:", step);
  for (size_t i : differing) {
    // One allgather per differing field (failure path only): each PE's printed value.
    std::vector<PeReport> reports;
    TSHMEM_CHECK(gather_reports(boot, make_report(TSHMEM_SUCCESS, fields[i].shown, &fields[i].value, 1), &reports));
    std::vector<std::pair<int64_t, std::vector<int>>> groups;  // value -> PEs, in order of first PE
    for (size_t pe = 0; pe < reports.size(); ++pe) {
      auto it =
          std::find_if(groups.begin(), groups.end(), [&](const auto &g) { return g.first == reports[pe].fields[0]; });
      if (it == groups.end())
        groups.push_back({reports[pe].fields[0], {static_cast<int>(pe)}});
      else
        it->second.push_back(static_cast<int>(pe));
    }
    message += format(" %s:", fields[i].name);
    for (size_t g = 0; g < groups.size(); ++g)
      message += format("%s PE%s %s = %s", g ? "," : "", groups[g].second.size() > 1 ? "s" : "",
                        pe_list(groups[g].second).c_str(), reports[static_cast<size_t>(groups[g].second.front())].text);
    message += ";";
  }
  message += " every PE must use the same value.";
  return set_error_message(TSHMEM_ERR_CONFIG, message);
}

}  // namespace tshmemi
