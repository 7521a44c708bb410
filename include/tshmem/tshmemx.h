/*
 * tshmem extensions: initialisation attributes, stream-ordered host operations, run-time module
 * registration. Included by tshmem/tshmem.h; compiles as C and C++ without CUDA or MPI headers.
 */
#ifndef TSHMEM_TSHMEMX_H
#define TSHMEM_TSHMEMX_H

#include <stddef.h>
#include <stdint.h>

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
};

/**
 * Initialisation attributes. Start from TSHMEMX_INIT_ATTR_INITIALIZER so that `size`, `magic` and
 * `version` are set: the library rejects an attribute it does not recognise instead of misreading it.
 */
typedef struct tshmemx_init_attr_v1 {
  size_t size;       /**< sizeof(tshmemx_init_attr_t) as the application was compiled. */
  uint32_t magic;    /**< TSHMEMX_INIT_ATTR_MAGIC. */
  uint32_t version;  /**< TSHMEMX_INIT_ATTR_VERSION. */
  void *mpi_comm;    /**< With TSHMEMX_INIT_WITH_MPI_COMM: a pointer to an MPI_Comm (duplicated, not kept). */
} tshmemx_init_attr_t;

#define TSHMEMX_INIT_ATTR_INITIALIZER \
  { sizeof(tshmemx_init_attr_t), TSHMEMX_INIT_ATTR_MAGIC, TSHMEMX_INIT_ATTR_VERSION, NULL }

/**
 * Collective over the given communicator (or MPI_COMM_WORLD without TSHMEMX_INIT_WITH_MPI_COMM).
 * PE numbers are ranks in that communicator. Returns 0 on success.
 */
int tshmemx_init_attr(unsigned flags, tshmemx_init_attr_t *attr) __attribute__((visibility("default")));

/** The memory backend in use ("shm", "vmm", "ipc"), or NULL before init. */
const char *tshmemx_backend_name(void) __attribute__((visibility("default")));

/** Base address and size of this PE's symmetric heap (NULL/0 before init). */
void *tshmemx_heap_base(void) __attribute__((visibility("default")));
size_t tshmemx_heap_size(void) __attribute__((visibility("default")));

/**
 * The address at which this PE sees `pe`'s heap (the peer table slot), or NULL if `pe` is not reachable by
 * load/store. The own slot is the own heap base, never NULL.
 */
void *tshmemx_peer_base(int pe) __attribute__((visibility("default")));

/** Number of PEs on this node and this PE's index among them. */
int tshmemx_local_pe(void) __attribute__((visibility("default")));
int tshmemx_local_n_pes(void) __attribute__((visibility("default")));

/** The CUDA device this PE drives, or -1 on the shm backend. */
int tshmemx_cuda_device(void) __attribute__((visibility("default")));

/** Stream-ordered put/get (GPU backends): enqueued on `stream`, complete when the stream reaches them. */
int tshmemx_putmem_on_stream(void *dest, const void *src, size_t nbytes, int pe, tshmemx_stream_t stream)
    __attribute__((visibility("default")));
int tshmemx_getmem_on_stream(void *dest, const void *src, size_t nbytes, int pe, tshmemx_stream_t stream)
    __attribute__((visibility("default")));

/** Fills the tshmem device state of a module loaded at run time (JIT code). Not collective. */
int tshmemx_cumodule_init(tshmemx_cumodule_t module) __attribute__((visibility("default")));

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TSHMEM_TSHMEMX_H */
