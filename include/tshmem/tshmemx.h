/*
 * tshmem extensions: initialisation attributes, stream-ordered host operations, run-time module
 * registration. Included by tshmem/tshmem.h; compiles as C and C++ without CUDA or MPI headers.
 */
#ifndef TSHMEM_TSHMEMX_H
#define TSHMEM_TSHMEMX_H

#include <stddef.h>
#include <stdint.h>

#include "tshmem/device/op_types.h"   /* TSHMEM_CMP_*, TSHMEM_SIGNAL_* (shared with the device API) */
#include "tshmem/device/team_types.h" /* team handles (shared with the device API) */
#include "tshmem/host_device_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque CUDA handles, layout-compatible with cudaStream_t / CUmodule, so that this header needs no CUDA. */
typedef struct CUstream_st *tshmemx_stream_t;
typedef struct CUmod_st *tshmemx_cumodule_t;

#define TSHMEMX_INIT_ATTR_MAGIC 0x74736d61u /* "tsma" */
#define TSHMEMX_INIT_ATTR_VERSION 1u

/** tshmemx_init_attr flags. */
enum {
  TSHMEMX_INIT_WITH_MPI_COMM = 1u << 0, /**< attr->mpi_comm points to the communicator to use. */
  TSHMEMX_INIT_NVSHMEM_ENV = 1u << 1,   /**< Also read NVSHMEM's name of a variable where the TSHMEM_ one is unset
                                             (src/env_defs.h lists them; the NVSHMEM compat headers pass this). */
};

/**
 * Initialisation attributes. Start from TSHMEMX_INIT_ATTR_INITIALIZER so that `size`, `magic` and
 * `version` are set: the library rejects an attribute it does not recognise instead of misreading it.
 */
typedef struct tshmemx_init_attr_v1 {
  size_t size;      /**< sizeof(tshmemx_init_attr_t) as the application was compiled. */
  uint32_t magic;   /**< TSHMEMX_INIT_ATTR_MAGIC. */
  uint32_t version; /**< TSHMEMX_INIT_ATTR_VERSION. */
  void *mpi_comm;   /**< With TSHMEMX_INIT_WITH_MPI_COMM: a pointer to an MPI_Comm (duplicated, not kept). */
} tshmemx_init_attr_t;

#define TSHMEMX_INIT_ATTR_INITIALIZER \
  { sizeof(tshmemx_init_attr_t), TSHMEMX_INIT_ATTR_MAGIC, TSHMEMX_INIT_ATTR_VERSION, NULL }

/**
 * Collective over the given communicator (or MPI_COMM_WORLD without TSHMEMX_INIT_WITH_MPI_COMM).
 * PE numbers are ranks in that communicator. Returns 0 on success.
 */
int tshmemx_init_attr(unsigned flags, tshmemx_init_attr_t *attr) __attribute__((visibility("default")));

#define TSHMEMX_BOOTSTRAP_CALLBACKS_MAGIC 0x74736362u /* "tscb" */
#define TSHMEMX_BOOTSTRAP_CALLBACKS_VERSION 1u

/**
 * The application's own collectives, for tshmemx_init_callbacks: how PEs started by another launcher than
 * mpirun/srun (torchrun and a torch.distributed process group, ...) initialise tshmem without MPI. Start from
 * TSHMEMX_BOOTSTRAP_CALLBACKS_INITIALIZER, then set every field after `version`.
 *
 * Both callbacks are collective over the n_pes PEs and return 0 on success (anything else fails the tshmem call
 * that needed them with TSHMEM_ERR_SYSTEM). tshmem calls them during tshmem_init and in every checked
 * collective (allocation, free, barriers), from the thread making that call, never two at once.
 */
typedef struct tshmemx_bootstrap_callbacks_v1 {
  size_t size;      /**< sizeof(tshmemx_bootstrap_callbacks_t) as the application was compiled. */
  uint32_t magic;   /**< TSHMEMX_BOOTSTRAP_CALLBACKS_MAGIC. */
  uint32_t version; /**< TSHMEMX_BOOTSTRAP_CALLBACKS_VERSION. */
  int rank;         /**< This PE's number in [0, n_pes): its PE number in tshmem. */
  int n_pes;        /**< The number of PEs. */
  /** Gathers `bytes` bytes of `in` from every PE into `out` (n_pes * bytes, ordered by rank). */
  int (*allgather)(const void *in, void *out, size_t bytes, void *user);
  /** Returns once every PE has called it. */
  int (*barrier)(void *user);
  void *user; /**< Passed to both callbacks. */
} tshmemx_bootstrap_callbacks_t;

#define TSHMEMX_BOOTSTRAP_CALLBACKS_INITIALIZER                                                                        \
  {                                                                                                                    \
    sizeof(tshmemx_bootstrap_callbacks_t), TSHMEMX_BOOTSTRAP_CALLBACKS_MAGIC, TSHMEMX_BOOTSTRAP_CALLBACKS_VERSION, -1, \
        0, NULL, NULL, NULL                                                                                            \
  }

/**
 * tshmemx_init_attr over the application's collectives instead of MPI (MPI is neither initialised nor needed).
 * Collective over the callbacks' PEs; `flags`: 0 or TSHMEMX_INIT_NVSHMEM_ENV. PEs of one host (same host name
 * and kernel boot id) form a node and reach each other by load and store. No off-node proxy runs over callbacks:
 * PEs of other nodes are unreachable, and every call that would reach one fails with TSHMEM_ERR_UNREACHABLE_PE
 * saying so (device code traps). tshmem_global_exit ends this process only (the launcher ends the others).
 * A callbacks struct without the initializer's size, magic and version, a rank outside [0, n_pes) or a NULL
 * callback fail with TSHMEM_ERR_INVALID_ARG on the PE that passed it, before any callback is called.
 */
int tshmemx_init_callbacks(unsigned flags, const tshmemx_bootstrap_callbacks_t *callbacks)
    __attribute__((visibility("default")));

/**
 * A note for the calling thread's next checked collective call (tshmem_malloc, _calloc, _align, tshmem_free,
 * tshmem_barrier_all, tshmem_barrier, the host-blocking collectives, tshmem_team_split_strided), for layers above
 * the C API that know more about a call than its bytes (a language binding's shape and element type):
 *  - `description` ("tshmem.empty(shape=(4, 8), dtype=float32)") is compared across PEs with the rest of the
 *    request, so PEs whose descriptions differ fail like PEs whose sizes differ (TSHMEM_ERR_ASYMMETRIC on every
 *    PE, nothing allocated), and it is named in front of the call in every message of the check;
 *  - `local_error`, when not NULL, is this PE's verdict that its call is invalid (an argument the layer above
 *    refused): the call still joins the check, and fails on every PE, this PE's message named (alone:
 *    TSHMEM_ERR_INVALID_ARG; beside PEs whose calls differ: TSHMEM_ERR_ASYMMETRIC), with nothing done anywhere.
 *    So a refused argument on one PE never leaves the others waiting in the collective.
 * Taken by that call; both NULL drops a note not yet taken (a call that failed before its check, e.g. before
 * tshmem_init). Not collective; per thread.
 */
void tshmemx_note_next_collective(const char *description, const char *local_error)
    __attribute__((visibility("default")));

/** The memory backend in use ("shm", "vmm", "ipc"), or NULL before init. */
const char *tshmemx_backend_name(void) __attribute__((visibility("default")));

/** Base address and size of this PE's symmetric heap (NULL/0 before init). */
void *tshmemx_heap_base(void) __attribute__((visibility("default")));
size_t tshmemx_heap_size(void) __attribute__((visibility("default")));
/**
 * Bytes of this PE's symmetric heap backed by memory now (0 before init). On `vmm` the heap's addresses are reserved
 * whole at init and device memory is created as tshmem_malloc/calloc/align reach it, so this starts small (tshmem's
 * own region and a first part) and grows with the allocations, the same on every PE; `ipc` and `shm` answer the
 * heap's size (`shm`: its file is sized whole, its pages cost when touched).
 */
size_t tshmemx_heap_backed_bytes(void) __attribute__((visibility("default")));

/**
 * The address at which this PE sees `pe`'s heap (the peer table slot), or NULL if `pe` is not reachable by
 * load/store. The own slot is the own heap base, never NULL.
 */
void *tshmemx_peer_base(int pe) __attribute__((visibility("default")));

/**
 * tshmem_ptr with reasons: 0 and in *out the address at which this PE loads and stores `pe`'s copy of the
 * `bytes` bytes at the symmetric address `dest` (dest itself for pe == my_pe); otherwise *out = NULL and
 * TSHMEM_ERR_INVALID_PE (pe outside [0, n_pes)), TSHMEM_ERR_INVALID_ARG (the range is not inside the symmetric heap
 * or one registered buffer) or TSHMEM_ERR_UNREACHABLE_PE (a PE of another node: which node, and whether put/get
 * reach it through the off-node proxy or why not), with the message. Not collective.
 */
int tshmemx_ptr_checked(const void *dest, size_t bytes, int pe, void **out) __attribute__((visibility("default")));

/**
 * How this PE reaches `pe`, decided once at init, as text in `text` (at most `text_bytes` bytes with the NUL):
 * "self", "node (loads and stores)", the off-node transport's path ("ucx direct (host heap registered with UCX,
 * ...)", "mpi staged (...)": TSHMEM_REMOTE_TRANSPORT), or "unreachable: <why>". Returns 0, or
 * TSHMEM_ERR_NOT_INITIALIZED / TSHMEM_ERR_INVALID_PE / TSHMEM_ERR_INVALID_ARG (text NULL or text_bytes 0) with the
 * message. Not collective.
 */
int tshmemx_peer_path(int pe, char *text, size_t text_bytes) __attribute__((visibility("default")));

/**
 * What the tshmem-info tool prints (build options, every variable, init steps, off-node proxy figures, backends,
 * topology, GPU peer access, multicast policy), as text or (json != 0) one JSON object. Writes at most `capacity`
 * bytes including the terminating NUL into `buffer` (NULL with capacity 0: measure) and returns the length of the
 * whole text, as snprintf does. Reads only; works before tshmem_init.
 */
size_t tshmemx_info(int json, char *buffer, size_t capacity) __attribute__((visibility("default")));

/**
 * What tshmem left on this host after a job was killed (the descriptor exchange's socket directories in $TMPDIR or
 * /tmp whose creating process is gone; the heaps themselves have no name), one path a line; removed when
 * remove != 0 (then each line says so). Buffer and return as tshmemx_info. Never touches a live job's files.
 */
size_t tshmemx_stale_files(int remove, char *buffer, size_t capacity) __attribute__((visibility("default")));

/** Number of PEs on this node and this PE's index among them. */
int tshmemx_local_pe(void) __attribute__((visibility("default")));
int tshmemx_local_n_pes(void) __attribute__((visibility("default")));

/** The CUDA device this PE drives, or -1 on the shm backend. */
int tshmemx_cuda_device(void) __attribute__((visibility("default")));

/** Stream-ordered put/get (GPU backends): enqueued on `stream`, complete when the stream reaches them. To a PE
 *  of another node the call first waits for the work already queued on the device, then goes through the
 *  off-node proxy as tshmem_putmem / tshmem_getmem do (the proxy is a host thread). */
int tshmemx_putmem_on_stream(void *dest, const void *src, size_t nbytes, int pe, tshmemx_stream_t stream)
    __attribute__((visibility("default")));
int tshmemx_getmem_on_stream(void *dest, const void *src, size_t nbytes, int pe, tshmemx_stream_t stream)
    __attribute__((visibility("default")));

/**
 * Put with signal, from the host: copies `nbytes` from local `src` to the symmetric `dest` on `pe`, then updates
 * the symmetric uint64_t `*sig_addr` on `pe` by `sig_op` with `signal` (TSHMEM_SIGNAL_SET = 0: the word becomes
 * `signal`; TSHMEM_SIGNAL_ADD = 1: `signal` is added atomically; tshmem/device/op_types.h). A PE that sees the
 * signal's update sees the data. Blocking: returns when the data and the signal are written at the target.
 * Fails like tshmem_putmem, and with TSHMEM_ERR_INVALID_ARG for another sig_op or a sig_addr that is not an
 * 8-byte-aligned word of the heap (nothing written). A PE of another node: TSHMEM_ERR_UNREACHABLE_PE.
 */
int tshmemx_putmem_signal(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal, int sig_op,
                          int pe) __attribute__((visibility("default")));
/** The same, stream-ordered (GPU backends): the data, then the signal, when `stream` reaches them. */
int tshmemx_putmem_signal_on_stream(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal,
                                    int sig_op, int pe, tshmemx_stream_t stream) __attribute__((visibility("default")));
/**
 * Waits on the host until this PE's symmetric uint64_t `*sig_addr` compares to `value` by `cmp` (TSHMEM_CMP_EQ,
 * NE, GT, LE, LT, GE = 0..5; tshmem/device/op_types.h), and stores the value that satisfied it in *found (may be
 * NULL). Bounded: after `timeout_ms` milliseconds (0: forever) it fails with TSHMEM_ERR_TIMEOUT naming the word,
 * the comparison and the last value seen. TSHMEM_ERR_INVALID_ARG for another cmp or a sig_addr that is not an
 * 8-byte-aligned word of the heap.
 */
int tshmemx_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t value, int64_t timeout_ms, uint64_t *found)
    __attribute__((visibility("default")));
/** Stream-ordered form (GPU backends): work queued on `stream` after this call runs once the comparison holds (a
 *  one-thread kernel polls the word; TSHMEM_WAIT_TIMEOUT_MS bounds it with a trap, as every device wait). */
int tshmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp, uint64_t value, tshmemx_stream_t stream)
    __attribute__((visibility("default")));

/** Fills the tshmem device state of a module loaded at run time (JIT code). Not collective. */
int tshmemx_cumodule_init(tshmemx_cumodule_t module) __attribute__((visibility("default")));

/* ==== Teams, NVLink multicast and collectives (src/nvls, src/coll; device side: tshmem/device/multimem.cuh,
 * tshmem/device/coll.cuh) ======================================================================== */

/* Teams: tshmem_team_t, TSHMEM_TEAM_WORLD, TSHMEMX_TEAM_NODE, TSHMEM_TEAM_INVALID and TSHMEM_MAX_TEAMS are defined
 * in tshmem/device/team_types.h (included above), which the device API shares. */

/** Options of a new team (OpenSHMEM's shmem_team_config_t). tshmem reads none of them: contexts do not exist. */
typedef struct tshmem_team_config {
  int num_contexts;
} tshmem_team_config_t;
#define TSHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/**
 * A new team of the parent's members start, start + stride, ..., start + (size - 1) * stride (indices in the
 * parent). Collective: every PE of the job calls it with the same arguments (the parent must span the job; the
 * checked rendezvous is job-wide), so PEs that disagree are named. Members get the new handle, the others
 * TSHMEM_TEAM_INVALID. 0 on success; otherwise -1 on every PE with the same error and no team: a bad argument
 * (size < 1, stride < 1, start or the last member outside the parent, new_team NULL), an unknown or destroyed
 * parent, a parent smaller than the job, or more than TSHMEM_MAX_TEAMS teams. config and config_mask are
 * accepted and ignored. Host only.
 */
int tshmem_team_split_strided(tshmem_team_t parent, int start, int stride, int size, const tshmem_team_config_t *config,
                              long config_mask, tshmem_team_t *new_team) __attribute__((visibility("default")));
/** Frees this PE's handle of a split team (local: no rendezvous, nothing to synchronise). The predefined teams,
 *  TSHMEM_TEAM_INVALID and a handle already destroyed are refused with an error; a destroyed handle is refused
 *  everywhere afterwards until a split reuses it. */
void tshmem_team_destroy(tshmem_team_t team) __attribute__((visibility("default")));

/** This PE's index in `team` and the team's size; -1 for an unknown team or before init. Host and kernels
 *  (host_device_names.cuh). */
int TSHMEMI_HD_NAME(team_my_pe)(tshmem_team_t team) __attribute__((visibility("default")));
int TSHMEMI_HD_NAME(team_n_pes)(tshmem_team_t team) __attribute__((visibility("default")));
/** The index in `dest_team` of the PE that is index `src_pe` of `src_team`; -1 when src_pe is outside
 *  [0, size of src_team) or that PE is not in dest_team (answers, no error), or for an unknown team or before
 *  init (with an error on the host). Not collective. Host and kernels (host_device_names.cuh). */
int TSHMEMI_HD_NAME(team_translate_pe)(tshmem_team_t src_team, int src_pe, tshmem_team_t dest_team)
    __attribute__((visibility("default")));
/** Barrier over `team` (quiet, then every member waits for the others). Host: blocking, through the symmetry
 *  check's rendezvous (see tshmemi_host_reduce below: the team must hold every PE of the job); 0 or an error.
 *  Kernels (c_coll.cuh): the thread form. One name on host and device in CUDA units. */
int TSHMEMI_HD_NAME(barrier)(tshmem_team_t team) __attribute__((visibility("default")));

/**
 * The multicast address of the symmetric object at `ptr` for `team`: a store through it reaches every
 * team member's copy, and multimem loads reduce over them. NULL when multicast is off (forbidden by
 * TSHMEM_DISABLE_NVLS / NVSHMEM_DISABLE_NVLS / NCCL_NVLS_ENABLE=0, unsupported, or another backend than
 * vmm), when `ptr` is outside the heap, or when the team spans more than this node. Not collective.
 */
void *tshmemx_mc_ptr(tshmem_team_t team, const void *ptr) __attribute__((visibility("default")));

/** "on", or why multicast is off ("forbidden by TSHMEM_DISABLE_NVLS=1", ...); NULL before init. */
const char *tshmemx_mc_status(void) __attribute__((visibility("default")));

/**
 * tshmemx_mc_ptr with reasons: 0 and the multicast address of the `bytes` at `ptr` for `team` in *out; otherwise
 * *out = NULL and TSHMEM_ERR_CONFIG naming the rule that forbids multicast (the policy: TSHMEM_DISABLE_NVLS,
 * NVSHMEM_DISABLE_NVLS, NCCL_NVLS_ENABLE, no device support, a backend other than vmm), or a team it cannot serve
 * (more than this node, a split team), or TSHMEM_ERR_INVALID_ARG (the range is outside the multicast region).
 */
int tshmemx_mc_ptr_checked(tshmem_team_t team, const void *ptr, size_t bytes, void **out)
    __attribute__((visibility("default")));

/**
 * Makes an application's buffer symmetric (NVSHMEM's nvshmemx_buffer_register_symmetric). Collective: every PE
 * calls with its own buffer of the same `size`. The buffer must be a CUDA VMM allocation of this PE's device
 * (cuMemCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR in requestedHandleTypes, mapped with cuMemMap), `buf`
 * the start of its mapping, `size` and `buf` multiples of the allocation granularity; `flags` must be 0. Returns the
 * buffer's symmetric address: the same offset from the heap base on every PE, in a registration range that follows
 * the heap (as large as the heap), so device put/get/p/g/atomics, tshmem_ptr and host put/get reach every node
 * PE's buffer through it (PEs of other nodes: not through the proxy). Checked like tshmem_malloc: a bad argument,
 * memory that is not such an allocation, a buffer overlapping one already registered, a full registration range,
 * another backend than vmm, or PEs whose calls differ (size, order) give NULL on every PE with the same error
 * naming the PEs, and nothing registered anywhere.
 */
void *tshmemx_buffer_register_symmetric(void *buf, size_t size, int flags) __attribute__((visibility("default")));
/** Collective: unmaps the buffer registered at symmetric address `addr` (as returned, with its `size`) from every
 *  view on every PE; the application then frees its allocation. An address that is no registration, or a size
 *  that differs, fails on every PE with the same error. 0 on success. */
int tshmemx_buffer_unregister_symmetric(void *addr, size_t size) __attribute__((visibility("default")));

/** Element types of the reducing collectives. */
typedef enum tshmemx_dtype {
  TSHMEMX_DTYPE_FLOAT = 0,    /**< float (f32) */
  TSHMEMX_DTYPE_HALF = 1,     /**< IEEE binary16 (f16) */
  TSHMEMX_DTYPE_BFLOAT16 = 2, /**< bfloat16 */
  TSHMEMX_DTYPE_INT32 = 3,    /**< int32_t */
  TSHMEMX_DTYPE_INT64 = 4,    /**< int64_t */
  TSHMEMX_DTYPE_DOUBLE = 5,   /**< double (f64) */
  TSHMEMX_DTYPE_UINT32 = 6,   /**< uint32_t (min/max compare unsigned; sum/prod wrap like int32) */
  TSHMEMX_DTYPE_UINT64 = 7,   /**< uint64_t */
  TSHMEMX_NUM_DTYPES          /**< Number of types; not a type. */
} tshmemx_dtype_t;

/** Reduction operators. */
typedef enum tshmemx_redop {
  TSHMEMX_OP_SUM = 0,
  TSHMEMX_OP_MIN = 1,
  TSHMEMX_OP_MAX = 2,
  TSHMEMX_OP_PROD = 3,
  TSHMEMX_OP_AND = 4, /**< bitwise; integer types only (and OR, XOR) */
  TSHMEMX_OP_OR = 5,
  TSHMEMX_OP_XOR = 6,
  TSHMEMX_NUM_OPS /**< Number of operators; not an operator. */
} tshmemx_redop_t;

/**
 * Stream-ordered collectives on `team`, launched on `stream` with no host synchronisation inside, so they
 * can be captured in a CUDA graph. Rules common to all of them:
 *  - every team member calls with the same counts, types, operator, root and the same symmetric
 *    objects (same heap offsets); calls are made in the same order on every PE, one at a time per PE;
 *  - `dst` and `src` lie in the symmetric heap and are aligned to the element size; `src` is ready when
 *    the stream reaches the call, `dst` is complete (on this PE) when the stream passes it;
 *  - arguments are checked on the host before anything is launched: count 0, a misaligned or non-heap
 *    buffer, overlapping dst/src where not in place, an unknown dtype/op/team or root return
 *    TSHMEM_ERR_INVALID_ARG with a message naming the call and the argument. The check is local: PEs that
 *    pass the same arguments fail alike and none launches; PEs that diverge (a usage error) make the others
 *    wait in the kernel, where TSHMEM_WAIT_TIMEOUT_MS turns the wait into a trap with a message;
 *  - reductions accumulate in team-index order (0, 1, ..., n-1): floats in f32 (double in f64), rounded once to the
 * element type (f16/bf16 round to nearest even), integers with two's-complement wrap; min/max are exact. The result is
 * therefore identical on every PE and from run to run. With multicast on, sums of more than two PEs may differ from
 * this order in the last bit (the switch's order is not specified). Sizes: all-reduce chooses the LL one-shot (every PE
 * pushes its buffer, flag in data, into every peer's internal area and reduces what arrives: no barrier) up to
 * TSHMEMX_ALLREDUCE_ONESHOT_MAX bytes when it fits that area, two-shot (reduce-scatter + all-gather over NVLink; at 2
 * PEs out of place by stores only) above. Launches: on compute capability 9.0 and later, programmatic dependent
 * launches (TSHMEM_COLL_PDL=0: ordinary ones). The kernel waits for all earlier work on the stream before it touches
 * memory, so the ordering is exactly a plain launch's; only the launch latency overlaps the previous kernel.
 */
#define TSHMEMX_ALLREDUCE_ONESHOT_MAX (512u * 1024u)
/* Across nodes (TSHMEM_TEAM_WORLD of a job over several nodes) every collective below runs through NVLink inside a
 * node and the off-node proxy between nodes, staged through the last 1.06 MiB of the heap (refused as a buffer),
 * with the same results in the same order. Without the proxy (MPI below MPI_THREAD_MULTIPLE) they fail with
 * TSHMEM_ERR_UNREACHABLE_PE and the reason. TSHMEMX_TEAM_NODE stays on the node. */

/** dst[k] = op over team PEs of src[k], k < count. In place (dst == src) allowed. */
int tshmemx_allreduce_on_stream(tshmem_team_t team, void *dst, const void *src, size_t count, tshmemx_dtype_t dtype,
                                tshmemx_redop_t op, tshmemx_stream_t stream) __attribute__((visibility("default")));
/** dst[k] = op over team PEs of src[my_index * count + k], k < count (src holds n_pes * count elements). */
int tshmemx_reduce_scatter_on_stream(tshmem_team_t team, void *dst, const void *src, size_t count,
                                     tshmemx_dtype_t dtype, tshmemx_redop_t op, tshmemx_stream_t stream)
    __attribute__((visibility("default")));
/** fcollect: dst[i * nbytes ...] = PE i's src[0 .. nbytes) for every team index i. */
int tshmemx_allgather_on_stream(tshmem_team_t team, void *dst, const void *src, size_t nbytes, tshmemx_stream_t stream)
    __attribute__((visibility("default")));
/** dst[i * nbytes ...] on PE j = PE i's src[j * nbytes ...], for every team indices i, j. */
int tshmemx_alltoall_on_stream(tshmem_team_t team, void *dst, const void *src, size_t nbytes, tshmemx_stream_t stream)
    __attribute__((visibility("default")));
/** dst[0 .. nbytes) on every PE = src on team index `root` (the root's dst too; dst == src allowed). */
int tshmemx_broadcast_on_stream(tshmem_team_t team, void *dst, const void *src, size_t nbytes, int root,
                                tshmemx_stream_t stream) __attribute__((visibility("default")));
/** Every team member's stream reaches the barrier before any passes it; earlier writes are visible. */
int tshmemx_barrier_on_stream(tshmem_team_t team, tshmemx_stream_t stream) __attribute__((visibility("default")));
/** tshmemx_barrier_on_stream(TSHMEM_TEAM_WORLD, stream) (NVSHMEM's name); the sync form is the same barrier (a
 *  device barrier always makes the callers' earlier writes visible). */
int tshmemx_barrier_all_on_stream(tshmemx_stream_t stream) __attribute__((visibility("default")));
int tshmemx_sync_all_on_stream(tshmemx_stream_t stream) __attribute__((visibility("default")));

/**
 * Host-blocking collectives: the on-stream collective above on an internal stream, waited for. Every member calls
 * with the same arguments; the call goes through the symmetry check first (one job-wide rendezvous, like
 * tshmem_malloc), so members whose calls differ (collective, team, count, type, operator, root, dst offset) or
 * whose arguments fail the on-stream checks get, on every PE, the same error naming the divergent PEs, and
 * nothing is launched. The rendezvous is job-wide, so the team must hold every PE of the job (a smaller team is
 * refused on each caller before any waiting). The device is synchronised first (src written by earlier kernels
 * is complete). Typed names: tshmem_<T>_<op>_reduce, tshmem_<T>_fcollect/alltoall/broadcast (tshmemx_typed.h,
 * and in CUDA units one name on host and device: tshmem/device/c_coll.cuh), tshmem_barrier(team) (tshmem.h).
 */
int tshmemi_host_reduce(tshmem_team_t team, void *dst, const void *src, size_t count, tshmemx_dtype_t dtype,
                        tshmemx_redop_t op) __attribute__((visibility("default")));
/* A binding that raises an exception for every failure (tshmem's Python package) reports errors itself: with `on`,
 * the library logs them at info level instead of printing each as a warning too. */
void tshmemi_errors_reported_by_caller(int on) __attribute__((visibility("default")));
int tshmemi_host_reduce_scatter(tshmem_team_t team, void *dst, const void *src, size_t count, tshmemx_dtype_t dtype,
                                tshmemx_redop_t op) __attribute__((visibility("default")));
int tshmemi_host_fcollect(tshmem_team_t team, void *dst, const void *src, size_t nbytes)
    __attribute__((visibility("default")));
int tshmemi_host_alltoall(tshmem_team_t team, void *dst, const void *src, size_t nbytes)
    __attribute__((visibility("default")));
int tshmemi_host_broadcast(tshmem_team_t team, void *dst, const void *src, size_t nbytes, int root)
    __attribute__((visibility("default")));

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TSHMEM_TSHMEMX_H */
