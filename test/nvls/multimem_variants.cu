// Every multimem variant of tshmem/device/multimem.cuh in its own kernel (extern "C", named
// mm_<op>_<op'>_<type>_v<N>), for the SASS/PTX proof (check_multimem_sass.sh). Never launched: the GPU test
// host must not use multicast. The kernels take the multicast address directly (the *_mc functions).
#include "tshmem/device/multimem.cuh"

using tshmem::redop;
using tshmem::vec;
namespace mm = tshmem::mm;

#define MM_LD(NAME, OP, T, N)                                             \
  extern "C" __global__ void mm_ld_reduce_##NAME(const T *mc, T *out) {   \
    *reinterpret_cast<vec<T, N> *>(out) = mm::ld_reduce_mc<OP, T, N>(mc); \
  }
#define MM_RED(NAME, OP, T, N)                                          \
  extern "C" __global__ void mm_red_##NAME(T *mc, const T *in) {        \
    mm::red_mc<OP, T, N>(mc, *reinterpret_cast<const vec<T, N> *>(in)); \
  }
#define MM_ST(NAME, T, N)                                          \
  extern "C" __global__ void mm_st_##NAME(T *mc, const T *in) {    \
    mm::st_mc<T, N>(mc, *reinterpret_cast<const vec<T, N> *>(in)); \
  }
// Both reductions, every operator the ISA has for the type.
#define MM_REDUCING(NAME, OP, T, N) MM_LD(NAME, OP, T, N) MM_RED(NAME, OP, T, N)
#define MM_FLOAT_WIDTHS(NAME, OP, T) \
  MM_REDUCING(NAME##_v1, OP, T, 1) MM_REDUCING(NAME##_v2, OP, T, 2) MM_REDUCING(NAME##_v4, OP, T, 4)
// 16-bit min/max: ld_reduce at every width, red only in vector form (the ISA has no scalar one).
#define MM_PACKED_MINMAX(NAME, OP, T) \
  MM_LD(NAME##_v1, OP, T, 1) MM_REDUCING(NAME##_v2, OP, T, 2) MM_REDUCING(NAME##_v4, OP, T, 4)

MM_FLOAT_WIDTHS(add_f32, redop::sum, float)
MM_FLOAT_WIDTHS(add_f16x2, redop::sum, __half2)
MM_PACKED_MINMAX(min_f16x2, redop::min, __half2)
MM_PACKED_MINMAX(max_f16x2, redop::max, __half2)
MM_FLOAT_WIDTHS(add_bf16x2, redop::sum, __nv_bfloat162)
MM_PACKED_MINMAX(min_bf16x2, redop::min, __nv_bfloat162)
MM_PACKED_MINMAX(max_bf16x2, redop::max, __nv_bfloat162)
MM_REDUCING(add_s32_v1, redop::sum, int32_t, 1)
MM_REDUCING(min_s32_v1, redop::min, int32_t, 1)
MM_REDUCING(max_s32_v1, redop::max, int32_t, 1)
MM_REDUCING(add_u32_v1, redop::sum, uint32_t, 1)
MM_REDUCING(min_u32_v1, redop::min, uint32_t, 1)
MM_REDUCING(max_u32_v1, redop::max, uint32_t, 1)
MM_REDUCING(add_s64_v1, redop::sum, int64_t, 1)
MM_REDUCING(min_s64_v1, redop::min, int64_t, 1)
MM_REDUCING(max_s64_v1, redop::max, int64_t, 1)
MM_REDUCING(add_u64_v1, redop::sum, uint64_t, 1)
MM_REDUCING(min_u64_v1, redop::min, uint64_t, 1)
MM_REDUCING(max_u64_v1, redop::max, uint64_t, 1)

MM_ST(f32_v1, float, 1)
MM_ST(f32_v2, float, 2)
MM_ST(f32_v4, float, 4)
MM_ST(f16x2_v1, __half2, 1)
MM_ST(f16x2_v2, __half2, 2)
MM_ST(f16x2_v4, __half2, 4)
MM_ST(bf16x2_v1, __nv_bfloat162, 1)
MM_ST(bf16x2_v2, __nv_bfloat162, 2)
MM_ST(bf16x2_v4, __nv_bfloat162, 4)
MM_ST(s32_v1, int32_t, 1)
MM_ST(u32_v1, uint32_t, 1)
MM_ST(s64_v1, int64_t, 1)
MM_ST(u64_v1, uint64_t, 1)

// Signals: set and add on a flag at every PE (their multicast forms run when mc_base is set).
extern "C" __global__ void mm_signal_set(uint64_t *sig) { mm::signal_set(TSHMEMX_TEAM_NODE, sig, 1); }
extern "C" __global__ void mm_signal_add(uint64_t *sig) { mm::signal_add(TSHMEMX_TEAM_NODE, sig, 1); }
