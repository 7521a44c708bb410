// The device collectives on a team that spans nodes (TSHMEM_TEAM_WORLD in a job over several nodes), chosen by
// impl/coll.cuh's forms when spans_nodes() holds; the on-node forms are untouched. Data moves with the device
// API's putmem_nbi, which stores over NVLink to a PE of this node and posts to the off-node proxy for a PE of
// another; members synchronise by a barrier of their own words (the area's header, internal_regions.h),
// whose arrival at a PE of another node is a proxy signal, applied after everything the block posted before it
// (ticket order, then MPI's pair order): so it also completes those puts at their targets.
//
// Results equal the on-node forms' bit for bit: every element is reduced by one member, over the members'
// values in team-index order (coll_detail::to_acc / combine / from_acc: f32 for the float types, one rounding).
//  * all-reduce, per chunk of a block row's slice: every member puts share j of its chunk into member j's slot
//    [my index] (row staging: n slots of ROW_BYTES / n); barrier; member j reduces share j over its slots into
//    its dst and puts it to every member's dst; barrier (the slots are free again, every dst complete).
//  * reduce-scatter: the same without the second put (member j's share is its block of every src).
//  * fcollect / all-to-all / broadcast: barrier (every dst is free); puts straight into the members' dsts (the
//    root's for broadcast); barrier. No staging.
// A chunk costs two barriers: at the proxy's round trip, the row's staging size sets the chunk.
#ifndef TSHMEM_DEVICE_IMPL_COLL_SPANNING_CUH
#define TSHMEM_DEVICE_IMPL_COLL_SPANNING_CUH

#include "tshmem/device/internal_regions.h"

#ifdef TSHMEM_DEVICE_COMPILE
#include "tshmem/device/impl/epoch_barrier.cuh"
#include "tshmem/device/impl/rma.cuh"
#include "tshmem/device/impl/transfer.cuh"

namespace tshmemi {
namespace coll_spanning {

using coll_detail::block;
using coll_detail::span;
using coll_detail::split;

/// TSHMEMI_COLL_SPANS_NODES for this PE. Two constant-bank loads and a compare: the on-node forms pay nothing else.
TSHMEMI_DEVICE bool spans_nodes(tshmem_team_t team, const tshmemi_device_state &st) {
  return TSHMEMI_COLL_SPANS_NODES(team, st.n_pes, st.local_n_pes);
}

TSHMEMI_DEVICE char *area(const tshmemi_device_state &st) {
  return own_heap_base(st) + TSHMEMI_COLL_SPAN_OFFSET(st.heap_size);
}

/// Block row `row`'s staging: n slots of slot_bytes(n) each.
TSHMEMI_DEVICE char *row_staging(int row, const tshmemi_device_state &st) {
  return area(st) + TSHMEMI_COLL_SPAN_HEADER_BYTES + static_cast<size_t>(row) * TSHMEMI_COLL_SPAN_ROW_BYTES;
}
TSHMEMI_DEVICE size_t slot_bytes(int n) {
  return (TSHMEMI_COLL_SPAN_ROW_BYTES / static_cast<size_t>(n)) & ~static_cast<size_t>(15);
}

/// Rendezvous of block row `row` over the team: this block's earlier puts (to any member) are complete at their
/// targets and visible to every member's block of that row after it (the epoch barrier on words of its own: a
/// member's world and node collectives count separately). All threads of the block call.
TSHMEMI_DEVICE void row_barrier(const tshmem::team_view &t, int row, const char *call, const tshmemi_device_state &st) {
  const auto words = [&] {
    char *base = area(st);
    return barrier_words{reinterpret_cast<volatile uint64_t *>(base + TSHMEMI_COLL_SPAN_EPOCHS + 8 * row),
                         reinterpret_cast<uint64_t *>(base + TSHMEMI_COLL_SPAN_FLAGS) +
                             static_cast<size_t>(row) * TSHMEMI_COLL_SPAN_TEAM};
  };
  epoch_barrier<tshmem::block_scope, barrier_reach::any>(
      words, t.my_index, t.size, [&t](int k) { return t.pe(k); }, call, st);
}

/// Element `i` of `p`, a staging slot a peer or the proxy's copy filled: volatile, so never an L1 line left from
/// the previous chunk.
template <class T>
TSHMEMI_DEVICE T load_staged(const T *p, size_t i) {
  using U = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  static_assert(sizeof(U) == sizeof(T), "element types of 2, 4 or 8 bytes");
  const U bits = *reinterpret_cast<const volatile U *>(p + i);
  T x;
  memcpy(&x, &bits, sizeof(T));
  return x;
}

/// dst[i] = op over slots k = 0 .. n-1 of slot_k[i], for i < len, in team-index order.
template <class T>
TSHMEMI_DEVICE void reduce_slots(const tshmem::team_view &t, tshmem::redop op, T *dst, const char *staging,
                                 size_t len) {
  const size_t stride = slot_bytes(t.size);
  for (size_t i = block::rank(); i < len; i += block::size()) {
    coll_detail::acc_t<T> acc = coll_detail::to_acc(load_staged(reinterpret_cast<const T *>(staging), i));
    for (int k = 1; k < t.size; ++k)
      acc = coll_detail::combine(
          op, acc, coll_detail::to_acc(load_staged(reinterpret_cast<const T *>(staging + k * stride), i)));
    dst[i] = coll_detail::from_acc<T>(acc);
  }
}

template <class T>
TSHMEMI_DEVICE void put(T *dest, const T *src, size_t nelems, int pe, const tshmemi_device_state &st) {
  if (nelems != 0) tshmem::putmem_nbi<tshmem::block_scope>(dest, src, nelems * sizeof(T), pe, st);
}

/// The team's view, checked like the on-node forms' (block rows, team size).
TSHMEMI_DEVICE tshmem::team_view team_checked(tshmem_team_t team, int row, int parts, const char *call,
                                              const tshmemi_device_state &st) {
  const tshmem::team_view t = tshmem::team_of(team, st);
  coll_detail::check_shape(t, row, parts, call, st);
  return t;
}

// The entry points take the arguments of coll_detail's forms (part `part` of `parts`, block row `row`). They are
// __noinline__: the on-node forms carry a call they do not take, not these bodies (nor their registers).
template <class T>
TSHMEMI_DEVICE_COLD void allreduce(tshmem_team_t team, T *dst, const T *src, size_t count, tshmem::redop op, int part,
                                   int parts, int row, const tshmemi_device_state &st) {
  const char *call = "tshmem::coll::allreduce";
  const tshmem::team_view t = team_checked(team, row, parts, call, st);
  char *staging = row_staging(row, st);
  T *my_slot = reinterpret_cast<T *>(staging + static_cast<size_t>(t.my_index) * slot_bytes(t.size));
  const size_t n = static_cast<size_t>(t.size), chunk = slot_bytes(t.size) / sizeof(T) * n;
  const span s = split(count, static_cast<size_t>(parts), static_cast<size_t>(part));
  for (size_t c0 = s.begin; c0 < s.end; c0 += chunk) {
    const size_t cn = s.end - c0 < chunk ? s.end - c0 : chunk;
    // 1. Share j of my chunk to member j's slot [my index] (starting at the next member: the links share it).
    for (int i = 1; i <= t.size; ++i) {
      const int j = (t.my_index + i) % t.size;
      const span sh = split(cn, n, static_cast<size_t>(j));
      put(my_slot, src + c0 + sh.begin, sh.end - sh.begin, t.pe(j), st);
    }
    row_barrier(t, row, call, st);
    // 2. My share, reduced over the slots, into my dst; then into every other member's.
    const span mine = split(cn, n, static_cast<size_t>(t.my_index));
    T *out = dst + c0 + mine.begin;
    reduce_slots<T>(t, op, out, staging, mine.end - mine.begin);
    __syncthreads();  // the block's results are in dst before any thread of it copies them
    for (int i = 1; i < t.size; ++i) put(out, out, mine.end - mine.begin, t.pe((t.my_index + i) % t.size), st);
    row_barrier(t, row, call, st);
  }
}

template <class T>
TSHMEMI_DEVICE_COLD void reduce_scatter(tshmem_team_t team, T *dst, const T *src, size_t count, tshmem::redop op,
                                        int part, int parts, int row, const tshmemi_device_state &st) {
  const char *call = "tshmem::coll::reduce_scatter";
  const tshmem::team_view t = team_checked(team, row, parts, call, st);
  char *staging = row_staging(row, st);
  T *my_slot = reinterpret_cast<T *>(staging + static_cast<size_t>(t.my_index) * slot_bytes(t.size));
  const size_t chunk = slot_bytes(t.size) / sizeof(T);
  const span s = split(count, static_cast<size_t>(parts), static_cast<size_t>(part));
  for (size_t c0 = s.begin; c0 < s.end; c0 += chunk) {
    const size_t cn = s.end - c0 < chunk ? s.end - c0 : chunk;
    for (int i = 1; i <= t.size; ++i) {  // my part of member j's block, to its slot [my index]
      const int j = (t.my_index + i) % t.size;
      put(my_slot, src + static_cast<size_t>(j) * count + c0, cn, t.pe(j), st);
    }
    row_barrier(t, row, call, st);
    reduce_slots<T>(t, op, dst + c0, staging, cn);
    row_barrier(t, row, call, st);
  }
}

TSHMEMI_DEVICE_COLD void move(coll_detail::move_kind kind, tshmem_team_t team, void *dst_v, const void *src_v,
                              size_t nbytes, int root, int part, int parts, int row, const tshmemi_device_state &st) {
  const char *call = kind == coll_detail::move_kind::fcollect   ? "tshmem::coll::fcollect"
                     : kind == coll_detail::move_kind::alltoall ? "tshmem::coll::alltoall"
                                                                : "tshmem::coll::broadcast";
  const tshmem::team_view t = team_checked(team, row, parts, call, st);
  char *dst = static_cast<char *>(dst_v);
  const char *src = static_cast<const char *>(src_v);
  row_barrier(t, row, call, st);  // every member's dst is free
  const span s = coll_detail::split_bytes(nbytes, static_cast<size_t>(parts), static_cast<size_t>(part));
  const size_t len = s.end - s.begin;
  if (kind == coll_detail::move_kind::broadcast) {
    if (t.my_index == root)  // the root pushes (a pull would need the root's src ready: one more barrier)
      for (int i = 1; i <= t.size; ++i) {
        const int k = (t.my_index + i) % t.size;
        if (k != root || dst != src) put(dst + s.begin, src + s.begin, len, t.pe(k), st);
      }
  } else {
    const size_t mine = static_cast<size_t>(t.my_index) * nbytes;
    for (int i = 0; i < t.size; ++i) {
      const int k = (t.my_index + 1 + i + part) % t.size;
      const char *from =
          src + s.begin + (kind == coll_detail::move_kind::alltoall ? static_cast<size_t>(k) * nbytes : 0);
      put(dst + mine + s.begin, from, len, t.pe(k), st);
    }
  }
  row_barrier(t, row, call, st);  // every put is complete at its target
}

/// barrier_block's rendezvous of block row `row`.
TSHMEMI_DEVICE_COLD void barrier(tshmem_team_t team, int row, const char *call, const tshmemi_device_state &st) {
  row_barrier(team_checked(team, row, 1, call, st), row, call, st);
}

/// barrier_grid: every block of this PE arrives, the first block meets the members on row 0, every block leaves.
TSHMEMI_DEVICE_COLD void barrier_grid(tshmem_team_t team, const char *call, const tshmemi_device_state &st) {
  const tshmem::team_view t = team_checked(team, 0, 1, call, st);
  grid_barrier(call, st);
  if (is_first_block()) row_barrier(t, 0, call, st);
  grid_barrier(call, st);
}

/// A thread-form reduction's load of member `pe`'s element: a plain load on this node, a proxy round trip off it.
template <class T>
TSHMEMI_DEVICE T load_elem(const T *src, int pe, const char *call, const tshmemi_device_state &st) {
  const uint64_t peer = peer_slot(pe, call, st);
  const uint64_t offset = heap_offset_of(src, st);
  return transfer::load<T>(peer, offset, pe, call, st);
}

}  // namespace coll_spanning
}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_COLL_SPANNING_CUH
