/*
 * Cooperative ("collective") kernel launch, NVSHMEM's nvshmemx_collective_launch: every PE launches its grid
 * with cudaLaunchCooperativeKernel, so all blocks of the grid are resident at once and a kernel may use the
 * grid-wide device barriers (tshmem_barrier_all_grid, tshmem::coll::*_grid) without deadlocking.
 *
 * The functions are static inline: the launch must go through the caller's CUDA runtime (the one that
 * registered `func`, cudart_static included), as the device state does (tshmem/device/state.cuh). The check
 * and its message are the library's: a grid larger than what can be co-resident on this PE's GPU is refused
 * with TSHMEM_ERR_INVALID_ARG naming the grid, the limit and how it was computed, before anything is launched
 * (never a hang). A CUDA failure returns TSHMEM_ERR_CUDA with CUDA's message. Not collective on the host: each
 * PE launches its own grid on its stream and no PE waits for the others (the kernel's own barriers do).
 * Needs CUDA (includes cuda_runtime_api.h).
 */
#ifndef TSHMEM_TSHMEMX_LAUNCH_H
#define TSHMEM_TSHMEMX_LAUNCH_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "tshmem/tshmem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's half: validates the numbers the caller's runtime measured and formats every message.
 * Returns 0 when a grid of grid_blocks may be launched, else a tshmem status (last error set). */
int tshmemi_collective_launch_check(const char *call, long long grid_blocks, unsigned block_threads, size_t shared_mem,
                                    int cuda_rc, const char *cuda_what, const char *cuda_msg, int blocks_per_sm,
                                    int sm_count, int device) __attribute__((visibility("default")));

/* Measures how many blocks of `block_threads` threads and `shared_mem` bytes of `func` fit at once on the
 * current device; 0 and the CUDA failure in *rc and *what otherwise. */
static inline long long tshmemi_coresident_blocks(const void *func, unsigned block_threads, size_t shared_mem,
                                                  int *blocks_per_sm, int *sm_count, int *device, cudaError_t *rc,
                                                  const char **what) {
  *blocks_per_sm = 0;
  *sm_count = 0;
  *device = -1;
  *what = "cudaGetDevice";
  if ((*rc = cudaGetDevice(device)) != cudaSuccess) return 0;
  *what = "cudaDeviceGetAttribute(cudaDevAttrMultiProcessorCount)";
  if ((*rc = cudaDeviceGetAttribute(sm_count, cudaDevAttrMultiProcessorCount, *device)) != cudaSuccess) return 0;
  *what = "cudaOccupancyMaxActiveBlocksPerMultiprocessor";
  if ((*rc = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, func, (int)block_threads, shared_mem)) !=
      cudaSuccess)
    return 0;
  return (long long)*blocks_per_sm * (long long)*sm_count;
}

/** The largest grid of `func` (blocks of block_dims, shared_mem bytes) that can be co-resident: *grid_size.
 *  `args` is unused (NVSHMEM's signature). Returns 0, or a tshmem status. */
static inline int tshmemx_collective_launch_query_gridsize(const void *func, dim3 block_dims, void **args,
                                                           size_t shared_mem, int *grid_size) {
  int per_sm = 0, sms = 0, device = -1;
  cudaError_t rc = cudaSuccess;
  const char *what = "";
  const unsigned threads = block_dims.x * block_dims.y * block_dims.z;
  const long long fit = tshmemi_coresident_blocks(func, threads, shared_mem, &per_sm, &sms, &device, &rc, &what);
  (void)args;
  const int status =
      tshmemi_collective_launch_check("tshmemx_collective_launch_query_gridsize", grid_size ? 0 : -1, threads,
                                      shared_mem, (int)rc, what, cudaGetErrorString(rc), per_sm, sms, device);
  if (status != 0) return status;
  *grid_size = fit > 0x7fffffff ? 0x7fffffff : (int)fit;
  return 0;
}

/** Launches `func` on `stream` as a cooperative grid (all blocks co-resident); see above. */
static inline int tshmemx_collective_launch(const void *func, dim3 grid_dims, dim3 block_dims, void **args,
                                            size_t shared_mem, cudaStream_t stream) {
  int per_sm = 0, sms = 0, device = -1;
  cudaError_t rc = cudaSuccess;
  const char *what = "";
  const unsigned threads = block_dims.x * block_dims.y * block_dims.z;
  const long long blocks = (long long)grid_dims.x * grid_dims.y * grid_dims.z;
  tshmemi_coresident_blocks(func, threads, shared_mem, &per_sm, &sms, &device, &rc, &what);
  int status = tshmemi_collective_launch_check("tshmemx_collective_launch", blocks, threads, shared_mem, (int)rc, what,
                                               cudaGetErrorString(rc), per_sm, sms, device);
  if (status != 0) return status;
  rc = cudaLaunchCooperativeKernel(func, grid_dims, block_dims, args, shared_mem, stream);
  return tshmemi_collective_launch_check("tshmemx_collective_launch", 0, threads, shared_mem, (int)rc,
                                         "cudaLaunchCooperativeKernel", cudaGetErrorString(rc), per_sm, sms, device);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TSHMEM_TSHMEMX_LAUNCH_H */
