// Vocabulary shared by both backends of the device benchmarks: scopes, atomic operations, group helpers
// and the grid-wide barrier of NVSHMEM's bandwidth kernels. Includes neither tshmem nor NVSHMEM, so the
// kernels written against it compile unchanged for both (ops_tshmem.cuh, ops_nvshmem.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

namespace tshmem_perf {

/// Which threads call an operation together (NVSHMEM's thread/warp/block variants).
enum class Scope { thread, warp, block };

inline const char *scope_name(Scope s) { return s == Scope::thread ? "thread" : s == Scope::warp ? "warp" : "block"; }

/// The remote atomic operations that atomic_bw and atomic_latency time, one row each.
enum class Amo {
  fetch,
  set,
  compare_swap,
  swap,
  fetch_inc,
  inc,
  fetch_add,
  add,
  fetch_and,
  and_,
  fetch_or,
  or_,
  fetch_xor,
  xor_
};

inline const char *amo_name(Amo op) {
  static const char *const kNames[] = {"fetch",    "set",       "compare_swap", "swap",      "fetch_inc",
                                       "inc",      "fetch_add", "add",          "fetch_and", "and",
                                       "fetch_or", "or",        "fetch_xor",    "xor"};
  return kNames[static_cast<int>(op)];
}

/// True for the operations that return the old value (a round trip); the others are posted and need quiet.
__host__ __device__ constexpr bool amo_fetches(Amo op) {
  return op == Amo::fetch || op == Amo::compare_swap || op == Amo::swap || op == Amo::fetch_inc ||
         op == Amo::fetch_add || op == Amo::fetch_and || op == Amo::fetch_or || op == Amo::fetch_xor;
}

/// Calls f(std::integral_constant<Amo, op>{}) for every operation, in table order.
template <class F, int I = 0>
void for_each_amo(F &&f) {
  if constexpr (I <= static_cast<int>(Amo::xor_)) {
    f(std::integral_constant<Amo, static_cast<Amo>(I)>{});
    for_each_amo<F, I + 1>(static_cast<F &&>(f));
  }
}

template <class T>
struct type_tag {
  using type = T;
};

/// -d for p/g benchmarks: int (default), long, float, double. Returns false for another name.
template <class F>
bool with_rma_type(const std::string &name, F &&f) {
  if (name == "int" || name == "int32") return f(type_tag<int>{}), true;
  if (name == "long" || name == "int64") return f(type_tag<long>{}), true;
  if (name == "float") return f(type_tag<float>{}), true;
  if (name == "double") return f(type_tag<double>{}), true;
  return false;
}

/// -d for atomic benchmarks: int / int32 (default) and a 64-bit word (long, int64, uint64: run as uint64,
/// because NVSHMEM 3.4 has no signed 64-bit add / fetch_add / inc / fetch_inc). Both libraries have every
/// operation on these two.
template <class F>
bool with_amo_type(const std::string &name, F &&f) {
  if (name == "int" || name == "int32") return f(type_tag<int>{}), true;
  if (name == "long" || name == "int64" || name == "uint64" || name == "ulong")
    return f(type_tag<unsigned long>{}), true;
  return false;
}

// ---- device helpers ---------------------------------------------------------------------------------------
#define PERF_DEVICE __device__ __forceinline__

template <Scope S>
PERF_DEVICE unsigned group_rank() {
  if constexpr (S == Scope::thread)
    return 0;
  else if constexpr (S == Scope::warp)
    return threadIdx.x & 31u;
  else
    return threadIdx.x;
}

template <Scope S>
PERF_DEVICE void group_sync() {
  if constexpr (S == Scope::warp)
    __syncwarp();
  else if constexpr (S == Scope::block)
    __syncthreads();
}

/// ceil(n / d) without a 64-bit division, for kernels that the -rdc twins build too (docs/design.md, "Where the
/// device state lives"). Under -rdc a 64-bit `/` by a run-time value is an ABI call (CALL.ABS) of the routine
/// __cuda_sm20_div_u64, whose clobbers ptxas does not know, and one such call anywhere in a kernel makes ptxas keep
/// the kernel's uniform values (the memory descriptor of every load and store, the peer-slot index) in vector
/// registers: an R2UR pair before each global access, the spin of grid_sync included, and an indexed LDC where the
/// build without -rdc has a ULDC. rma_bw_kernel had that call at its top (68 R2UR with -rdc, none without outside
/// its cold subroutines), while the device API compiled alike in both. A 32-bit division is inline in both builds;
/// the 64-bit case (over 4 GiB per launch) divides bit by bit.
PERF_DEVICE size_t ceil_div(size_t n, unsigned d) {
  if (n <= 0xffffffffu - d) return (static_cast<unsigned>(n) + d - 1) / d;
  const size_t top = n + d - 1;
  size_t q = 0, r = 0;
#pragma unroll 1
  for (int bit = 63; bit >= 0; --bit) {
    r = (r << 1) | ((top >> bit) & 1u);
    if (r >= d) {
      r -= d;
      q |= size_t{1} << bit;
    }
  }
  return q;
}

/// The bytes of a `bytes`-long transfer that block `block` of `blocks` moves: equal 16-byte-aligned chunks
/// (so that both libraries take their vector path), the last one shorter, trailing blocks possibly empty.
PERF_DEVICE void block_chunk(size_t bytes, unsigned block, unsigned blocks, size_t *begin, size_t *len) {
  size_t chunk = ceil_div(bytes, blocks);
  chunk = (chunk + 15) & ~size_t{15};
  *begin = chunk * block;
  *len = *begin < bytes ? (bytes - *begin < chunk ? bytes - *begin : chunk) : 0;
  if (*begin > bytes) *begin = bytes;
}

/// NVSHMEM perftest's inter-block barrier (counter[0]: arrivals, counter[1]: completed rounds; both zeroed
/// before the launch). `round` counts from 1. All blocks must be co-resident: the harness launches these
/// kernels cooperatively.
PERF_DEVICE void grid_sync(unsigned *counter, unsigned round) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned arrived = atomicAdd(counter, 1u) + 1u;
    if (arrived == gridDim.x * round) atomicExch(counter + 1, round);
    while (*static_cast<volatile unsigned *>(counter + 1) < round) {
    }
  }
  __syncthreads();
}

}  // namespace tshmem_perf
