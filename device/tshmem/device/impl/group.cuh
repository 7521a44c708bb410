// Scope tag -> the threads that share an operation: rank in the group, group size, group barrier.
#ifndef TSHMEM_DEVICE_IMPL_GROUP_CUH
#define TSHMEM_DEVICE_IMPL_GROUP_CUH

#include "tshmem/device/defines.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

template <class Scope>
struct group;

template <>
struct group<tshmem::thread_scope> {
  static TSHMEMI_DEVICE unsigned rank() { return 0; }
  static TSHMEMI_DEVICE unsigned size() { return 1; }
  static TSHMEMI_DEVICE void sync() {}
  static constexpr const char *kSuffix = "";
};

template <>
struct group<tshmem::warp_scope> {
  static TSHMEMI_DEVICE unsigned rank() {
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
  }
  static TSHMEMI_DEVICE unsigned size() { return 32; }
  static TSHMEMI_DEVICE void sync() { __syncwarp(); }
  static constexpr const char *kSuffix = "_warp";
};

template <>
struct group<tshmem::block_scope> {
  static TSHMEMI_DEVICE unsigned rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
  static TSHMEMI_DEVICE unsigned size() { return blockDim.x * blockDim.y * blockDim.z; }
  static TSHMEMI_DEVICE void sync() { __syncthreads(); }
  static constexpr const char *kSuffix = "_block";
};

}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_GROUP_CUH
