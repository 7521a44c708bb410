// The route arithmetic of notify, dispatch and combine, shared by the kernels and a CPU test that runs a whole job
// through it (test/cpu_test.cc, EpRoutes): where each row goes is decided by these functions alone.
//
// The published matrix M (int32, row-major, n_pes rows of publish_words): M[s][p] (p < n_pes) = tokens PE s sends
// to PE p; M[s][n_pes + e] = PE s's top-k entries naming expert e; then PE s's error flag and token count.
// PE p's received rows: from s = 0, 1, ... in turn, each source's tokens in ascending index. PE s's combine area:
// from contributor q = 0, 1, ... in turn, each in the order of s's tokens sent to q.
#pragma once

#include <cstdint>

#include "core/rows.h"

namespace tshmem_ep {

/// Where PE me's rows start among PE p's received rows: the rows of PEs before me to p.
TSHMEM_EP_HD int32_t route_dst_offset(const int32_t *m, int64_t w, int me, int p) {
  int32_t d = 0;
  for (int s = 0; s < me; ++s) d += m[s * w + p];
  return d;
}

/// Where PE me's returned rows start in PE s's combine area: the rows s sent to PEs before me.
TSHMEM_EP_HD int32_t route_comb_dst_offset(const int32_t *m, int64_t w, int me, int s) {
  int32_t c = 0;
  for (int q = 0; q < me; ++q) c += m[s * w + q];
  return c;
}

/// Received top-k entries naming local expert l of PE me, aligned up to `alignment`.
TSHMEM_EP_HD int32_t route_local_expert_count(const int32_t *m, int64_t w, int n_pes, int me, int64_t local, int64_t l,
                                              int64_t alignment) {
  int64_t c = 0;
  for (int s = 0; s < n_pes; ++s) c += m[s * w + n_pes + me * local + l];
  return static_cast<int32_t>(align_up(c, alignment));
}

/// The serial part of the info words: received count, recv_offset and home_offset prefixes, the status words.
TSHMEM_EP_HD void route_prefixes(const int32_t *m, int64_t w, int n_pes, int me, int64_t num_experts,
                                 int64_t num_worst_tokens, const InfoLayout &il, int32_t *info) {
  int32_t r = 0, h = 0, bad = 0;
  for (int s = 0; s < n_pes; ++s) {
    info[il.recv_offset + s] = r;
    r += m[s * w + me];
    info[il.home_offset + s] = h;
    h += m[me * w + s];
    if (!bad && m[s * w + publish_error_word(n_pes, num_experts)] != 0) bad = s + 1;
  }
  info[il.recv_offset + n_pes] = r;
  info[il.home_offset + n_pes] = h;
  info[0] = r;
  info[il.status] = bad;
  info[il.status + 1] = num_worst_tokens > 0 && r > num_worst_tokens;
}

/// The source PE of received row j: the last s with recv_offset[s] <= j (recv_offset has n_pes + 1 entries, the
/// last the row count, so sources that sent nothing are skipped).
TSHMEM_EP_HD int route_source_of(const int32_t *recv_offset, int n_pes, int64_t j) {
  int lo = 0, hi = n_pes;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (recv_offset[mid] <= j)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/// Dispatch: the row of PE p's receive area for my token whose send-map entry for p is `si`.
TSHMEM_EP_HD int64_t route_dispatch_row(const int32_t *info, const InfoLayout &il, int p, int32_t si) {
  return static_cast<int64_t>(info[il.dst_offset + p]) + si;
}

/// Combine: received row j goes back to PE *home, at this row of its combine area.
TSHMEM_EP_HD int64_t route_combine_row(const int32_t *info, const InfoLayout &il, int n_pes, int64_t j, int *home) {
  const int32_t *recv_offset = info + il.recv_offset;
  const int s = route_source_of(recv_offset, n_pes, j);
  *home = s;
  return static_cast<int64_t>(info[il.comb_dst_offset + s]) + (j - recv_offset[s]);
}

/// Combine, at the home PE: the row of its combine area that contributor q returned for the token whose send-map
/// entry for q is `si`.
TSHMEM_EP_HD int64_t route_home_row(const int32_t *info, const InfoLayout &il, int q, int32_t si) {
  return static_cast<int64_t>(info[il.home_offset + q]) + si;
}

}  // namespace tshmem_ep
