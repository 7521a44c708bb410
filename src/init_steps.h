// The steps of tshmem_init, named once, in order, and the fault-injection switch that makes one of them
// fail on chosen PEs (TSHMEM_DEBUG_FAIL, for the reliability tests).
//
// Every step ends in agree_on_step: a collective agreement, so a failure on any subset of PEs is the
// same error on every PE ("tshmem_init: <what> [step <name>] failed on PE 1: ..."), and every PE then
// runs the same teardown. Steps that do not apply to a configuration (the GPU on shm, say) still agree,
// with nothing to report, so every step can be made to fail on every backend.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

// X(enumerator, name, what the step does)
// clang-format off
#define TSHMEM_INIT_STEP_LIST(X)                                                                   \
  X(kEnv, "env", "reading the environment")                                                        \
  X(kBackendChoice, "backend-choice", "choosing the memory backend")                               \
  X(kConfig, "config", "checking that the configuration matches on every PE")                      \
  X(kGpu, "gpu", "selecting the GPU (vmm, ipc)")                                                   \
  X(kBackend, "backend", "creating the memory backend")                                            \
  X(kHeapOwn, "heap-own", "creating this PE's heap")                                               \
  X(kHeapPeers, "heap-peers", "mapping the node-local peers' heaps")                               \
  X(kPeerTable, "peer-table", "building the peer table")                                           \
  X(kReservedRegion, "reserved-region", "clearing tshmem's reserved heap region")                  \
  X(kHostRma, "host-rma", "exposing the heap to other nodes (shm on several nodes)")               \
  X(kDeviceState, "device-state", "filling the device state (vmm, ipc)")                           \
  X(kNvls, "nvls", "deciding on NVLink multicast")                                                 \
  X(kReady, "ready", "the closing barrier")
// clang-format on

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

/// Ends an init step on every PE: applies the armed fault to `local` on the PEs it selects, then agrees.
/// `detail` ("shm backend") is added to the step's text when given.
Status agree_on_step(Bootstrap &boot, InitStep step, Status local, const char *detail = nullptr);

}  // namespace tshmemi
