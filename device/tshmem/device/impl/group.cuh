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
  /// The leader's `value`, for every thread of the group.
  static TSHMEMI_DEVICE unsigned long long share(unsigned long long value) { return value; }
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
  static TSHMEMI_DEVICE unsigned long long share(unsigned long long value) { return __shfl_sync(~0u, value, 0); }
  static constexpr const char *kSuffix = "_warp";
};

template <>
struct group<tshmem::block_scope> {
  static TSHMEMI_DEVICE unsigned rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
  static TSHMEMI_DEVICE unsigned size() { return blockDim.x * blockDim.y * blockDim.z; }
  static TSHMEMI_DEVICE void sync() { __syncthreads(); }
  static TSHMEMI_DEVICE unsigned long long share(unsigned long long value) {
    __shared__ unsigned long long shared;
    if (rank() == 0) shared = value;
    __syncthreads();
    value = shared;
    __syncthreads();  // every thread has read it before a later share writes it again
    return value;
  }
  static constexpr const char *kSuffix = "_block";
};

}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_GROUP_CUH
