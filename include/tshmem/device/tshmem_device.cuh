/*
 * tshmem device API, everything: include this from any .cu (no -rdc needed) and link tshmem::tshmem.
 *
 *   state.cuh       the state (constant memory; under -rdc from libtshmem_device.a), its registration (or
 *                   -DTSHMEM_CUMODULE), by-value delivery
 *   remote_ptr.cuh  the one remote-address function and the PE bound check
 *   pe.cuh          my_pe, n_pes, ptr
 *   rma.cuh         p, g, put, get (+ _nbi; thread, warp, block scope)
 *   signal.cuh      put_signal (+ _nbi), signal_op, signal_wait_until, signal_fetch
 *   wait.cuh        wait_until, test
 *   amo.cuh         atomics
 *   sync.cuh        fence, quiet, sync_all, barrier_all (group and grid)
 *   c_api.cuh       the OpenSHMEM-style C names (tshmem_int_p, tshmem_putmem_block, ...)
 *   host_device_names.cuh  tshmem_my_pe, tshmem_putmem, tshmem_barrier_all, ... on host and device alike
 *   multimem.cuh    NVLink multicast ld_reduce/st/red/signals and their unicast twins; mc_ptr; teams
 *   c_coll.cuh      typed team collectives by C name (tshmem_int_sum_reduce_block, tshmem_float_fcollect, ...)
 *   coll.cuh        team collectives (all-reduce, reduce-scatter, fcollect, all-to-all, broadcast, barrier)
 */
#ifndef TSHMEM_DEVICE_TSHMEM_DEVICE_CUH
#define TSHMEM_DEVICE_TSHMEM_DEVICE_CUH

#include "tshmem/device/amo.cuh"
#include "tshmem/device/c_api.cuh"
#include "tshmem/device/c_coll.cuh"
#include "tshmem/device/coll.cuh"
#include "tshmem/device/defines.cuh"
#include "tshmem/device/multimem.cuh"
#include "tshmem/device/pe.cuh"
#include "tshmem/device/remote_ptr.cuh"
#include "tshmem/device/rma.cuh"
#include "tshmem/device/signal.cuh"
#include "tshmem/device/state.cuh"
#include "tshmem/device/sync.cuh"
#include "tshmem/device/wait.cuh"
#include "tshmem/tshmem.h"  // the C API; in CUDA units with the names shared by host and device

#endif  // TSHMEM_DEVICE_TSHMEM_DEVICE_CUH
