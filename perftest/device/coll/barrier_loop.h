// barrier_loop.cu: `iters` device barriers in one kernel of one block of `threads` per PE (every PE calls with
// the same arguments); microseconds per barrier, including one launch spread over the iterations, or -1.
#pragma once

#include <cuda_runtime.h>

/// which: 0 = tshmem::coll::barrier_block on TSHMEM_TEAM_WORLD, 1 = tshmem::barrier_all<block_scope>.
double tshmem_coll_barrier_loop_us(int iters, int which, int threads, cudaStream_t stream);
