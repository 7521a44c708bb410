#include "init_steps.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bootstrap/agree.h"

namespace tshmemi {
namespace {

struct StepRow {
  const char *name;
  const char *what;
};
constexpr StepRow kSteps[] = {
#define TSHMEM_INIT_STEP_ROW(ID, NAME, WHAT) {NAME, WHAT},
    TSHMEM_INIT_STEP_LIST(TSHMEM_INIT_STEP_ROW)
#undef TSHMEM_INIT_STEP_ROW
};
static_assert(sizeof(kSteps) / sizeof(kSteps[0]) == static_cast<size_t>(InitStep::kCount), "one row per step");

// A paused PE waits this long for the test to kill it, then fails the step (no orphan lives forever).
constexpr int kPauseSeconds = 300;

struct ArmedFault {
  FaultSpec spec;
  bool selects_me = false;
  bool paused = false;  ///< paused once already (pause_if_armed): the step then fails without a second pause
};
ArmedFault g_armed;  // init runs on one thread; armed only while it runs

std::string all_step_names() {
  std::string out;
  for (const StepRow &row : kSteps) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

bool parse_pe_number(const std::string &text, int *out) {
  if (text.empty() || text.size() > 6) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  *out = std::atoi(text.c_str());
  return true;
}

// "0,2-3" into inclusive ranges.
bool parse_pe_ranges(const std::string &text, std::vector<std::pair<int, int>> *out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const size_t dash = item.find('-');
    int first = 0, last = 0;
    if (dash == std::string::npos) {
      if (!parse_pe_number(item, &first)) return false;
      last = first;
    } else if (!parse_pe_number(item.substr(0, dash), &first) || !parse_pe_number(item.substr(dash + 1), &last) ||
               last < first) {
      return false;
    }
    out->push_back({first, last});
    start = comma + 1;
  }
  return true;
}

}  // namespace

const char *init_step_name(InitStep step) { return kSteps[static_cast<size_t>(step)].name; }
const char *init_step_what(InitStep step) { return kSteps[static_cast<size_t>(step)].what; }

bool FaultSpec::selects(int pe, int n_pes) const {
  if (step < 0 || pe < 0 || pe >= n_pes) return false;
  bool listed = pes.empty();  // "all"
  for (const auto &range : pes) listed = listed || (pe >= range.first && pe <= range.second);
  return all_but ? !listed : listed;
}

Status parse_fault_spec(const char *variable, const std::string &text, FaultSpec *out) {
  *out = FaultSpec{};
  if (text.empty()) return TSHMEM_SUCCESS;
  auto malformed = [&](const std::string &why) {
    return set_error(TSHMEM_ERR_CONFIG,
                     "%s='%s': %s (expected <step>:<pes>[:pause], <pes> = all, 0,2-3 or all-but-0; steps: %s)",
                     variable, text.c_str(), why.c_str(), all_step_names().c_str());
  };
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return malformed("no ':' between the step and the PEs");
  FaultSpec spec;
  spec.text = text;
  const std::string step = text.substr(0, colon);
  for (size_t i = 0; i < static_cast<size_t>(InitStep::kCount); ++i)
    if (step == kSteps[i].name) spec.step = static_cast<int>(i);
  if (spec.step < 0) return malformed("unknown step '" + step + "'");
  std::string pes = text.substr(colon + 1);
  const size_t mode = pes.find(':');
  if (mode != std::string::npos) {
    if (pes.substr(mode + 1) != "pause") return malformed("unknown action '" + pes.substr(mode + 1) + "'");
    spec.pause = true;
    pes.resize(mode);
  }
  if (pes == "all") {
    // an empty list selects every PE
  } else if (pes.rfind("all-but-", 0) == 0) {
    spec.all_but = true;
    if (!parse_pe_ranges(pes.substr(8), &spec.pes)) return malformed("bad PE list '" + pes.substr(8) + "'");
  } else if (!parse_pe_ranges(pes, &spec.pes)) {
    return malformed("bad PE list '" + pes + "'");
  }
  *out = spec;
  return TSHMEM_SUCCESS;
}

Status arm_faults(const FaultSpec &spec, int my_pe, int n_pes) {
  g_armed = ArmedFault{};
  if (spec.step < 0) return TSHMEM_SUCCESS;
  for (const auto &range : spec.pes)
    if (range.second >= n_pes)
      return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_DEBUG_FAIL='%s': PE %d does not exist (%d PEs)", spec.text.c_str(),
                       range.second, n_pes);
  g_armed.spec = spec;
  g_armed.selects_me = spec.selects(my_pe, n_pes);
  return TSHMEM_SUCCESS;
}

void disarm_faults() { g_armed = ArmedFault{}; }

void pause_if_armed(Bootstrap &boot, InitStep step) {
  if (!g_armed.selects_me || g_armed.spec.step != static_cast<int>(step) || !g_armed.spec.pause || g_armed.paused)
    return;
  g_armed.paused = true;
  std::fprintf(stderr, "tshmem: PE %d (pid %d) paused at init step %s (TSHMEM_DEBUG_FAIL=%s)\n", boot.rank(),
               static_cast<int>(getpid()), init_step_name(step), g_armed.spec.text.c_str());
  std::fflush(stderr);
  for (int i = 0; i < kPauseSeconds; ++i) sleep(1);
}

Status injected_fault(Bootstrap &boot, InitStep step) {
  if (!g_armed.selects_me || g_armed.spec.step != static_cast<int>(step)) return TSHMEM_SUCCESS;
  if (g_armed.spec.pause && !g_armed.paused) {
    // For the kill tests: the line says where this PE stands; the test kills the job while it waits.
    std::fprintf(stderr, "tshmem: PE %d (pid %d) paused at init step %s (TSHMEM_DEBUG_FAIL=%s)\n", boot.rank(),
                 static_cast<int>(getpid()), init_step_name(step), g_armed.spec.text.c_str());
    std::fflush(stderr);
    for (int i = 0; i < kPauseSeconds; ++i) sleep(1);
  }
  return set_error(TSHMEM_ERR_INTERNAL, "injected by TSHMEM_DEBUG_FAIL=%s", g_armed.spec.text.c_str());
}

Status agree_on_step(Bootstrap &boot, InitStep step, Status local, const char *detail) {
  const std::string text = format("tshmem_init: %s%s%s%s [step %s]", init_step_what(step), detail ? " (" : "",
                                  detail ? detail : "", detail ? ")" : "", init_step_name(step));
  return agree_on_status(boot, local, text.c_str());
}

}  // namespace tshmemi
