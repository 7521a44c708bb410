// Bodies of tshmem/device/coll.cuh.
//
// Barrier words and the LL receive area live in tshmem's internal heap region (internal_regions.h has the layout).
// A split team has words of its own, so its collectives never mix with another team's: split handles are the same
// on every member (tshmem_team_split_strided agrees on one), and a handle's words are zero while it is free (zeroed
// at init and by tshmem_team_destroy). Split teams do not use the LL area (their all-reduce is barrier-bracketed).
// ROWS (32) bounds the barrier-bracketed forms; the LL all-reduce has its own, larger bound LL_ROWS (128), so a
// small all-reduce can spread over most of the SMs (the LL area's capacity is the same however it is split).
//
// LL (flag-in-data) one-shot all-reduce: no barrier at all. A line is two 8-byte words {data bits, flag bits}
// (48 + 16 for 2- and 4-byte elements, 32 + 32 for 8-byte ones: ll_format), each written and read as one
// single-copy-atomic 64-bit element of a v2.u64 volatile access (PTX treats a vector access as independent
// accesses of its elements), so a reader that sees the call's flag in a word sees that word's data. Call c of
// row r (c = ll_calls[r] + 1, the same on every member because every member makes the same calls) uses parity
// c & 1 and flag (c mod (2^B - 1)) + 1 (never 0, the zeroed state). A member pushes its lines into the
// parity-(c & 1) slot every peer keeps for it, then spins on the lines of its own slots. Slot reuse is safe
// without a barrier: a member writes parity c & 1 again only in call c + 2, after it read its peers' call c + 1
// lines, which each peer pushed after finishing its reads of call c (program/stream order of the row); so no
// member is more than one call ahead of another per row, and a slot holds lines of call c or c - 2 only,
// whose flags differ for any B >= 2.
#ifndef TSHMEM_DEVICE_IMPL_COLL_CUH
#define TSHMEM_DEVICE_IMPL_COLL_CUH

#include "tshmem/device/impl/copy.cuh"
#include "tshmem/device/impl/epoch_barrier.cuh"
#include "tshmem/device/impl/group.cuh"
#include "tshmem/device/internal_regions.h"
#include "tshmem/device/multimem.cuh"
#include "tshmem/device/sync.cuh"
#include "tshmem/device/wait.cuh"  // the declarations with their default arguments, then the bodies

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {
namespace coll_detail {

constexpr size_t kRowEpochs = TSHMEMI_COLL_ROW_EPOCHS_OFFSET;
constexpr size_t kLlCalls = TSHMEMI_COLL_LL_CALLS_OFFSET;
constexpr size_t kThreadEpoch = TSHMEMI_COLL_THREAD_EPOCH_OFFSET;

using block = group<tshmem::block_scope>;

/// Offset of `team`'s barrier words (row epochs; the flags follow them) in the internal region.
TSHMEMI_DEVICE size_t sync_words(tshmem_team_t team) {
  return team < TSHMEMI_COLL_FIRST_SPLIT_TEAM ? kRowEpochs : TSHMEMI_COLL_TEAM_SYNC_OFFSET(team);
}

/// Offset of `team`'s thread-form row: its epoch, then its flags.
TSHMEMI_DEVICE size_t thread_words(tshmem_team_t team) {
  return team < TSHMEMI_COLL_FIRST_SPLIT_TEAM
             ? kThreadEpoch
             : sync_words(team) + 8 * TSHMEMI_COLL_MAX_ROWS + 8 * TSHMEMI_COLL_MAX_ROWS * TSHMEMI_COLL_MAX_TEAM;
}

/// Barrier of one thread per member of `team` (the thread and warp forms on a team without every PE), on the
/// team's thread row, so it never mixes with the block rows. The calling thread's earlier writes are visible to
/// every member after it; what members wrote before it is visible here.
TSHMEMI_DEVICE void thread_barrier(tshmem_team_t team, const tshmem::team_view &t, const char *call,
                                   const tshmemi_device_state &st) {
  const auto words = [&] {
    char *base = own_heap_base(st) + thread_words(team);
    return barrier_words{reinterpret_cast<volatile uint64_t *>(base), reinterpret_cast<uint64_t *>(base + 8)};
  };
  epoch_barrier<tshmem::thread_scope, barrier_reach::node>(
      words, t.my_index, t.size, [&t](int k) { return t.pe(k); }, call, st);
}

/// Rendezvous of block row `row` on every member of `team` (viewed as `t`): earlier writes of this block (local
/// or remote) are visible to every member's block of that row after it. All threads of the block call.
TSHMEMI_DEVICE void row_barrier(tshmem_team_t team, const tshmem::team_view &t, int row, const char *call,
                                const tshmemi_device_state &st) {
  const auto words = [&] {
    char *base = own_heap_base(st);
    const size_t team_words = sync_words(team);
    return barrier_words{reinterpret_cast<volatile uint64_t *>(base + team_words + 8 * row),
                         reinterpret_cast<uint64_t *>(base + team_words + 8 * TSHMEMI_COLL_MAX_ROWS) +
                             static_cast<size_t>(row) * TSHMEMI_COLL_MAX_TEAM};
  };
  epoch_barrier<tshmem::block_scope, barrier_reach::node>(
      words, t.my_index, t.size, [&t](int k) { return t.pe(k); }, call, st);
}

TSHMEMI_DEVICE void check_shape(const tshmem::team_view &t, int row, int rows, const char *call,
                                const tshmemi_device_state &st) {
  if (row >= TSHMEMI_COLL_MAX_ROWS || rows > TSHMEMI_COLL_MAX_ROWS) trap_bad_operator(call, rows, st.my_pe);
  if (t.size > TSHMEMI_COLL_MAX_TEAM) trap_bad_operator(call, t.size, st.my_pe);
}

struct span {
  size_t begin, end;
};

/// Part p of `total` units split into `parts` near-equal pieces.
TSHMEMI_DEVICE span split(size_t total, size_t parts, size_t p) {
  const size_t q = total / parts, r = total % parts;
  const size_t begin = p * q + (p < r ? p : r);
  return {begin, begin + q + (p < r ? 1 : 0)};
}

/// Part p of `nbytes` in 16-byte units; the last part takes the odd tail.
TSHMEMI_DEVICE span split_bytes(size_t nbytes, size_t parts, size_t p) {
  span s = split(nbytes / 16, parts, p);
  s.begin *= 16;
  s.end = p + 1 == parts ? nbytes : s.end * 16;
  return s;
}

// ---- element arithmetic: f32 accumulation for the 16/32-bit float types, f64 for double, wrap-around for
// integers (unsigned types compare unsigned) ----------------------------------------------------------------
template <class T>
using acc_t = std::conditional_t<std::is_integral_v<T> || std::is_same_v<T, double>, T, float>;

template <class T>
TSHMEMI_DEVICE acc_t<T> to_acc(T x) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_integral_v<T>)
    return x;
  else if constexpr (std::is_same_v<T, __half>)
    return __half2float(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(x);
  else
    static_assert(tshmem::dependent_false<T>, "collectives: float, __half, __nv_bfloat16, int32_t, int64_t");
}

template <class T>
TSHMEMI_DEVICE T from_acc(acc_t<T> a) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_integral_v<T>)
    return a;
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(a);  // the one rounding
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(a);
  else
    static_assert(tshmem::dependent_false<T>, "collectives: float, __half, __nv_bfloat16, int32_t, int64_t");
}

/// One step of the reduction; the operator is a run-time value (one kernel per type). The host refuses the
/// bitwise operators on float types; here they fall back to sum, never reached.
template <class A>
TSHMEMI_DEVICE A combine(tshmem::redop op, A acc, A x) {
  using tshmem::redop;
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    switch (op) {
      case redop::min: return x < acc ? x : acc;
      case redop::max: return x > acc ? x : acc;
      case redop::prod: return static_cast<A>(static_cast<U>(acc) * static_cast<U>(x));
      case redop::band: return static_cast<A>(acc & x);
      case redop::bor: return static_cast<A>(acc | x);
      case redop::bxor: return static_cast<A>(acc ^ x);
      case redop::sum: break;
    }
    return static_cast<A>(static_cast<U>(acc) + static_cast<U>(x));
  } else {
    switch (op) {
      case redop::min:
        if constexpr (std::is_same_v<A, double>)
          return fmin(acc, x);
        else
          return fminf(acc, x);
      case redop::max:
        if constexpr (std::is_same_v<A, double>)
          return fmax(acc, x);
        else
          return fmaxf(acc, x);
      case redop::prod: return acc * x;
      default: break;
    }
    return acc + x;
  }
}

/// Reduces elements [first, first + n) of `src` over the team (team-index order) and stores the result to
/// `dst` locally, or (push) to every member's `dst`. Vec: 16-byte units (n a multiple of 16/sizeof(T),
/// src + first and dst + first 16-byte aligned); else one element at a time.
template <class T, bool Vec>
TSHMEMI_DEVICE void reduce_elems(const tshmem::team_view &t, tshmem::redop op, T *dst, const T *src, size_t first,
                                 size_t n, bool push, const char *call, const tshmemi_device_state &st) {
  using U = std::conditional_t<Vec, uint4, T>;
  constexpr int E = static_cast<int>(sizeof(U) / sizeof(T));
  constexpr int B = Vec ? 4 : 1;  // units per thread in flight per member (remote loads are latency-bound)
  const size_t rank = block::rank(), size = block::size(), units = n / E;
  for (size_t u0 = rank; u0 < units; u0 += B * size) {
    acc_t<T> acc[B][E];
    for (int k = 0; k < t.size; ++k) {
      const U *from = reinterpret_cast<const U *>(remote_ptr(src + first, t.pe(k), call, st));
      U raw[B];
#pragma unroll
      for (int b = 0; b < B; ++b) raw[b] = u0 + b * size < units ? from[u0 + b * size] : U{};
#pragma unroll
      for (int b = 0; b < B; ++b) {
        const T *x = reinterpret_cast<const T *>(&raw[b]);
#pragma unroll
        for (int j = 0; j < E; ++j) acc[b][j] = k == 0 ? to_acc(x[j]) : combine(op, acc[b][j], to_acc(x[j]));
      }
    }
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const size_t u = u0 + b * size;
      if (u >= units) break;
      const size_t e = first + u * E;
      U out;
      T *o = reinterpret_cast<T *>(&out);
#pragma unroll
      for (int j = 0; j < E; ++j) o[j] = from_acc<T>(acc[b][j]);
      if (!push) {
        *reinterpret_cast<U *>(dst + e) = out;
      } else {
        for (int k = 0; k < t.size; ++k)  // start at the next member: spreads the writes over the links
          *reinterpret_cast<U *>(remote_ptr(dst + e, t.pe((t.my_index + 1 + k) % t.size), call, st)) = out;
      }
    }
  }
}

/// The same on a range that may be unaligned: vector units where possible, elements for the rest.
template <class T>
TSHMEMI_DEVICE void reduce_range(const tshmem::team_view &t, tshmem::redop op, T *dst, const T *src, size_t first,
                                 size_t n, bool push, const char *call, const tshmemi_device_state &st) {
  constexpr size_t E = 16 / sizeof(T);
  const bool aligned =
      ((reinterpret_cast<uintptr_t>(dst + first) | reinterpret_cast<uintptr_t>(src + first)) & 15) == 0;
  const size_t vec_n = aligned ? n / E * E : 0;
  if (vec_n != 0) reduce_elems<T, true>(t, op, dst, src, first, vec_n, push, call, st);
  if (vec_n != n) reduce_elems<T, false>(t, op, dst, src, first + vec_n, n - vec_n, push, call, st);
}

/// Element types multimem reduces (no f64).
template <class T>
inline constexpr bool mc_type = !std::is_same_v<T, double>;

/// True when multimem has an ld_reduce for (T, op): sum, min and max only, and no f32 min/max.
template <class T>
TSHMEMI_DEVICE bool mc_has_op(tshmem::redop op) {
  if (!mc_type<T> || (op != tshmem::redop::sum && op != tshmem::redop::min && op != tshmem::redop::max)) return false;
  return !(std::is_same_v<T, float> && op != tshmem::redop::sum);
}

/// multimem all-reduce of 16-byte units [first, first + n) (aligned; n a multiple of 16/sizeof(T)): one
/// ld_reduce from the source's multicast address, one st to the destination's. Needs mc_has_op<T>(op).
template <class T>
TSHMEMI_DEVICE void mc_allreduce(tshmem::redop op, T *mc_dst, const T *mc_src, size_t first, size_t n) {
  using tshmem::redop;
  constexpr size_t E = 16 / sizeof(T);
  const size_t rank = block::rank(), size = block::size();
  for (size_t u = rank; u < n / E; u += size) {
    const size_t e = first + u * E;
    if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
      using P = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
      const P *s = reinterpret_cast<const P *>(mc_src + e);
      tshmem::vec<P, 4> v = op == redop::sum   ? tshmem::mm::ld_reduce_mc<redop::sum, P, 4>(s)
                            : op == redop::min ? tshmem::mm::ld_reduce_mc<redop::min, P, 4>(s)
                                               : tshmem::mm::ld_reduce_mc<redop::max, P, 4>(s);
      tshmem::mm::st_mc<P, 4>(reinterpret_cast<P *>(mc_dst + e), v);
    } else if constexpr (std::is_same_v<T, float>) {
      tshmem::mm::st_mc<float, 4>(mc_dst + e, tshmem::mm::ld_reduce_mc<redop::sum, float, 4>(mc_src + e));
    } else {  // integers: no vector forms, E scalar ops per unit
#pragma unroll
      for (size_t j = 0; j < E; ++j) {
        const T *s = mc_src + e + j;
        tshmem::vec<T, 1> v = op == redop::sum   ? tshmem::mm::ld_reduce_mc<redop::sum, T, 1>(s)
                              : op == redop::min ? tshmem::mm::ld_reduce_mc<redop::min, T, 1>(s)
                                                 : tshmem::mm::ld_reduce_mc<redop::max, T, 1>(s);
        tshmem::mm::st_mc<T, 1>(mc_dst + e + j, v);
      }
    }
  }
}

// ---- LL one-shot all-reduce (see the top of this file) ------------------------------------------------------
TSHMEMI_DEVICE void ll_store(ulonglong2 *line, uint64_t a, uint64_t b) {
  asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(line), "l"(a), "l"(b) : "memory");
}

TSHMEMI_DEVICE void ll_load(const ulonglong2 *line, uint64_t &a, uint64_t &b) {
  asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(line) : "memory");
}

/// The LL line format for element type T. A 16-byte line is two 8-byte words, each {data, flag}:
///  * 2- and 4-byte types: 48 data bits + a 16-bit flag per word, 12 data bytes per line (75 % of the bytes
///    moved are data);
///  * 8-byte types: 32 + 32, 8 data bytes per line (an element must not straddle two lines' words).
/// The flag of call c is (c mod (2^B - 1)) + 1 for B flag bits: never 0 (zeroed memory), and different for
/// calls c and c - 2, the only other call whose lines a slot can hold (see the top of this file).
template <class T>
struct ll_format {
  static constexpr size_t kLineBytes = TSHMEMI_COLL_LL_LINE_BYTES(sizeof(T));
  static constexpr bool kWide = kLineBytes == 12;
  static constexpr size_t kElems = kLineBytes / sizeof(T);
  static constexpr int kFlagShift = kWide ? 48 : 32;
  static constexpr uint64_t kFlagCycle = kWide ? 0xffffull : 0xffffffffull;

  /// Data words (12 or 8 bytes as three or two u32) into the two line words, tagged with `flag`.
  static TSHMEMI_DEVICE void pack(const uint32_t (&d)[3], uint64_t flag, uint64_t &w0, uint64_t &w1) {
    const uint64_t tag = flag << kFlagShift;
    if constexpr (kWide) {
      w0 = tag | (static_cast<uint64_t>(d[1] & 0xffffu) << 32) | d[0];
      w1 = tag | (static_cast<uint64_t>(d[2]) << 16) | (d[1] >> 16);
    } else {
      w0 = tag | d[0];
      w1 = tag | d[1];
    }
  }
  static TSHMEMI_DEVICE void unpack(uint64_t w0, uint64_t w1, uint32_t (&d)[3]) {
    if constexpr (kWide) {
      d[0] = static_cast<uint32_t>(w0);
      d[1] = static_cast<uint32_t>((w0 >> 32) & 0xffffu) | static_cast<uint32_t>((w1 & 0xffffu) << 16);
      d[2] = static_cast<uint32_t>(w1 >> 16);
    } else {
      d[0] = static_cast<uint32_t>(w0);
      d[1] = static_cast<uint32_t>(w1);
      d[2] = 0;
    }
  }
  static TSHMEMI_DEVICE bool tagged(uint64_t w, uint64_t flag) { return (w >> kFlagShift) == flag; }
};

/// Waits until both words of `line` carry `flag`; returns their data. Traps after the state's wait timeout,
/// like every other wait.
template <class T>
TSHMEMI_DEVICE void ll_wait(const ulonglong2 *line, uint64_t flag, uint32_t (&d)[3], const char *call,
                            const tshmemi_device_state &st) {
  using F = ll_format<T>;
  uint64_t a, b;
  ll_load(line, a, b);
  if (!F::tagged(a, flag) || !F::tagged(b, flag)) {
    const uint64_t timeout = st.wait_timeout_ns;
    const uint64_t start = timeout != 0 ? global_timer_ns() : 0;
    for (;;) {
      ll_load(line, a, b);
      if (F::tagged(a, flag) && F::tagged(b, flag)) break;
      if (timeout != 0 && global_timer_ns() - start > timeout)
        trap_wait_timeout(call, line, TSHMEM_CMP_EQ, flag, (F::tagged(a, flag) ? b : a) >> F::kFlagShift,
                          static_cast<unsigned long long>(timeout), st.my_pe);
    }
  }
  F::unpack(a, b, d);
}

/// Lines (of ll_format<T>::kLineBytes data bytes) that `count` elements take.
template <class T>
TSHMEMI_DEVICE constexpr size_t ll_lines(size_t count) {
  return (count + ll_format<T>::kElems - 1) / ll_format<T>::kElems;
}

/// True when the LL path can take `count` elements of T split over `parts` rows in a team of `n`.
template <class T>
TSHMEMI_DEVICE bool ll_fits(size_t count, int parts, int n) {
  const size_t lines = ll_lines<T>(count);
  return (lines + static_cast<size_t>(parts) - 1) / static_cast<size_t>(parts) <= TSHMEMI_COLL_LL_ROW_LINES(n);
}

/// Line `line` of p as data words: whole 4-byte words when p is 4-byte aligned and the line is whole, else
/// element by element with zeros past `count`.
template <class T>
TSHMEMI_DEVICE void ll_read_line(const T *p, size_t line, size_t count, bool aligned, uint32_t (&d)[3]) {
  using F = ll_format<T>;
  const size_t e0 = line * F::kElems;
  d[0] = d[1] = d[2] = 0;
  if (aligned && e0 + F::kElems <= count) {
    const uint32_t *w = reinterpret_cast<const uint32_t *>(p + e0);
#pragma unroll
    for (size_t i = 0; i < F::kLineBytes / 4; ++i) d[i] = w[i];
    return;
  }
  T x[F::kElems];
#pragma unroll
  for (size_t j = 0; j < F::kElems; ++j) x[j] = e0 + j < count ? p[e0 + j] : T{};
  memcpy(d, x, sizeof x);
}

template <class T>
TSHMEMI_DEVICE void ll_write_line(T *p, size_t line, size_t count, bool aligned, const uint32_t (&d)[3]) {
  using F = ll_format<T>;
  const size_t e0 = line * F::kElems;
  if (aligned && e0 + F::kElems <= count) {
    uint32_t *w = reinterpret_cast<uint32_t *>(p + e0);
#pragma unroll
    for (size_t i = 0; i < F::kLineBytes / 4; ++i) w[i] = d[i];
    return;
  }
  T x[F::kElems];
  memcpy(x, d, sizeof x);
#pragma unroll
  for (size_t j = 0; j < F::kElems; ++j)
    if (e0 + j < count) p[e0 + j] = x[j];
}

/// LL one-shot all-reduce of lines [first, first + n_lines) on block row `row`: push every line to every
/// peer's slot, then reduce the peers' lines (as they arrive) with the own ones in team-index order and store
/// to dst. In place allowed (a thread reads its own lines of src before it writes them to dst). Needs
/// n_lines <= TSHMEMI_COLL_LL_ROW_LINES(t.size) (ll_fits).
template <class T>
TSHMEMI_DEVICE void allreduce_ll(const tshmem::team_view &t, tshmem::redop op, T *dst, const T *src, size_t count,
                                 size_t first, size_t n_lines, int row, const char *call,
                                 const tshmemi_device_state &st) {
  using F = ll_format<T>;
  constexpr size_t E = F::kElems;
  constexpr int kKept = 2;  // a thread's first lines stay in registers from the push to the reduce
  __syncthreads();          // the previous LL call of this row (same block) has recorded its number
  const size_t rank = block::rank(), size = block::size();
  const bool aligned = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 3) == 0;
  // The first lines of src and the call number are independent loads: issued together, one round trip.
  uint32_t kept[kKept][3];
#pragma unroll
  for (int j = 0; j < kKept; ++j)
    if (rank + j * size < n_lines) ll_read_line(src, first + rank + j * size, count, aligned, kept[j]);
  char *base = own_heap_base(st);
  volatile uint64_t *calls_word = reinterpret_cast<volatile uint64_t *>(base + kLlCalls + 8 * row);
  const uint64_t c = *calls_word + 1;
  const uint64_t flag = c % F::kFlagCycle + 1;
  const size_t slot_lines = TSHMEMI_COLL_LL_ROW_LINES(t.size);
  const size_t area = TSHMEMI_COLL_LL_OFFSET + static_cast<size_t>(row) * 2 * TSHMEMI_COLL_LL_PARITY_BYTES +
                      (c & 1) * TSHMEMI_COLL_LL_PARITY_BYTES;
  ulonglong2 *mine = reinterpret_cast<ulonglong2 *>(base + area);
  // The slot member `sender` has in member `receiver`'s area: its rank among the other n - 1 members.
  const auto slot_of = [&](int sender, int receiver) {
    return static_cast<size_t>(sender < receiver ? sender : sender - 1) * slot_lines;
  };
  // This thread's lines with their src data: the kept ones from registers, the rest read again.
  const auto each_line = [&](auto &&body) {
#pragma unroll
    for (int j = 0; j < kKept; ++j)
      if (rank + j * size < n_lines) body(rank + j * size, kept[j]);
    for (size_t l = rank + kKept * size; l < n_lines; l += size) {
      uint32_t d[3];
      ll_read_line(src, first + l, count, aligned, d);
      body(l, d);
    }
  };
  // 1. Push: every line to every peer, into the slot that peer keeps for this member.
  each_line([&](size_t l, const uint32_t(&d)[3]) {
    uint64_t w0, w1;
    F::pack(d, flag, w0, w1);
    for (int i = 1; i < t.size; ++i) {
      const int k = (t.my_index + i) % t.size;
      ll_store(remote_ptr(mine + slot_of(t.my_index, k) + l, t.pe(k), call, st), w0, w1);
    }
  });
  // 2. Reduce: the same lines of every member, team-index order, as they arrive.
  each_line([&](size_t l, const uint32_t(&own)[3]) {
    acc_t<T> acc[E];
    for (int k = 0; k < t.size; ++k) {
      uint32_t d[3];
      if (k == t.my_index) {
        d[0] = own[0], d[1] = own[1], d[2] = own[2];
      } else {
        ll_wait<T>(mine + slot_of(k, t.my_index) + l, flag, d, call, st);
      }
      T x[E];
      memcpy(x, d, sizeof x);
#pragma unroll
      for (size_t j = 0; j < E; ++j) acc[j] = k == 0 ? to_acc(x[j]) : combine(op, acc[j], to_acc(x[j]));
    }
    T o[E];
#pragma unroll
    for (size_t j = 0; j < E; ++j) o[j] = from_acc<T>(acc[j]);
    uint32_t out[3] = {0, 0, 0};
    memcpy(out, o, sizeof o);
    ll_write_line(dst, first + l, count, aligned, out);
  });
  __syncthreads();
  if (rank == 0) *calls_word = c;  // read again only after the next LL call's leading __syncthreads
}

/// Two-shot all-reduce of 16-byte units [0, units) for two members, out of place, by stores only (NVLink
/// stores stream; loads from a peer wait a round trip each). Half h of the units is member h's to reduce;
/// block `part` of either member handles slice `part` of each half, so one row barrier pairs the phases:
///   1. store my src's slice of the peer's half into the peer's dst (its staging: that is the peer's result
///      range, and nobody else writes it before phase 2);
///   2. row barrier; reduce my slice of my half: own src with the staged peer values (x0 + x1 in team-index
///      order, f32 for the float types), store to my dst and to the peer's dst.
/// The caller brackets it with its entry and exit row barriers.
template <class T>
TSHMEMI_DEVICE void allreduce_pair_push(tshmem_team_t team, const tshmem::team_view &t, tshmem::redop op, T *dst,
                                        const T *src, size_t units, int part, int parts, int row, const char *call,
                                        const tshmemi_device_state &st) {
  constexpr int E = 16 / sizeof(T);
  const int peer_index = 1 - t.my_index;
  const int peer = t.pe(peer_index);
  const size_t p = static_cast<size_t>(part), ps = static_cast<size_t>(parts);
  const span their_half = split(units, 2, static_cast<size_t>(peer_index));
  const span theirs = split(their_half.end - their_half.begin, ps, p);
  const size_t their_first = their_half.begin + theirs.begin;
  copy_bytes<tshmem::block_scope>(remote_ptr(dst + their_first * E, peer, call, st), src + their_first * E,
                                  (theirs.end - theirs.begin) * 16);
  row_barrier(team, t, row, call, st);
  const span half = split(units, 2, static_cast<size_t>(t.my_index));
  const span mine = split(half.end - half.begin, ps, p);
  const uint4 *own = reinterpret_cast<const uint4 *>(src + (half.begin + mine.begin) * E);
  uint4 *out = reinterpret_cast<uint4 *>(dst + (half.begin + mine.begin) * E);
  uint4 *out_peer = remote_ptr(out, peer, call, st);
  const size_t n = mine.end - mine.begin, rank = block::rank(), size = block::size();
  constexpr int B = 4;  // units per thread in flight
  for (size_t u0 = rank; u0 < n; u0 += B * size) {
    uint4 a[B], b[B];
#pragma unroll
    for (int k = 0; k < B; ++k) {
      const size_t u = u0 + k * size;
      a[k] = u < n ? own[u] : uint4{};
      b[k] = u < n ? out[u] : uint4{};  // the peer's values, staged in phase 1
    }
#pragma unroll
    for (int k = 0; k < B; ++k) {
      const size_t u = u0 + k * size;
      if (u >= n) break;
      const T *x_own = reinterpret_cast<const T *>(&a[k]), *x_peer = reinterpret_cast<const T *>(&b[k]);
      const T *x0 = t.my_index == 0 ? x_own : x_peer, *x1 = t.my_index == 0 ? x_peer : x_own;
      uint4 r;
      T *o = reinterpret_cast<T *>(&r);
#pragma unroll
      for (int j = 0; j < E; ++j) o[j] = from_acc<T>(combine(op, to_acc(x0[j]), to_acc(x1[j])));
      out[u] = r;
      out_peer[u] = r;
    }
  }
}

/// All-reduce on part `part` of `parts` (row `row`): see coll.cuh.
template <class T>
TSHMEMI_DEVICE void allreduce(tshmem_team_t team, T *dst, const T *src, size_t count, tshmem::redop op, bool two_shot,
                              int part, int parts, int row, const tshmemi_device_state &st) {
  const char *call = "tshmem::coll::allreduce";
  const tshmem::team_view t = tshmem::team_of(team, st);
  if (!two_shot && team < TSHMEMI_COLL_FIRST_SPLIT_TEAM && parts <= TSHMEMI_COLL_LL_MAX_ROWS &&
      ll_fits<T>(count, parts, t.size)) {
    // The same choice on every member: no barrier at all, and LL rows of its own.
    if (row >= TSHMEMI_COLL_LL_MAX_ROWS) trap_bad_operator(call, row, st.my_pe);
    if (t.size > TSHMEMI_COLL_MAX_TEAM) trap_bad_operator(call, t.size, st.my_pe);
    const span s = split(ll_lines<T>(count), static_cast<size_t>(parts), static_cast<size_t>(part));
    allreduce_ll<T>(t, op, dst, src, count, s.begin, s.end - s.begin, row, call, st);
    return;
  }
  check_shape(t, row, parts, call, st);
  row_barrier(team, t, row, call, st);  // every member's src is ready (and its dst free)
  constexpr size_t E = 16 / sizeof(T);
  T *mc_dst = tshmem::mc_ptr(team, dst, st);
  const T *mc_src = tshmem::mc_ptr(team, src, st);
  const bool mc = mc_dst != nullptr && mc_src != nullptr && mc_has_op<T>(op);
  const bool aligned = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0;
  const size_t units = aligned ? count / E : 0;  // 16-byte units; the rest goes element by element
  const size_t tail_first = units * E, tail_n = count - tail_first;
  if (!two_shot) {
    // One-shot: this PE computes every element, reading every member's src; writes only its own dst.
    const span s = split(units, static_cast<size_t>(parts), static_cast<size_t>(part));
    reduce_elems<T, true>(t, op, dst, src, s.begin * E, (s.end - s.begin) * E, false, call, st);
    if (part == 0 && tail_n != 0) reduce_elems<T, false>(t, op, dst, src, tail_first, tail_n, false, call, st);
  } else if (t.size == 2 && dst != src && !mc) {  // stores only: see allreduce_pair_push
    allreduce_pair_push<T>(team, t, op, dst, src, units, part, parts, row, call, st);
    if (t.my_index == 0 && part == 0 && tail_n != 0)
      reduce_elems<T, false>(t, op, dst, src, tail_first, tail_n, true, call, st);
  } else {
    // Two-shot: member i reduces its share of the units and pushes the result to every member (multimem: one
    // ld_reduce and one st per unit when the team has multicast addresses for both buffers).
    const size_t pieces = static_cast<size_t>(t.size) * static_cast<size_t>(parts);
    const span s = split(units, pieces, static_cast<size_t>(t.my_index) * static_cast<size_t>(parts) + part);
    if constexpr (mc_type<T>) {
      if (mc) mc_allreduce<T>(op, mc_dst, mc_src, s.begin * E, (s.end - s.begin) * E);
    }
    if (!mc) reduce_elems<T, true>(t, op, dst, src, s.begin * E, (s.end - s.begin) * E, true, call, st);
    if (t.my_index == 0 && part == 0 && tail_n != 0)
      reduce_elems<T, false>(t, op, dst, src, tail_first, tail_n, true, call, st);
  }
  row_barrier(team, t, row, call, st);  // every member's dst is complete; nobody reads src any more
}

template <class T>
TSHMEMI_DEVICE void reduce_scatter(tshmem_team_t team, T *dst, const T *src, size_t count, tshmem::redop op, int part,
                                   int parts, int row, const tshmemi_device_state &st) {
  const char *call = "tshmem::coll::reduce_scatter";
  const tshmem::team_view t = tshmem::team_of(team, st);
  check_shape(t, row, parts, call, st);
  row_barrier(team, t, row, call, st);
  // This PE's block of every member's src, reduced into its own dst (dst + k <- src + my_index * count + k).
  const T *mine = src + static_cast<size_t>(t.my_index) * count;
  const span s = split(count, static_cast<size_t>(parts), static_cast<size_t>(part));
  reduce_range<T>(t, op, dst, mine, s.begin, s.end - s.begin, false, call, st);
  row_barrier(team, t, row, call, st);
}

/// Byte moves: what each member copies where, one slice per part.
enum class move_kind { fcollect, alltoall, broadcast };

TSHMEMI_DEVICE void move(move_kind kind, tshmem_team_t team, void *dst_v, const void *src_v, size_t nbytes, int root,
                         int part, int parts, int row, const tshmemi_device_state &st) {
  const char *call = kind == move_kind::fcollect   ? "tshmem::coll::fcollect"
                     : kind == move_kind::alltoall ? "tshmem::coll::alltoall"
                                                   : "tshmem::coll::broadcast";
  const tshmem::team_view t = tshmem::team_of(team, st);
  check_shape(t, row, parts, call, st);
  char *dst = static_cast<char *>(dst_v);
  const char *src = static_cast<const char *>(src_v);
  row_barrier(team, t, row, call, st);
  const span s = split_bytes(nbytes, static_cast<size_t>(parts), static_cast<size_t>(part));
  const size_t len = s.end - s.begin;
  const size_t mine = static_cast<size_t>(t.my_index) * nbytes;
  if (kind == move_kind::broadcast) {
    if (t.my_index != root)
      copy_bytes<tshmem::block_scope>(dst + s.begin, remote_ptr(src + s.begin, t.pe(root), call, st), len);
    else if (dst != src)
      copy_bytes<tshmem::block_scope>(dst + s.begin, src + s.begin, len);
  } else {
    for (int i = 0; i < t.size; ++i) {
      // Member order starts after this one and rotates with the part: the links share the load, and the
      // local copy (HBM only) runs beside the NVLink stores of the other parts instead of after all of them.
      const int k = (t.my_index + 1 + i + part) % t.size;
      const char *from = src + s.begin + (kind == move_kind::alltoall ? static_cast<size_t>(k) * nbytes : 0);
      copy_bytes<tshmem::block_scope>(remote_ptr(dst + mine + s.begin, t.pe(k), call, st), from, len);
    }
  }
  row_barrier(team, t, row, call, st);
}

}  // namespace coll_detail
}  // namespace tshmemi

// The world team over several nodes takes the path of impl/coll_spanning.cuh (NVLink inside a node, the proxy
// between nodes): one test per form below (SPAN), the on-node bodies unchanged. A unit that defines
// TSHMEMI_COLL_NO_SPANNING (the on-stream kernels, which launch the spanning path as kernels of its own) compiles
// the forms without it, so not even a call the on-node path never takes is in those kernels.
#include "tshmem/device/impl/coll_spanning.cuh"
#ifdef TSHMEMI_COLL_NO_SPANNING
#define TSHMEMI_COLL_SPAN(FORM, ...)
#else
#define TSHMEMI_COLL_SPAN(FORM, ...) \
  if (tshmemi::coll_spanning::spans_nodes(team, st)) return tshmemi::coll_spanning::FORM(__VA_ARGS__)
#endif

namespace tshmem {
namespace coll {

template <class T>
TSHMEMI_DEVICE void allreduce_block(tshmem_team_t team, T *dst, const T *src, size_t count, redop op, bool two_shot,
                                    const tshmemi_device_state &st) {
  TSHMEMI_COLL_SPAN(allreduce<T>, team, dst, src, count, op, 0, 1, static_cast<int>(blockIdx.x), st);
  tshmemi::coll_detail::allreduce<T>(team, dst, src, count, op, two_shot, 0, 1, static_cast<int>(blockIdx.x), st);
}
template <class T>
TSHMEMI_DEVICE void allreduce_grid(tshmem_team_t team, T *dst, const T *src, size_t count, redop op, bool two_shot,
                                   const tshmemi_device_state &st) {
  TSHMEMI_COLL_SPAN(allreduce<T>, team, dst, src, count, op, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x),
                    static_cast<int>(blockIdx.x), st);
  tshmemi::coll_detail::allreduce<T>(team, dst, src, count, op, two_shot, static_cast<int>(blockIdx.x),
                                     static_cast<int>(gridDim.x), static_cast<int>(blockIdx.x), st);
}
template <class T>
TSHMEMI_DEVICE void reduce_scatter_block(tshmem_team_t team, T *dst, const T *src, size_t count, redop op,
                                         const tshmemi_device_state &st) {
  TSHMEMI_COLL_SPAN(reduce_scatter<T>, team, dst, src, count, op, 0, 1, static_cast<int>(blockIdx.x), st);
  tshmemi::coll_detail::reduce_scatter<T>(team, dst, src, count, op, 0, 1, static_cast<int>(blockIdx.x), st);
}
template <class T>
TSHMEMI_DEVICE void reduce_scatter_grid(tshmem_team_t team, T *dst, const T *src, size_t count, redop op,
                                        const tshmemi_device_state &st) {
  TSHMEMI_COLL_SPAN(reduce_scatter<T>, team, dst, src, count, op, static_cast<int>(blockIdx.x),
                    static_cast<int>(gridDim.x), static_cast<int>(blockIdx.x), st);
  tshmemi::coll_detail::reduce_scatter<T>(team, dst, src, count, op, static_cast<int>(blockIdx.x),
                                          static_cast<int>(gridDim.x), static_cast<int>(blockIdx.x), st);
}

#define TSHMEMI_COLL_MOVE(NAME, KIND, ROOT_PARAM, ROOT)                                                      \
  TSHMEMI_DEVICE void NAME##_block(tshmem_team_t team, void *dst, const void *src, size_t nbytes ROOT_PARAM, \
                                   const tshmemi_device_state &st) {                                         \
    TSHMEMI_COLL_SPAN(move, KIND, team, dst, src, nbytes, ROOT, 0, 1, static_cast<int>(blockIdx.x), st);     \
    tshmemi::coll_detail::move(KIND, team, dst, src, nbytes, ROOT, 0, 1, static_cast<int>(blockIdx.x), st);  \
  }                                                                                                          \
  TSHMEMI_DEVICE void NAME##_grid(tshmem_team_t team, void *dst, const void *src, size_t nbytes ROOT_PARAM,  \
                                  const tshmemi_device_state &st) {                                          \
    TSHMEMI_COLL_SPAN(move, KIND, team, dst, src, nbytes, ROOT, static_cast<int>(blockIdx.x),                \
                      static_cast<int>(gridDim.x), static_cast<int>(blockIdx.x), st);                        \
    tshmemi::coll_detail::move(KIND, team, dst, src, nbytes, ROOT, static_cast<int>(blockIdx.x),             \
                               static_cast<int>(gridDim.x), static_cast<int>(blockIdx.x), st);               \
  }
#define TSHMEMI_COLL_COMMA ,
TSHMEMI_COLL_MOVE(fcollect, tshmemi::coll_detail::move_kind::fcollect, , 0)
TSHMEMI_COLL_MOVE(alltoall, tshmemi::coll_detail::move_kind::alltoall, , 0)
TSHMEMI_COLL_MOVE(broadcast, tshmemi::coll_detail::move_kind::broadcast, TSHMEMI_COLL_COMMA int root, root)
#undef TSHMEMI_COLL_COMMA
#undef TSHMEMI_COLL_MOVE

TSHMEMI_DEVICE void barrier_block(tshmem_team_t team, const tshmemi_device_state &st) {
  TSHMEMI_COLL_SPAN(barrier, team, static_cast<int>(blockIdx.x), "tshmem::coll::barrier_block", st);
  const team_view t = team_of(team, st);
  tshmemi::coll_detail::check_shape(t, static_cast<int>(blockIdx.x), 1, "tshmem::coll::barrier_block", st);
  tshmemi::coll_detail::row_barrier(team, t, static_cast<int>(blockIdx.x), "tshmem::coll::barrier_block", st);
}

TSHMEMI_DEVICE void barrier_grid(tshmem_team_t team, const tshmemi_device_state &st) {
  TSHMEMI_COLL_SPAN(barrier_grid, team, "tshmem::coll::barrier_grid", st);
  const team_view t = team_of(team, st);
  tshmemi::coll_detail::check_shape(t, 0, 1, "tshmem::coll::barrier_grid", st);
  tshmemi::grid_barrier("tshmem::coll::barrier_grid", st);  // every block of this PE has arrived
  if (tshmemi::is_first_block()) tshmemi::coll_detail::row_barrier(team, t, 0, "tshmem::coll::barrier_grid", st);
  tshmemi::grid_barrier("tshmem::coll::barrier_grid", st);
}

}  // namespace coll
}  // namespace tshmem
#undef TSHMEMI_COLL_SPAN
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_COLL_CUH
