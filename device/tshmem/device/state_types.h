/*
 * The device state: everything a kernel needs to reach another PE, in one trivially-copyable struct.
 *
 * One struct, two deliveries: every translation unit that includes the device API reads a copy of it (its own
 * `__constant__` copy without -rdc; with -rdc the binary's one `__constant__` copy, from libtshmem_device.a;
 * state.cuh) that tshmem fills at init and on registration, and tshmemx_device_view() returns the same bytes for
 * kernels that take it as a `__grid_constant__` argument. Plain C so that the host runtime builds the struct
 * without CUDA; one builder on the host writes it (src/state/device_state_builder.h).
 *
 * ABI: `version` is the first field and `size` the second; a mismatch between the headers an application
 * was compiled with and the library is an error at registration, naming both values.
 */
#ifndef TSHMEM_DEVICE_STATE_TYPES_H
#define TSHMEM_DEVICE_STATE_TYPES_H

#include <stddef.h>
#include <stdint.h>

/** Largest number of PEs the constant-memory peer table holds. init fails clearly above it. */
#define TSHMEM_MAX_PES 1024

/** Bump when the layout of tshmemi_device_state changes. */
#define TSHMEM_DEVICE_STATE_LAYOUT 1u

enum tshmemi_state_flags {
  TSHMEMI_STATE_INITIALIZED = 1u << 0, /**< Filled by a live tshmem_init. */
  TSHMEMI_STATE_MULTICAST = 1u << 1,   /**< mc_base maps an NVLink multicast object. */
  TSHMEMI_STATE_GPU_HEAP = 1u << 2,    /**< The heap is device memory (vmm, ipc), not host shm. */
  /** The job spans nodes but the off-node proxy is not running (MPI without MPI_THREAD_MULTIPLE). */
  TSHMEMI_STATE_PROXY_UNAVAILABLE = 1u << 3,
  /** For the fill callbacks, not for kernels: load every kernel of the unit now (the off-node proxy runs and
   *  CUDA loads kernels lazily; src/cuda/module_loading.h says why). */
  TSHMEMI_STATE_LOAD_KERNELS = 1u << 4,
};

/** Entries of the team table; equals TSHMEM_MAX_TEAMS (checked in src/coll/team.cc). */
#define TSHMEMI_TEAM_SLOTS 32

/** One team as this PE sees it: member k is PE start + k * stride; my_index -1 when this PE is no member.
 *  size 0: a free handle; size -1: TSHMEMX_TEAM_NODE whose PEs are not evenly strided (no such form). */
typedef struct tshmemi_team_entry {
  int32_t start;
  int32_t stride;
  int32_t size;
  int32_t my_index;
} tshmemi_team_entry;

/* The off-node proxy's channel and its device-memory side (proxy_types.h). */
struct tshmemi_proxy_channel;
struct tshmemi_proxy_device_side;

/** Written by one builder on the host (src/state/device_state_builder.cc); read by every kernel. */
typedef struct tshmemi_device_state {
  uint32_t version;                 /**< (TSHMEM_DEVICE_STATE_LAYOUT << 16) | (sizeof & 0xffff): first, always. */
  uint32_t size;                    /**< sizeof(tshmemi_device_state) as compiled: second, always. */
  int32_t my_pe;                    /**< This PE, in [0, n_pes). */
  int32_t n_pes;                    /**< Number of PEs in the job. */
  uint32_t flags;                   /**< tshmemi_state_flags. */
  int32_t local_n_pes;              /**< PEs on this node. */
  uint64_t heap_base;               /**< This PE's heap base (equals peer_base[my_pe]). */
  uint64_t heap_size;               /**< Bytes in every PE's heap (symmetric). */
  uint64_t mc_base;                 /**< Multicast mapping of the heap, 0 without multicast. */
  uint64_t wait_timeout_ns;         /**< TSHMEM_WAIT_TIMEOUT_MS in ns: a wait longer than this traps; 0 = never. */
  const uint64_t *peer_base_global; /**< Device-global mirror of peer_base: per-lane PE lookups __ldg it. */
  struct tshmemi_proxy_channel *proxy_channel; /**< This PE's off-node proxy channel (device address), NULL without. */
  const tshmemi_team_entry *team_table;        /**< This PE's team table (TSHMEMI_TEAM_SLOTS entries), NULL without. */
  uint64_t symmetric_span; /**< Bytes from heap_base that are symmetric: the heap and, after it, the range where
                                registered buffers are mapped (tshmemx_buffer_register_symmetric); 0 = heap_size. */
  struct tshmemi_proxy_device_side *proxy_device_side; /**< The channel's device-memory side, NULL without. */
  uint64_t peer_base[TSHMEM_MAX_PES]; /**< Where this PE sees each PE's heap; 0 = no load/store path. */
} tshmemi_device_state;

#ifdef __cplusplus
static_assert(offsetof(tshmemi_device_state, version) == 0, "version must be the first field");
static_assert(offsetof(tshmemi_device_state, size) == 4, "size must be the second field");
static_assert(offsetof(tshmemi_device_state, heap_base) == 24, "layout frozen: bump TSHMEM_DEVICE_STATE_LAYOUT");
static_assert(offsetof(tshmemi_device_state, proxy_channel) == 64 && offsetof(tshmemi_device_state, team_table) == 72 &&
                  offsetof(tshmemi_device_state, symmetric_span) == 80 &&
                  offsetof(tshmemi_device_state, proxy_device_side) == 88,
              "layout frozen: bump TSHMEM_DEVICE_STATE_LAYOUT");
static_assert(offsetof(tshmemi_device_state, peer_base) == 96, "layout frozen: bump TSHMEM_DEVICE_STATE_LAYOUT");
static_assert(sizeof(tshmemi_device_state) == 96 + 8 * TSHMEM_MAX_PES, "layout frozen: bump the layout");
#endif

#define TSHMEMI_DEVICE_STATE_VERSION \
  ((TSHMEM_DEVICE_STATE_LAYOUT << 16) | ((uint32_t)sizeof(tshmemi_device_state) & 0xffffu))

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Fill callback registered by every translation unit that includes the device API (by every binary under
 * -rdc): copies `state` into that unit's (binary's) own copy on CUDA device `cuda_device`, through that unit's
 * CUDA runtime. Returns a cudaError_t value (0 on success).
 */
typedef int (*tshmemi_state_fill_fn)(int cuda_device, const tshmemi_device_state *state);

/**
 * Records a unit's fill callback (called from a static initializer: makes no CUDA call). If tshmem is
 * already initialised, the copy is filled at once. `version`/`size` are what the unit was compiled with; a
 * mismatch is recorded as an error that tshmem_init (or this call, if init already ran) reports.
 * Returns a token for tshmemi_unregister_device_state (a unit in a shared library unregisters on unload).
 */
__attribute__((visibility("default"))) void *tshmemi_register_device_state(tshmemi_state_fill_fn fill, uint32_t version,
                                                                           uint32_t size);
__attribute__((visibility("default"))) void tshmemi_unregister_device_state(void *token);

/** Loads every kernel of the module that holds `cu_function` (a CUfunction of the calling unit, from its own
 *  runtime's cudaGetFuncBySymbol). Called by fill callbacks when the state carries TSHMEMI_STATE_LOAD_KERNELS;
 *  a failure is logged, never fatal. */
__attribute__((visibility("default"))) void tshmemi_load_unit_kernels(void *cu_function);

/** A copy of the live device state (for by-value delivery); all-zero before init. */
__attribute__((visibility("default"))) int tshmemx_device_view(tshmemi_device_state *out);

#ifdef __cplusplus
}
#endif

#endif /* TSHMEM_DEVICE_STATE_TYPES_H */
