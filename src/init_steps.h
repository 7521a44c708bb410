// The steps of tshmem_init, named once, in order, and the fault-injection switch that makes one of them
// fail on chosen PEs (TSHMEM_DEBUG_FAIL, for the reliability tests).
//
// Every step runs through run_step, which ends in a collective agreement, so a failure on any subset of
// PEs is the same error on every PE ("tshmem_init: <what> [step <name>] failed on PE 1: ..."), and every PE then
// runs the same teardown. Steps that do not apply to a configuration (the GPU on shm, say) still agree,
// with nothing to report, so every step can be made to fail on every backend.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "init_step_list.h"

namespace tshmemi {

enum class InitStep {
#define TSHMEM_INIT_STEP_ENUM(ID, NAME, WHAT) ID,
  TSHMEM_INIT_STEP_LIST(TSHMEM_INIT_STEP_ENUM)
#undef TSHMEM_INIT_STEP_ENUM
      kCount
};

const char *init_step_name(InitStep step);  ///< "heap-own"
const char *init_step_what(InitStep step);  ///< "creating this PE's heap"

/// A parsed TSHMEM_DEBUG_FAIL: which step, on which PEs, and whether the PEs fail or pause there.
struct FaultSpec {
  int step = -1;                         ///< an InitStep, or -1 when the switch is off
  bool all_but = false;                  ///< the PEs are every PE except `pes`
  std::vector<std::pair<int, int>> pes;  ///< inclusive ranges
  bool pause = false;                    ///< pause (until killed) instead of failing
  std::string text;                      ///< as written, for messages
  bool selects(int pe, int n_pes) const;
};

/// Parses "<step>:<pes>[:pause]", <pes> = all | 0,2-3 | all-but-0 (empty text: off). On a malformed value
/// returns TSHMEM_ERR_CONFIG naming `variable`, the value and the rule.
Status parse_fault_spec(const char *variable, const std::string &text, FaultSpec *out);

/// Arms the switch for this init, once the PE number is known; fails (TSHMEM_ERR_CONFIG) when the
/// spec names a PE that does not exist. disarm_faults() ends it (init succeeded or failed).
Status arm_faults(const FaultSpec &spec, int my_pe, int n_pes);
void disarm_faults();

/// This PE's armed fault for `step`: after pausing when the fault says so, an injected failure (set as the
/// last error); TSHMEM_SUCCESS when no fault is armed for this step on this PE.
Status injected_fault(Bootstrap &boot, InitStep step);

/// For the kill tests: pauses here, inside the step's work, when TSHMEM_DEBUG_FAIL pauses at `step` on this PE (where
/// the step holds what a kill must not leave behind: the descriptor exchange's sockets); the step's run_step then
/// fails without pausing again.
void pause_if_armed(Bootstrap &boot, InitStep step);

/// Ends an init step on every PE: agrees on `local`. `detail` ("shm backend") is added to the step's text.
Status agree_on_step(Bootstrap &boot, InitStep step, Status local, const char *detail = nullptr);

/// Runs one init step: this PE's `work` (a Status()), unless a fault is armed here for the step; then
/// every PE agrees. `work` must be local (no collective call): a PE with a fault skips it. An injected fault replaces
/// the work, so the PE fails holding what a real failure of the step leaves (none of the step's work done), and the
/// others hold the step's results.
template <class Work>
Status run_step(Bootstrap &boot, InitStep step, Work &&work, const char *detail = nullptr) {
  Status local = injected_fault(boot, step);
  if (local == TSHMEM_SUCCESS) local = work();
  return agree_on_step(boot, step, local, detail);
}

}  // namespace tshmemi
