// Bandwidth kernels, NVSHMEM perftest's shape: one launch runs `iters` transfers of `bytes`, split across
// the blocks, with a grid-wide barrier after each transfer and a quiet at the end; the harness times the
// whole launch. Templates over the backend O (TshmemOps / NvshmemOps).
#pragma once

#include "perf_types.cuh"

namespace tshmem_perf {

/// put (kGet = false): every block puts its chunk of `local` to `remote` on `peer` with putmem_nbi_block.
/// get (kGet = true): every block gets its chunk of slot (first_slot + i) % slots of `remote` (slots
/// `stride` bytes apart, so that iterations read different lines) into `local` with getmem_nbi_block.
template <class O, bool kGet>
__global__ void __launch_bounds__(1024)
    rma_bw_kernel(char *local, char *remote, size_t bytes, size_t stride, unsigned slots, unsigned first_slot, int peer,
                  int iters, unsigned *counter) {
  size_t begin, len;
  block_chunk(bytes, blockIdx.x, gridDim.x, &begin, &len);
  for (int i = 0; i < iters; ++i) {
    if (len > 0) {
      if constexpr (kGet) {
        const char *src = remote + static_cast<size_t>((first_slot + static_cast<unsigned>(i)) % slots) * stride;
        O::template getmem_nbi<Scope::block>(local + begin, src + begin, len, peer);
      } else {
        O::template putmem_nbi<Scope::block>(remote + begin, local + begin, len, peer);
      }
    }
    grid_sync(counter, static_cast<unsigned>(i) + 1u);
  }
  O::quiet();
}

/// All pairs at once: the blocks form n_pes - 1 equal groups (leftover blocks only join the barriers), group g
/// putting its chunks of `local` to PE (me + 1 + g) mod n_pes, into the sender's own region (offset
/// me x bytes) of `remote` there. The targets are staggered, so every PE receives from n_pes - 1 senders.
template <class O>
__global__ void __launch_bounds__(1024) all_pairs_put_kernel(const char *local, char *remote, size_t bytes, int me,
                                                             int n_pes, int iters, unsigned *counter) {
  const unsigned groups = static_cast<unsigned>(n_pes - 1);
  const unsigned per_group = gridDim.x / groups;  // the host launches at least one block per group
  const unsigned group = blockIdx.x / per_group;
  size_t begin = 0, len = 0;
  int target = me;
  if (group < groups) {
    block_chunk(bytes, blockIdx.x % per_group, per_group, &begin, &len);
    target = (me + 1 + static_cast<int>(group)) % n_pes;
  }
  char *dest = remote + static_cast<size_t>(me) * bytes + begin;
  for (int i = 0; i < iters; ++i) {
    if (len > 0) O::template putmem_nbi<Scope::block>(dest, local + begin, len, target);
    grid_sync(counter, static_cast<unsigned>(i) + 1u);
  }
  O::quiet();
}

/// p (kGet = false) or g (kGet = true) of `bytes / sizeof(T)` elements, one element per thread per step over
/// the whole grid, unrolled so that several remote accesses are in flight per thread. g reads rotate over
/// slots like rma_bw_kernel's and land in `local`, so the loads cannot be dropped.
template <class O, class T, bool kGet>
__global__ void __launch_bounds__(1024)
    element_bw_kernel(T *local, T *remote, size_t bytes, size_t stride, unsigned slots, unsigned first_slot, int peer,
                      int iters, unsigned *counter) {
  constexpr int kUnroll = 4;
  const size_t n = bytes / sizeof(T);
  const size_t threads = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int i = 0; i < iters; ++i) {
    if constexpr (kGet) {
      const T *src =
          reinterpret_cast<const T *>(reinterpret_cast<const char *>(remote) +
                                      static_cast<size_t>((first_slot + static_cast<unsigned>(i)) % slots) * stride);
      size_t j = tid;
      for (; j + (kUnroll - 1) * threads < n; j += kUnroll * threads) {
        T v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = O::g(src + j + u * threads, peer);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) local[j + u * threads] = v[u];
      }
      for (; j < n; j += threads) local[j] = O::g(src + j, peer);
    } else {
      size_t j = tid;
      for (; j + (kUnroll - 1) * threads < n; j += kUnroll * threads) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) O::p(remote + j + u * threads, local[j + u * threads], peer);
      }
      for (; j < n; j += threads) O::p(remote + j, local[j], peer);
    }
    grid_sync(counter, static_cast<unsigned>(i) + 1u);
  }
  O::quiet();
}

/// The link ceiling through plain loads and stores on the address the library's ptr() returns (no library
/// code in the loop): what the library's put/get could reach. Same split, barriers and rotation as
/// rma_bw_kernel; 16-byte accesses, kUnroll of them in flight per thread. kStreaming reads the source with
/// ld.global.nc.L1::no_allocate (read-only, not kept in L1): whether a put/get loop should, the variants say.
enum class RawAccess { store, copy, load };

PERF_DEVICE uint4 load_streaming(const uint4 *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

template <RawAccess kAccess, int kUnroll, bool kStreaming>
__global__ void __launch_bounds__(1024)
    raw_bw_kernel(uint4 *local, uint4 *peer_view, size_t bytes, size_t stride, unsigned slots, unsigned first_slot,
                  int iters, unsigned *counter) {
  size_t begin, len;
  block_chunk(bytes, blockIdx.x, gridDim.x, &begin, &len);
  const size_t n = len / sizeof(uint4);
  uint4 *mine = local + begin / sizeof(uint4);
  auto read = [](const uint4 *p) { return kStreaming ? load_streaming(p) : *p; };
  for (int i = 0; i < iters; ++i) {
    uint4 *theirs = peer_view + begin / sizeof(uint4);
    if constexpr (kAccess == RawAccess::load)
      theirs += static_cast<size_t>((first_slot + static_cast<unsigned>(i)) % slots) * (stride / sizeof(uint4));
    size_t j = threadIdx.x;
    for (; j + (kUnroll - 1) * blockDim.x < n; j += kUnroll * blockDim.x) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if constexpr (kAccess == RawAccess::store)
          v[u] = make_uint4(i, u, static_cast<unsigned>(j), 0);
        else if constexpr (kAccess == RawAccess::copy)
          v[u] = read(mine + j + u * blockDim.x);
        else
          v[u] = read(theirs + j + u * blockDim.x);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if constexpr (kAccess == RawAccess::load)
          mine[j + u * blockDim.x] = v[u];
        else
          theirs[j + u * blockDim.x] = v[u];
      }
    }
    for (; j < n; j += blockDim.x) {
      if constexpr (kAccess == RawAccess::store)
        theirs[j] = make_uint4(i, 0, static_cast<unsigned>(j), 0);
      else if constexpr (kAccess == RawAccess::copy)
        theirs[j] = read(mine + j);
      else
        mine[j] = read(theirs + j);
    }
    grid_sync(counter, static_cast<unsigned>(i) + 1u);
  }
  __threadfence_system();
}

}  // namespace tshmem_perf
