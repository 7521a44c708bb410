/*
 * NVSHMEM compatibility: an NVSHMEM program builds unchanged against tshmem with -I to this folder and a link
 * to tshmem::nvshmem (pkg-config tshmem-nvshmem): no -rdc needed; with it, any number of units links against
 * libtshmem_device.a in place of libnvshmem_device.a, which the target and the pkg-config file name.
 *
 * Every NVSHMEM name, constant and type that has a tshmem counterpart of the same meaning is mapped onto it
 * (nvshmem_names.h for the functions, below for the rest); calls then get tshmem's checks and messages. A
 * name without a counterpart is absent: using it is a compile error that names it, never a stub. What is
 * mapped and what is not, and why: docs/nvshmem.md.
 *
 * Differences a program may see: functions NVSHMEM declares void that tshmem reports through a status
 * (nvshmem_init, host putmem/getmem) return int here (ignoring it is fine); errors are also in
 * tshmemx_last_error(). Initialisation through these headers also reads NVSHMEM_SYMMETRIC_SIZE where
 * TSHMEM_SYMMETRIC_SIZE is unset (README, "Environment").
 */
#ifndef TSHMEM_NVSHMEM_COMPAT_NVSHMEM_H
#define TSHMEM_NVSHMEM_COMPAT_NVSHMEM_H

/* What NVSHMEM's headers bring along and its examples rely on. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__CUDACC__) || (defined(__has_include) && __has_include(<cuda_runtime.h>))
#include <cuda.h> /* driver API types only: nothing here links libcuda */
#include <cuda_runtime.h>
#endif

#include "tshmem/device/defines.cuh" /* the comparison and signal operators (C enums; host-only units too) */
#include "tshmem/tshmem.h"

#if defined(__CUDACC__)
#include "tshmem/device/tshmem_device.cuh"
#endif
#if defined(__CUDACC__) || (defined(__has_include) && __has_include(<cuda_runtime.h>))
#include "tshmem/tshmemx_launch.h" /* nvshmemx_collective_launch: needs the CUDA runtime */
#endif

#include "nvshmem_names.h"

/* ---- Status ------------------------------------------------------------------------------------------ */
#define NVSHMEMX_SUCCESS TSHMEM_SUCCESS
#define NVSHMEMX_ERROR_INTERNAL TSHMEM_ERR_INTERNAL

/* ---- Teams ------------------------------------------------------------------------------------------- */
typedef tshmem_team_t nvshmem_team_t;
#define NVSHMEM_TEAM_INVALID TSHMEM_TEAM_INVALID
#define NVSHMEM_TEAM_WORLD TSHMEM_TEAM_WORLD
#define NVSHMEMX_TEAM_NODE TSHMEMX_TEAM_NODE
typedef tshmem_team_config_t nvshmem_team_config_t; /* num_contexts; accepted and ignored */
#define NVSHMEM_TEAM_NUM_CONTEXTS TSHMEM_TEAM_NUM_CONTEXTS

/* ---- Point-to-point synchronisation and signals ------------------------------------------------------ */
#define NVSHMEM_CMP_EQ TSHMEM_CMP_EQ
#define NVSHMEM_CMP_NE TSHMEM_CMP_NE
#define NVSHMEM_CMP_GT TSHMEM_CMP_GT
#define NVSHMEM_CMP_LE TSHMEM_CMP_LE
#define NVSHMEM_CMP_LT TSHMEM_CMP_LT
#define NVSHMEM_CMP_GE TSHMEM_CMP_GE
#define NVSHMEM_SIGNAL_SET TSHMEM_SIGNAL_SET
#define NVSHMEM_SIGNAL_ADD TSHMEM_SIGNAL_ADD

/* ---- Initialisation ---------------------------------------------------------------------------------- */
typedef tshmemx_init_attr_t nvshmemx_init_attr_t; /* has mpi_comm: a pointer to the MPI_Comm */
#define NVSHMEMX_INIT_WITH_MPI_COMM TSHMEMX_INIT_WITH_MPI_COMM
#define NVSHMEMX_INIT_ATTR_INITIALIZER TSHMEMX_INIT_ATTR_INITIALIZER

/* Initialising through these headers also reads NVSHMEM's names of the variables tshmem understands
 * (NVSHMEM_SYMMETRIC_SIZE) where the TSHMEM_ one is unset. */
static inline int nvshmem_init(void) { return tshmemx_init_attr(TSHMEMX_INIT_NVSHMEM_ENV, NULL); }
static inline int nvshmemx_init_attr(unsigned int flags, nvshmemx_init_attr_t *attr) {
  return tshmemx_init_attr(flags | TSHMEMX_INIT_NVSHMEM_ENV, attr);
}

/* Threading levels (nvshmem_init_thread / nvshmem_query_thread come from nvshmem_names.h). */
#define NVSHMEM_THREAD_SINGLE TSHMEM_THREAD_SINGLE
#define NVSHMEM_THREAD_FUNNELED TSHMEM_THREAD_FUNNELED
#define NVSHMEM_THREAD_SERIALIZED TSHMEM_THREAD_SERIALIZED
#define NVSHMEM_THREAD_MULTIPLE TSHMEM_THREAD_MULTIPLE

#endif /* TSHMEM_NVSHMEM_COMPAT_NVSHMEM_H */
