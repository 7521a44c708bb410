// Collective agreement on failure: every PE ends a collective step with the same status and the same
// message, naming the PEs that failed and why. One small allreduce on the success path; the messages
// travel (one allgather) only when something failed.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace tshmemi {

/// Fixed-size record that crosses PEs on the failure path.
struct PeReport {
  static constexpr int kMaxFields = 7;
  int64_t fields[kMaxFields];
  int32_t status;
  char text[1020];  ///< room for a whole message: a binding's note, its C call and the refusal together
};
static_assert(sizeof(PeReport) == 1080, "PeReport crosses processes: keep its size fixed");

/// Fills a report from a status and message (a message longer than the report is cut at a word, marked "...").
PeReport make_report(Status status, const std::string &text, const int64_t *fields = nullptr, int n_fields = 0);

/// Gathers every PE's report (failure path only).
Status gather_reports(Bootstrap &boot, const PeReport &mine, std::vector<PeReport> *all);

/// "0", "0,2", "0-3,5": PE lists for messages.
std::string pe_list(const std::vector<int> &pes);

/// Ends a collective step: `local` is this PE's outcome (its message is the thread's last error when it
/// failed). When every PE succeeded, returns TSHMEM_SUCCESS after one allreduce. Otherwise every PE
/// returns the status of the lowest failing PE and the same message:
///   "<step> failed on PE 1: <PE 1's message>; PE 3: <PE 3's message>"
Status agree_on_status(Bootstrap &boot, Status local, const char *step);

}  // namespace tshmemi

namespace tshmemi {

/// One named value that every PE must hold identically (configuration validation at init).
struct AgreedField {
  const char *name;  ///< "TSHMEM_SYMMETRIC_SIZE"
  int64_t value;
  std::string shown;  ///< how to print this PE's value ("1073741824", "vmm")
};

/// Collective: one allreduce of min/max over the fields. On a mismatch every PE returns
/// TSHMEM_ERR_CONFIG with the same message listing, for each differing field, which PEs hold which value:
///   "<step>: configuration differs across PEs: TSHMEM_MEM_BACKEND: PEs 0,2-3 = vmm, PE 1 = shm"
Status agree_on_fields(Bootstrap &boot, const std::vector<AgreedField> &fields, const char *step);

}  // namespace tshmemi
