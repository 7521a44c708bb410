/*
 * tshmem — GPU-initiated communication in the NVSHMEM style.
 *
 * The host C API, with OpenSHMEM names. Every PE is one process driving one GPU (or, on the `shm`
 * backend, plain host memory). Collective calls (init, malloc & co., free, barrier_all) must be made by
 * every PE in the same order; tshmem checks that they are and reports a divergence on every PE.
 *
 * Errors: calls that return `int` return 0 on success and a `tshmem_status_t` otherwise; calls that return
 * a pointer return NULL. In both cases `tshmemx_last_error_code()` and `tshmemx_last_error()` describe the
 * last failure on the calling thread (the call, the values and the rule that was broken).
 *
 * This header compiles as C and C++. In CUDA units (nvcc) the eight names that exist on the host and in
 * kernels (tshmem_my_pe, tshmem_n_pes, tshmem_ptr, tshmem_putmem, tshmem_getmem, tshmem_quiet,
 * tshmem_barrier_all, tshmem_sync_all) are `static inline __host__ __device__` functions of
 * tshmem/device/host_device_names.cuh, included at the end: on the host they call the library's
 * tshmemi_host_* twins, in kernels the device API. The exported symbols keep their names for C, dlsym and
 * FFIs. Define TSHMEM_HOST_NAMES_ONLY before including to keep plain host declarations in a CUDA unit.
 */
#ifndef TSHMEM_TSHMEM_H
#define TSHMEM_TSHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "tshmem/host_device_api.h" /* TSHMEMI_HD_NAME: one name on host and device */
#include "tshmem/version.h"

#if defined(_WIN32)
#error "tshmem supports Linux only"
#endif

#define TSHMEM_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes. 0 is success; every other value names one class of failure. */
typedef enum tshmem_status {
  TSHMEM_SUCCESS = 0,
  TSHMEM_ERR_ASYMMETRIC = 1,      /**< PEs made different collective calls (size, order, alignment, kind). */
  TSHMEM_ERR_INVALID_PE = 2,      /**< A PE outside [0, n_pes). */
  TSHMEM_ERR_INVALID_ARG = 3,     /**< An argument breaks a documented rule. */
  TSHMEM_ERR_OUT_OF_MEMORY = 4,   /**< The symmetric heap (or host memory) is exhausted. */
  TSHMEM_ERR_NOT_INITIALIZED = 5, /**< Called before tshmem_init or after tshmem_finalize. */
  TSHMEM_ERR_CONFIG = 6,          /**< Environment or cross-PE configuration is invalid or inconsistent. */
  TSHMEM_ERR_CUDA = 7,            /**< A CUDA runtime or driver call failed. */
  TSHMEM_ERR_MPI = 8,             /**< An MPI call failed. */
  TSHMEM_ERR_SYSTEM = 9,          /**< An operating-system call failed (shm_open, mmap, sockets). */
  TSHMEM_ERR_UNREACHABLE_PE = 10, /**< The PE is valid but on another node, and no off-node proxy runs. */
  TSHMEM_ERR_INTERNAL = 11,       /**< A broken invariant inside tshmem: please report it. */
  TSHMEM_ERR_TIMEOUT = 12,        /**< A wait for the off-node proxy or another PE passed its bound. */
  TSHMEM_NUM_STATUS               /**< Number of codes; not a status. */
} tshmem_status_t;

/* ---------------------------------------------------------------------------------------------------- */
/* Library setup and query                                                                              */
/* ---------------------------------------------------------------------------------------------------- */

/**
 * Collective over MPI_COMM_WORLD. Initialises MPI if the application has not (and then finalises it in
 * tshmem_finalize), picks the GPU, reserves the symmetric heap and maps the node-local peers' heaps.
 * Returns 0 on success; on failure every PE returns the same code and nothing stays allocated.
 */
TSHMEM_API int tshmem_init(void);

/**
 * Undoes tshmem_init. Collective. Safe to call when not initialised (then it does nothing).
 * Bounded when a PE stopped or died: in the failed state (an earlier call passed TSHMEM_PROXY_TIMEOUT_MS) it waits
 * for no other PE and says so in tshmemx_last_error(). When tshmem_init started MPI, it then calls MPI_Finalize,
 * which waits for every process of the job: in the failed state, a PE of this host known to have died (its process
 * ended before this PE got there) is named in a warning and MPI is left unfinalized instead; a PE of this host that
 * dies while MPI_Finalize waits ends this process one TSHMEM_PROXY_TIMEOUT_MS later, with a message naming it and
 * exit status 1. When the application started MPI, MPI_Finalize is the application's (docs/design.md, "MPI_Finalize
 * and a dead PE").
 */
TSHMEM_API void tshmem_finalize(void);

/**
 * Thread levels, as OpenSHMEM (and MPI) define them; ordered, so `provided >= TSHMEM_THREAD_SERIALIZED`
 * reads as expected.
 *   SINGLE      one thread in the process (tshmem_init and tshmemx_init_attr give this level);
 *   FUNNELED    several threads, but only the thread that initialised tshmem calls it;
 *   SERIALIZED  any thread calls tshmem, never two at once (the application orders the calls);
 *   MULTIPLE    any thread calls tshmem at any time. The heap, the call counter and every shared structure
 *               are locked; a call that races tshmem_finalize either completes before finalize tears down
 *               or fails with TSHMEM_ERR_NOT_INITIALIZED, never touches freed state. Collective calls
 *               (malloc & co., free, barrier_all, finalize) made by two threads of one PE at once run one
 *               after the other, in whichever order the threads take the lock: every PE must still make
 *               its collective calls in the same order (the symmetry check reports a divergence), so in
 *               practice issue them from one thread, or order them yourself. On-stream collectives
 *               (tshmemx_*_on_stream) are ordered by their streams: issue them on one stream.
 */
enum tshmem_thread_level {
  TSHMEM_THREAD_SINGLE = 0,
  TSHMEM_THREAD_FUNNELED = 1,
  TSHMEM_THREAD_SERIALIZED = 2,
  TSHMEM_THREAD_MULTIPLE = 3
};

/**
 * tshmem_init with a thread level. Collective. `requested` is one of the TSHMEM_THREAD_* levels;
 * `*provided` receives the level tshmem gives, the same on every PE: `requested`, capped by the level MPI
 * provides (tshmem initialises MPI with MPI_THREAD_MULTIPLE; when the application initialised MPI with
 * less, that lower level caps tshmem's and a warning says so) and by the lowest level any PE got. A
 * `requested` outside the four levels or a NULL `provided` fails init on every PE (TSHMEM_ERR_INVALID_ARG).
 */
TSHMEM_API int tshmem_init_thread(int requested, int *provided);

/** The thread level tshmem_init_thread provided (TSHMEM_THREAD_SINGLE after tshmem_init). Before init, or
 *  with a NULL `provided`, it sets an error and writes nothing. */
TSHMEM_API void tshmem_query_thread(int *provided);

/** This PE's number in [0, n_pes), or -1 before init. */
TSHMEM_API int TSHMEMI_HD_NAME(my_pe)(void);

/** The number of PEs, or -1 before init. */
TSHMEM_API int TSHMEMI_HD_NAME(n_pes)(void);

/** OpenSHMEM version query. */
TSHMEM_API void tshmem_info_get_version(int *major, int *minor);

/* ---------------------------------------------------------------------------------------------------- */
/* Symmetric heap (all collective and checked for symmetry)                                             */
/* ---------------------------------------------------------------------------------------------------- */

/**
 * Collective. Every PE must ask for the same size, in the same order as its other collective calls.
 * Returns the same heap offset on every PE (as a local address), NULL for size 0 (no error), and NULL with
 * TSHMEM_ERR_ASYMMETRIC on every PE when the PEs' requests differ (nothing is allocated), or with
 * TSHMEM_ERR_OUT_OF_MEMORY on every PE when any PE's heap is exhausted. Alignment is at least 256 bytes.
 */
TSHMEM_API void *tshmem_malloc(size_t size);

/** As tshmem_malloc, and the block is zeroed on every PE before the call returns. */
TSHMEM_API void *tshmem_calloc(size_t count, size_t size);

/** As tshmem_malloc, aligned to `alignment`, which must be a power of two. */
TSHMEM_API void *tshmem_align(size_t alignment, size_t size);

/**
 * Collective. Every PE must free the same block. NULL is allowed (nothing freed, still collective).
 * A pointer that is not the start of a live block (outside the heap, or already freed) is an error on
 * every PE (TSHMEM_ERR_INVALID_ARG), and nothing is freed anywhere.
 */
TSHMEM_API void tshmem_free(void *ptr);

/**
 * The address at which this PE can load and store `pe`'s copy of the symmetric object `dest`, or NULL if
 * `pe` is not reachable by load/store, is out of range, or `dest` is not in the heap.
 * tshmem_ptr(p, tshmem_my_pe()) == p for every heap address p.
 */
TSHMEM_API void *TSHMEMI_HD_NAME(ptr)(const void *dest, int pe);

/** 1 when host put/get reach `pe` (a PE of this node, or of another node through the off-node proxy), else
 *  0 — also for a PE out of range and before tshmem_init. A query: it sets no error. */
TSHMEM_API int tshmem_pe_accessible(int pe);

/** 1 when `addr` lies in the symmetric heap and tshmem_pe_accessible(pe), else 0. Sets no error. */
TSHMEM_API int tshmem_addr_accessible(const void *addr, int pe);

/* ---------------------------------------------------------------------------------------------------- */
/* Host-initiated remote memory access                                                                  */
/* ---------------------------------------------------------------------------------------------------- */

/**
 * Copies `nbytes` from local `src` to `dest` (a symmetric address) on `pe`. Returns when `src` may be
 * reused; the data is visible at the target after tshmem_quiet or tshmem_barrier_all.
 * Fails with TSHMEM_ERR_INVALID_PE (nothing written) or TSHMEM_ERR_INVALID_ARG (range outside the heap).
 * A PE of another node is reached through the off-node proxy on every backend; without it (MPI without
 * MPI_THREAD_MULTIPLE) the call fails with TSHMEM_ERR_UNREACHABLE_PE saying why (docs/design.md, "Beyond one node").
 */
TSHMEM_API int TSHMEMI_HD_NAME(putmem)(void *dest, const void *src, size_t nbytes, int pe);

/** Copies `nbytes` from `src` (a symmetric address) on `pe` to local `dest`. Blocking. */
TSHMEM_API int TSHMEMI_HD_NAME(getmem)(void *dest, const void *src, size_t nbytes, int pe);

/** Completes every put issued by this PE (host side and, on GPU backends, the device; puts to other nodes
 *  at their targets), and makes what other nodes put here visible to this PE's loads. On a GPU backend the
 *  device's part waits for every kernel running on this PE's GPU (cudaDeviceSynchronize): a kernel still
 *  waiting for another PE keeps this call waiting as long as that kernel waits. (NVSHMEM's host calls wait
 *  for their own stream only; tshmemx_barrier_all_on_stream orders with one stream and leaves other kernels
 *  running.) */
TSHMEM_API void TSHMEMI_HD_NAME(quiet)(void);

/** Collective: quiet, then every PE waits for all others. Failures are reported by tshmemx_last_error.
 *  Launch a kernel that waits for what another PE does after this barrier after it, not before (see
 *  tshmem_quiet). */
TSHMEM_API void TSHMEMI_HD_NAME(barrier_all)(void);

/** Same as tshmem_barrier_all (OpenSHMEM 1.5 names both). */
TSHMEM_API void TSHMEMI_HD_NAME(sync_all)(void);

/** Ends the whole job with `status` (OpenSHMEM: shmem_global_exit). */
TSHMEM_API void tshmem_global_exit(int status);

/* ---------------------------------------------------------------------------------------------------- */
/* Errors                                                                                               */
/* ---------------------------------------------------------------------------------------------------- */

/** The code of the last failure on the calling thread (TSHMEM_SUCCESS if none since it was cleared). */
TSHMEM_API int tshmemx_last_error_code(void);

/** The message of the last failure on the calling thread ("" if none). Valid until the thread's next call. */
TSHMEM_API const char *tshmemx_last_error(void);

/** Clears the calling thread's last error. */
TSHMEM_API void tshmemx_clear_last_error(void);

/** A short constant name for a status code ("TSHMEM_ERR_ASYMMETRIC"), or "not a tshmem status". */
TSHMEM_API const char *tshmemx_strerror(int status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#include "tshmem/tshmemx.h"
#include "tshmem/tshmemx_typed.h"

#ifdef TSHMEMI_HOST_DEVICE_NAMES
#include "tshmem/device/host_device_names.cuh"
#endif

#endif /* TSHMEM_TSHMEM_H */
