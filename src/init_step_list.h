// The steps of tshmem_init, in order, once: TSHMEM_INIT_STEP_LIST(X). A macro-only header, so the
// reliability tests can walk the same list (init_steps.h has the rest).
#pragma once

// X(enumerator, name, what the step does)
// clang-format off
#define TSHMEM_INIT_STEP_LIST(X)                                                                   \
  X(kEnv, "env", "reading the environment")                                                        \
  X(kBackendChoice, "backend-choice", "choosing the memory backend")                               \
  X(kConfig, "config", "checking that the configuration matches on every PE")                      \
  X(kGpu, "gpu", "selecting the GPU (vmm, ipc)")                                                   \
  X(kBackend, "backend", "creating the memory backend")                                            \
  X(kHeapOwn, "heap-own", "creating this PE's heap")                                               \
  X(kHeapExchange, "heap-exchange", "exchanging heap handles with the node-local peers")         \
  X(kHeapPeers, "heap-peers", "mapping the node-local peers' heaps")                               \
  X(kPeerTable, "peer-table", "building the peer table")                                           \
  X(kReservedRegion, "reserved-region", "clearing tshmem's reserved heap region")                  \
  X(kProxy, "proxy", "starting the off-node proxy (a job on several nodes)")                       \
  X(kDeviceState, "device-state", "filling the device state (vmm, ipc)")                           \
  X(kNvls, "nvls", "deciding on NVLink multicast")                                                 \
  X(kReady, "ready", "the closing barrier")
// clang-format on
