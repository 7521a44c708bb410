// Bodies of tshmem/device/multimem.cuh. One `if constexpr` chain per operation picks the PTX; a
// static_assert(dependent_false<T>) closes each chain. The TSHMEMI_MM_* macros only spell operand lists
// (string pasting, no logic) and are #undef'd at the end.
#ifndef TSHMEM_DEVICE_IMPL_MULTIMEM_CUH
#define TSHMEM_DEVICE_IMPL_MULTIMEM_CUH

#include <type_traits>

#include "tshmem/device/impl/memory.cuh"
#include "tshmem/device/impl/team.cuh"
#include "tshmem/device/remote_ptr.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tshmemi {
namespace mm_detail {

template <class T>
inline constexpr bool is_f32 = std::is_same_v<T, float>;
template <class T>
inline constexpr bool is_f16x2 = std::is_same_v<T, __half2>;
template <class T>
inline constexpr bool is_bf16x2 = std::is_same_v<T, __nv_bfloat162>;
template <class T>
inline constexpr bool is_packed = is_f16x2<T> || is_bf16x2<T>;
template <class T>
inline constexpr bool is_int32 = std::is_integral_v<T> && sizeof(T) == 4;
template <class T>
inline constexpr bool is_int64 = std::is_integral_v<T> && sizeof(T) == 8;
template <class T>
inline constexpr bool is_signed_int = std::is_integral_v<T> &&std::is_signed_v<T>;

/// The ISA's type and width rules (multimem.cuh), checked at compile time.
template <class T, int N>
TSHMEMI_DEVICE constexpr void check_type_and_width() {
  if constexpr (is_f32<T> || is_packed<T>) {
    static_assert(N == 1 || N == 2 || N == 4, "multimem: float, __half2 and __nv_bfloat162 take N = 1, 2 or 4");
  } else if constexpr (is_int32<T> || is_int64<T>) {
    static_assert(N == 1, "multimem: the ISA has no vector forms for integers (N = 1)");
  } else {
    static_assert(tshmem::dependent_false<T>,
                  "multimem: T must be float, __half2, __nv_bfloat162 or a 32/64-bit integer");
  }
}

template <tshmem::redop Op, class T, int N>
TSHMEMI_DEVICE constexpr void check_reduction() {
  check_type_and_width<T, N>();
  static_assert(Op == tshmem::redop::sum || Op == tshmem::redop::min || Op == tshmem::redop::max,
                "multimem: the ISA reduces with sum, min and max only");
  static_assert(!(is_f32<T> && Op != tshmem::redop::sum),
                "multimem: the ISA has no f32 min/max (ld_reduce, red); reduce f32 min/max with unicast loads");
}

/// multimem.red (and the twin's red) on __half2/__nv_bfloat162 min/max exists only in vector form.
template <tshmem::redop Op, class T, int N>
TSHMEMI_DEVICE constexpr void check_red() {
  check_reduction<Op, T, N>();
  static_assert(!(is_packed<T> && Op != tshmem::redop::sum && N == 1),
                "multimem.red: __half2/__nv_bfloat162 min/max need N = 2 or 4 (the ISA has no scalar form)");
}

/// The 32-bit registers of a vec (4-byte element types) or its 64-bit register (8-byte integers).
template <class T, int N>
TSHMEMI_DEVICE uint32_t *r32(tshmem::vec<T, N> &v) {
  return reinterpret_cast<uint32_t *>(&v);
}
template <class T, int N>
TSHMEMI_DEVICE const uint32_t *r32(const tshmem::vec<T, N> &v) {
  return reinterpret_cast<const uint32_t *>(&v);
}

// Operand lists: d/b are the registers, a the address.
#define TSHMEMI_MM_LD1(INSTR) asm volatile(INSTR " %0, [%1];" : "=r"(d[0]) : "l"(a) : "memory")
#define TSHMEMI_MM_LD2(INSTR) asm volatile(INSTR " {%0,%1}, [%2];" : "=r"(d[0]), "=r"(d[1]) : "l"(a) : "memory")
#define TSHMEMI_MM_LD4(INSTR) \
  asm volatile(INSTR " {%0,%1,%2,%3}, [%4];" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "l"(a) : "memory")
#define TSHMEMI_MM_LD64(INSTR) asm volatile(INSTR " %0, [%1];" : "=l"(d64) : "l"(a) : "memory")
#define TSHMEMI_MM_ST1(INSTR) asm volatile(INSTR " [%0], %1;" ::"l"(a), "r"(b[0]) : "memory")
#define TSHMEMI_MM_ST2(INSTR) asm volatile(INSTR " [%0], {%1,%2};" ::"l"(a), "r"(b[0]), "r"(b[1]) : "memory")
#define TSHMEMI_MM_ST4(INSTR) \
  asm volatile(INSTR " [%0], {%1,%2,%3,%4};" ::"l"(a), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]) : "memory")
#define TSHMEMI_MM_ST64(INSTR) asm volatile(INSTR " [%0], %1;" ::"l"(a), "l"(b64) : "memory")
// By width, for the float types: PREFIX "[.vN]." TYPE.
#define TSHMEMI_MM_LD_N(PREFIX, TYPE)   \
  if constexpr (N == 1)                 \
    TSHMEMI_MM_LD1(PREFIX "." TYPE);    \
  else if constexpr (N == 2)            \
    TSHMEMI_MM_LD2(PREFIX ".v2." TYPE); \
  else                                  \
    TSHMEMI_MM_LD4(PREFIX ".v4." TYPE)
#define TSHMEMI_MM_ST_N(PREFIX, TYPE)   \
  if constexpr (N == 1)                 \
    TSHMEMI_MM_ST1(PREFIX "." TYPE);    \
  else if constexpr (N == 2)            \
    TSHMEMI_MM_ST2(PREFIX ".v2." TYPE); \
  else                                  \
    TSHMEMI_MM_ST4(PREFIX ".v4." TYPE)

// ---- f32 accumulation of the float types (the twins) ----------------------------------------------------
/// Lanes of one element: float 1, packed 2.
template <class T>
inline constexpr int kLanes = is_packed<T> ? 2 : 1;

template <class T>
TSHMEMI_DEVICE void to_f32(const T &x, float *out) {
  if constexpr (is_f32<T>) {
    out[0] = x;
  } else if constexpr (is_f16x2<T>) {
    const float2 f = __half22float2(x);
    out[0] = f.x, out[1] = f.y;
  } else if constexpr (is_bf16x2<T>) {
    const float2 f = __bfloat1622float2(x);
    out[0] = f.x, out[1] = f.y;
  } else {
    static_assert(tshmem::dependent_false<T>, "to_f32: float types only");
  }
}

template <class T>
TSHMEMI_DEVICE T from_f32(const float *in) {
  if constexpr (is_f32<T>) {
    return in[0];
  } else if constexpr (is_f16x2<T>) {
    return __floats2half2_rn(in[0], in[1]);
  } else if constexpr (is_bf16x2<T>) {
    return __floats2bfloat162_rn(in[0], in[1]);
  } else {
    static_assert(tshmem::dependent_false<T>, "from_f32: float types only");
  }
}

template <tshmem::redop Op>
TSHMEMI_DEVICE float combine_f32(float acc, float x) {
  if constexpr (Op == tshmem::redop::sum)
    return acc + x;
  else if constexpr (Op == tshmem::redop::min)
    return fminf(acc, x);
  else
    return fmaxf(acc, x);
}

template <tshmem::redop Op, class T>
TSHMEMI_DEVICE T combine_int(T acc, T x) {
  using U = std::make_unsigned_t<T>;
  if constexpr (Op == tshmem::redop::sum)
    return static_cast<T>(static_cast<U>(acc) + static_cast<U>(x));
  else if constexpr (Op == tshmem::redop::min)
    return x < acc ? x : acc;
  else
    return x > acc ? x : acc;
}

/// A relaxed system-scope load of one vec (the twin's counterpart of the multimem access).
template <class T, int N>
TSHMEMI_DEVICE tshmem::vec<T, N> load_relaxed(const T *a) {
  tshmem::vec<T, N> out;
  if constexpr (sizeof(T) == 8) {
    uint64_t d64;
    asm volatile("ld.relaxed.sys.global.b64 %0, [%1];" : "=l"(d64) : "l"(a) : "memory");
    out = *reinterpret_cast<tshmem::vec<T, N> *>(&d64);
  } else {
    uint32_t *d = r32(out);
    if constexpr (N == 1)
      TSHMEMI_MM_LD1("ld.relaxed.sys.global.b32");
    else if constexpr (N == 2)
      TSHMEMI_MM_LD2("ld.relaxed.sys.global.v2.b32");
    else
      TSHMEMI_MM_LD4("ld.relaxed.sys.global.v4.b32");
  }
  return out;
}

template <class T, int N>
TSHMEMI_DEVICE void store_relaxed(T *a, const tshmem::vec<T, N> &value) {
  if constexpr (sizeof(T) == 8) {
    const uint64_t b64 = *reinterpret_cast<const uint64_t *>(&value);
    TSHMEMI_MM_ST64("st.relaxed.sys.global.b64");
  } else {
    const uint32_t *b = r32(value);
    if constexpr (N == 1)
      TSHMEMI_MM_ST1("st.relaxed.sys.global.b32");
    else if constexpr (N == 2)
      TSHMEMI_MM_ST2("st.relaxed.sys.global.v2.b32");
    else
      TSHMEMI_MM_ST4("st.relaxed.sys.global.v4.b32");
  }
}

/// The twin's atomic on one member's copy.
template <tshmem::redop Op, class T, int N>
TSHMEMI_DEVICE void red_relaxed(T *a, const tshmem::vec<T, N> &value) {
  constexpr bool kSum = Op == tshmem::redop::sum, kMin = Op == tshmem::redop::min;
  if constexpr (is_f32<T>) {
    const uint32_t *b = r32(value);
    TSHMEMI_MM_ST_N("red.relaxed.sys.global.add", "f32");
  } else if constexpr (is_f16x2<T>) {
    const uint32_t *b = r32(value);
    if constexpr (kSum) {
      TSHMEMI_MM_ST_N("red.relaxed.sys.global.add.noftz", "f16x2");
    } else if constexpr (kMin) {
      TSHMEMI_MM_ST_N("red.relaxed.sys.global.min.noftz", "f16x2");
    } else {
      TSHMEMI_MM_ST_N("red.relaxed.sys.global.max.noftz", "f16x2");
    }
  } else if constexpr (is_bf16x2<T>) {
    const uint32_t *b = r32(value);
    if constexpr (kSum) {
      TSHMEMI_MM_ST_N("red.relaxed.sys.global.add.noftz", "bf16x2");
    } else if constexpr (kMin) {
      TSHMEMI_MM_ST_N("red.relaxed.sys.global.min.noftz", "bf16x2");
    } else {
      TSHMEMI_MM_ST_N("red.relaxed.sys.global.max.noftz", "bf16x2");
    }
  } else if constexpr (is_int32<T>) {
    const uint32_t *b = r32(value);
    if constexpr (kSum)
      TSHMEMI_MM_ST1("red.relaxed.sys.global.add.u32");
    else if constexpr (kMin && is_signed_int<T>)
      TSHMEMI_MM_ST1("red.relaxed.sys.global.min.s32");
    else if constexpr (kMin)
      TSHMEMI_MM_ST1("red.relaxed.sys.global.min.u32");
    else if constexpr (is_signed_int<T>)
      TSHMEMI_MM_ST1("red.relaxed.sys.global.max.s32");
    else
      TSHMEMI_MM_ST1("red.relaxed.sys.global.max.u32");
  } else if constexpr (is_int64<T>) {
    const uint64_t b64 = *reinterpret_cast<const uint64_t *>(&value);
    if constexpr (kSum)
      TSHMEMI_MM_ST64("red.relaxed.sys.global.add.u64");
    else if constexpr (kMin && is_signed_int<T>)
      TSHMEMI_MM_ST64("red.relaxed.sys.global.min.s64");
    else if constexpr (kMin)
      TSHMEMI_MM_ST64("red.relaxed.sys.global.min.u64");
    else if constexpr (is_signed_int<T>)
      TSHMEMI_MM_ST64("red.relaxed.sys.global.max.s64");
    else
      TSHMEMI_MM_ST64("red.relaxed.sys.global.max.u64");
  } else {
    static_assert(tshmem::dependent_false<T>, "red: unsupported element type");
  }
}

}  // namespace mm_detail
}  // namespace tshmemi

namespace tshmem {

template <class T>
TSHMEMI_DEVICE T *mc_ptr(tshmem_team_t team, T *ptr, const tshmemi_device_state &st) {
  if (st.mc_base == 0) return nullptr;
  // The multicast object spans this node: the world team has one only when the job is one node.
  if (team != TSHMEMX_TEAM_NODE && !(team == TSHMEM_TEAM_WORLD && st.local_n_pes == st.n_pes)) return nullptr;
  if (tshmemi::translate_or_null(ptr, st.my_pe, st) == nullptr) return nullptr;  // outside the heap
  return tshmemi::detail::rebase(ptr, st.mc_base, st);  // the one formula, with the multicast base
}

namespace mm {

template <redop Op, class T, int N>
TSHMEMI_DEVICE vec<T, N> ld_reduce_mc(const T *a) {
  using namespace tshmemi::mm_detail;
  check_reduction<Op, T, N>();
  constexpr bool kSum = Op == redop::sum, kMin = Op == redop::min;
  vec<T, N> out;
  if constexpr (is_f32<T>) {
    uint32_t *d = r32(out);
    TSHMEMI_MM_LD_N("multimem.ld_reduce.relaxed.sys.global.add", "f32");
  } else if constexpr (is_f16x2<T>) {
    uint32_t *d = r32(out);
    if constexpr (kSum) {
      TSHMEMI_MM_LD_N("multimem.ld_reduce.relaxed.sys.global.add.acc::f32", "f16x2");
    } else if constexpr (kMin) {
      TSHMEMI_MM_LD_N("multimem.ld_reduce.relaxed.sys.global.min", "f16x2");
    } else {
      TSHMEMI_MM_LD_N("multimem.ld_reduce.relaxed.sys.global.max", "f16x2");
    }
  } else if constexpr (is_bf16x2<T>) {
    uint32_t *d = r32(out);
    if constexpr (kSum) {
      TSHMEMI_MM_LD_N("multimem.ld_reduce.relaxed.sys.global.add.acc::f32", "bf16x2");
    } else if constexpr (kMin) {
      TSHMEMI_MM_LD_N("multimem.ld_reduce.relaxed.sys.global.min", "bf16x2");
    } else {
      TSHMEMI_MM_LD_N("multimem.ld_reduce.relaxed.sys.global.max", "bf16x2");
    }
  } else if constexpr (is_int32<T>) {
    uint32_t *d = r32(out);
    if constexpr (kSum)
      TSHMEMI_MM_LD1("multimem.ld_reduce.relaxed.sys.global.add.u32");
    else if constexpr (kMin && is_signed_int<T>)
      TSHMEMI_MM_LD1("multimem.ld_reduce.relaxed.sys.global.min.s32");
    else if constexpr (kMin)
      TSHMEMI_MM_LD1("multimem.ld_reduce.relaxed.sys.global.min.u32");
    else if constexpr (is_signed_int<T>)
      TSHMEMI_MM_LD1("multimem.ld_reduce.relaxed.sys.global.max.s32");
    else
      TSHMEMI_MM_LD1("multimem.ld_reduce.relaxed.sys.global.max.u32");
  } else if constexpr (is_int64<T>) {
    uint64_t d64;
    if constexpr (kSum)
      TSHMEMI_MM_LD64("multimem.ld_reduce.relaxed.sys.global.add.u64");
    else if constexpr (kMin && is_signed_int<T>)
      TSHMEMI_MM_LD64("multimem.ld_reduce.relaxed.sys.global.min.s64");
    else if constexpr (kMin)
      TSHMEMI_MM_LD64("multimem.ld_reduce.relaxed.sys.global.min.u64");
    else if constexpr (is_signed_int<T>)
      TSHMEMI_MM_LD64("multimem.ld_reduce.relaxed.sys.global.max.s64");
    else
      TSHMEMI_MM_LD64("multimem.ld_reduce.relaxed.sys.global.max.u64");
    out = *reinterpret_cast<vec<T, N> *>(&d64);
  } else {
    static_assert(dependent_false<T>, "ld_reduce_mc: unsupported element type");
  }
  return out;
}

template <class T, int N>
TSHMEMI_DEVICE void st_mc(T *a, const vec<T, N> &value) {
  using namespace tshmemi::mm_detail;
  check_type_and_width<T, N>();
  if constexpr (is_f32<T>) {
    const uint32_t *b = r32(value);
    TSHMEMI_MM_ST_N("multimem.st.relaxed.sys.global", "f32");
  } else if constexpr (is_f16x2<T>) {
    const uint32_t *b = r32(value);
    TSHMEMI_MM_ST_N("multimem.st.relaxed.sys.global", "f16x2");
  } else if constexpr (is_bf16x2<T>) {
    const uint32_t *b = r32(value);
    TSHMEMI_MM_ST_N("multimem.st.relaxed.sys.global", "bf16x2");
  } else if constexpr (is_int32<T>) {
    const uint32_t *b = r32(value);
    TSHMEMI_MM_ST1("multimem.st.relaxed.sys.global.b32");
  } else if constexpr (is_int64<T>) {
    const uint64_t b64 = *reinterpret_cast<const uint64_t *>(&value);
    TSHMEMI_MM_ST64("multimem.st.relaxed.sys.global.b64");
  } else {
    static_assert(dependent_false<T>, "st_mc: unsupported element type");
  }
}

template <redop Op, class T, int N>
TSHMEMI_DEVICE void red_mc(T *a, const vec<T, N> &value) {
  using namespace tshmemi::mm_detail;
  check_red<Op, T, N>();
  constexpr bool kSum = Op == redop::sum, kMin = Op == redop::min;
  if constexpr (is_f32<T>) {
    const uint32_t *b = r32(value);
    TSHMEMI_MM_ST_N("multimem.red.relaxed.sys.global.add", "f32");
  } else if constexpr (is_f16x2<T>) {
    const uint32_t *b = r32(value);
    if constexpr (kSum) {
      TSHMEMI_MM_ST_N("multimem.red.relaxed.sys.global.add.acc::f32", "f16x2");
    } else if constexpr (kMin) {
      TSHMEMI_MM_ST_N("multimem.red.relaxed.sys.global.min", "f16x2");
    } else {
      TSHMEMI_MM_ST_N("multimem.red.relaxed.sys.global.max", "f16x2");
    }
  } else if constexpr (is_bf16x2<T>) {
    const uint32_t *b = r32(value);
    if constexpr (kSum) {
      TSHMEMI_MM_ST_N("multimem.red.relaxed.sys.global.add.acc::f32", "bf16x2");
    } else if constexpr (kMin) {
      TSHMEMI_MM_ST_N("multimem.red.relaxed.sys.global.min", "bf16x2");
    } else {
      TSHMEMI_MM_ST_N("multimem.red.relaxed.sys.global.max", "bf16x2");
    }
  } else if constexpr (is_int32<T>) {
    const uint32_t *b = r32(value);
    if constexpr (kSum)
      TSHMEMI_MM_ST1("multimem.red.relaxed.sys.global.add.u32");
    else if constexpr (kMin && is_signed_int<T>)
      TSHMEMI_MM_ST1("multimem.red.relaxed.sys.global.min.s32");
    else if constexpr (kMin)
      TSHMEMI_MM_ST1("multimem.red.relaxed.sys.global.min.u32");
    else if constexpr (is_signed_int<T>)
      TSHMEMI_MM_ST1("multimem.red.relaxed.sys.global.max.s32");
    else
      TSHMEMI_MM_ST1("multimem.red.relaxed.sys.global.max.u32");
  } else if constexpr (is_int64<T>) {
    const uint64_t b64 = *reinterpret_cast<const uint64_t *>(&value);
    if constexpr (kSum)
      TSHMEMI_MM_ST64("multimem.red.relaxed.sys.global.add.u64");
    else if constexpr (kMin && is_signed_int<T>)
      TSHMEMI_MM_ST64("multimem.red.relaxed.sys.global.min.s64");
    else if constexpr (kMin)
      TSHMEMI_MM_ST64("multimem.red.relaxed.sys.global.min.u64");
    else if constexpr (is_signed_int<T>)
      TSHMEMI_MM_ST64("multimem.red.relaxed.sys.global.max.s64");
    else
      TSHMEMI_MM_ST64("multimem.red.relaxed.sys.global.max.u64");
  } else {
    static_assert(dependent_false<T>, "red_mc: unsupported element type");
  }
}

template <redop Op, class T, int N>
TSHMEMI_DEVICE vec<T, N> ld_reduce_unicast(const team_view &team, const T *sym, const tshmemi_device_state &st) {
  using namespace tshmemi::mm_detail;
  check_reduction<Op, T, N>();
  vec<T, N> out;
  if constexpr (is_f32<T> || is_packed<T>) {
    constexpr int L = N * kLanes<T>;
    float acc[L];
    for (int k = 0; k < team.size; ++k) {  // team-index order: the documented accumulation order
      const vec<T, N> x = load_relaxed<T, N>(tshmemi::remote_ptr(sym, team.pe(k), "tshmem::mm::ld_reduce", st));
      float f[L];
#pragma unroll
      for (int i = 0; i < N; ++i) to_f32(x.v[i], f + i * kLanes<T>);
#pragma unroll
      for (int j = 0; j < L; ++j) acc[j] = k == 0 ? f[j] : combine_f32<Op>(acc[j], f[j]);
    }
#pragma unroll
    for (int i = 0; i < N; ++i) out.v[i] = from_f32<T>(acc + i * kLanes<T>);  // one rounding
  } else {
    for (int k = 0; k < team.size; ++k) {
      const vec<T, N> x = load_relaxed<T, N>(tshmemi::remote_ptr(sym, team.pe(k), "tshmem::mm::ld_reduce", st));
      out.v[0] = k == 0 ? x.v[0] : combine_int<Op>(out.v[0], x.v[0]);
    }
  }
  return out;
}

template <class T, int N>
TSHMEMI_DEVICE void st_unicast(const team_view &team, T *sym, const vec<T, N> &value, const tshmemi_device_state &st) {
  tshmemi::mm_detail::check_type_and_width<T, N>();
  for (int k = 0; k < team.size; ++k)
    tshmemi::mm_detail::store_relaxed<T, N>(tshmemi::remote_ptr(sym, team.pe(k), "tshmem::mm::st", st), value);
}

template <redop Op, class T, int N>
TSHMEMI_DEVICE void red_unicast(const team_view &team, T *sym, const vec<T, N> &value, const tshmemi_device_state &st) {
  tshmemi::mm_detail::check_red<Op, T, N>();
  for (int k = 0; k < team.size; ++k)
    tshmemi::mm_detail::red_relaxed<Op, T, N>(tshmemi::remote_ptr(sym, team.pe(k), "tshmem::mm::red", st), value);
}

template <redop Op, class T, int N>
TSHMEMI_DEVICE vec<T, N> ld_reduce(tshmem_team_t team, const T *sym, const tshmemi_device_state &st) {
  if (const T *mc = mc_ptr(team, sym, st)) return ld_reduce_mc<Op, T, N>(mc);
  return ld_reduce_unicast<Op, T, N>(team_of(team, st), sym, st);
}

template <class T, int N>
TSHMEMI_DEVICE void st(tshmem_team_t team, T *sym, const vec<T, N> &value, const tshmemi_device_state &st) {
  if (T *mc = mc_ptr(team, sym, st)) return st_mc<T, N>(mc, value);
  st_unicast<T, N>(team_of(team, st), sym, value, st);
}

template <redop Op, class T, int N>
TSHMEMI_DEVICE void red(tshmem_team_t team, T *sym, const vec<T, N> &value, const tshmemi_device_state &st) {
  if (T *mc = mc_ptr(team, sym, st)) return red_mc<Op, T, N>(mc, value);
  red_unicast<Op, T, N>(team_of(team, st), sym, value, st);
}

TSHMEMI_DEVICE void signal_set(tshmem_team_t team, uint64_t *sig, uint64_t value, const tshmemi_device_state &st) {
  tshmemi::fence_acq_rel_sys();
  if (uint64_t *a = mc_ptr(team, sig, st)) {
    const uint64_t b64 = value;
    TSHMEMI_MM_ST64("multimem.st.release.sys.global.u64");
    return;
  }
  const team_view t = team_of(team, st);
  for (int k = 0; k < t.size; ++k)
    tshmemi::store_release_sys(tshmemi::remote_ptr_lane(sig, t.pe(k), "tshmem::mm::signal_set", st), value);
}

TSHMEMI_DEVICE void signal_add(tshmem_team_t team, uint64_t *sig, uint64_t value, const tshmemi_device_state &st) {
  tshmemi::fence_acq_rel_sys();
  if (uint64_t *a = mc_ptr(team, sig, st)) {
    const uint64_t b64 = value;
    TSHMEMI_MM_ST64("multimem.red.release.sys.global.add.u64");
    return;
  }
  const team_view t = team_of(team, st);
  for (int k = 0; k < t.size; ++k)
    tshmemi::add_release_sys(tshmemi::remote_ptr_lane(sig, t.pe(k), "tshmem::mm::signal_add", st), value);
}

}  // namespace mm
}  // namespace tshmem

#undef TSHMEMI_MM_LD1
#undef TSHMEMI_MM_LD2
#undef TSHMEMI_MM_LD4
#undef TSHMEMI_MM_LD64
#undef TSHMEMI_MM_ST1
#undef TSHMEMI_MM_ST2
#undef TSHMEMI_MM_ST4
#undef TSHMEMI_MM_ST64
#undef TSHMEMI_MM_LD_N
#undef TSHMEMI_MM_ST_N

#endif  // TSHMEM_DEVICE_COMPILE
#endif  // TSHMEM_DEVICE_IMPL_MULTIMEM_CUH
