#include "coll/coll_checks.h"

#include <cstdint>

#include "coll/coll_spanning.h"
#include "tshmem/device/internal_regions.h"  // TSHMEMI_COLL_MAX_TEAM

namespace tshmemi {
namespace {

bool overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

Status check_buffer(const CollRuntime &rt, const char *call, const char *name, const void *ptr, size_t bytes,
                    size_t alignment) {
  if (ptr == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: %s is NULL", call, name);
  TSHMEM_CHECK(rt.heap.check_user_range(call, name, ptr, bytes));
  if (reinterpret_cast<uintptr_t>(ptr) % alignment != 0)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: %s = %p is not aligned to its element size (%zu bytes)", call, name,
                     ptr, alignment);
  return TSHMEM_SUCCESS;
}

Status check_reduction(const char *call, size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op) {
  if (count == 0) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: count is 0", call);
  if (static_cast<unsigned>(dtype) >= TSHMEMX_NUM_DTYPES)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: unsupported dtype %d (float, half, bfloat16, int32, int64, double, uint32, uint64)", call,
                     static_cast<int>(dtype));
  if (static_cast<unsigned>(op) >= TSHMEMX_NUM_OPS)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: unsupported op %d (sum, min, max, prod, and, or, xor)", call,
                     static_cast<int>(op));
  const bool bitwise = op == TSHMEMX_OP_AND || op == TSHMEMX_OP_OR || op == TSHMEMX_OP_XOR;
  const bool integer = dtype == TSHMEMX_DTYPE_INT32 || dtype == TSHMEMX_DTYPE_INT64 || dtype == TSHMEMX_DTYPE_UINT32 ||
                       dtype == TSHMEMX_DTYPE_UINT64;
  if (bitwise && !integer)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: op %s is bitwise: it needs an integer dtype (int32, int64, uint32, uint64), not %s", call,
                     redop_name(op), dtype_name(dtype));
  return TSHMEM_SUCCESS;
}

}  // namespace

size_t dtype_size(tshmemx_dtype_t dtype) {
  switch (dtype) {
    case TSHMEMX_DTYPE_FLOAT: return 4;
    case TSHMEMX_DTYPE_HALF: return 2;
    case TSHMEMX_DTYPE_BFLOAT16: return 2;
    case TSHMEMX_DTYPE_INT32: return 4;
    case TSHMEMX_DTYPE_INT64: return 8;
    case TSHMEMX_DTYPE_DOUBLE: return 8;
    case TSHMEMX_DTYPE_UINT32: return 4;
    case TSHMEMX_DTYPE_UINT64: return 8;
    case TSHMEMX_NUM_DTYPES: break;
  }
  return 0;
}

const char *dtype_name(tshmemx_dtype_t dtype) {
  switch (dtype) {
    case TSHMEMX_DTYPE_FLOAT: return "float";
    case TSHMEMX_DTYPE_HALF: return "half";
    case TSHMEMX_DTYPE_BFLOAT16: return "bfloat16";
    case TSHMEMX_DTYPE_INT32: return "int32";
    case TSHMEMX_DTYPE_INT64: return "int64";
    case TSHMEMX_DTYPE_DOUBLE: return "double";
    case TSHMEMX_DTYPE_UINT32: return "uint32";
    case TSHMEMX_DTYPE_UINT64: return "uint64";
    case TSHMEMX_NUM_DTYPES: break;
  }
  return "?";
}

const char *redop_name(tshmemx_redop_t op) {
  switch (op) {
    case TSHMEMX_OP_SUM: return "sum";
    case TSHMEMX_OP_MIN: return "min";
    case TSHMEMX_OP_MAX: return "max";
    case TSHMEMX_OP_PROD: return "prod";
    case TSHMEMX_OP_AND: return "and";
    case TSHMEMX_OP_OR: return "or";
    case TSHMEMX_OP_XOR: return "xor";
    case TSHMEMX_NUM_OPS: break;
  }
  return "?";
}

Status check_coll_team(const CollRuntime &rt, const char *call, tshmem_team_t team, TeamInfo *info, bool looked_up) {
  if (!looked_up) TSHMEM_CHECK(rt.teams.lookup(team, call, info));
  // Across nodes: the spanning path (the world team, through the off-node proxy; coll_spanning.h).
  if (!info->node_local) TSHMEM_CHECK(check_spanning_team(rt, call, team));
  if (info->size > TSHMEMI_COLL_MAX_TEAM)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: team of %d PEs exceeds the %d the collectives support", call,
                     info->size, TSHMEMI_COLL_MAX_TEAM);
  return TSHMEM_SUCCESS;
}

Status check_allreduce_args(const CollRuntime &rt, const char *call, tshmem_team_t team, void *dst, const void *src,
                            size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op, TeamInfo *info, bool looked_up) {
  TSHMEM_CHECK(check_coll_team(rt, call, team, info, looked_up));
  TSHMEM_CHECK(check_reduction(call, count, dtype, op));
  const size_t elem = dtype_size(dtype);
  if (count > rt.heap.size() / elem)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: count %zu exceeds the heap", call, count);
  const size_t bytes = count * elem;
  TSHMEM_CHECK(check_buffer(rt, call, "dst", dst, bytes, elem));
  TSHMEM_CHECK(check_buffer(rt, call, "src", src, bytes, elem));
  if (dst != src && overlap(dst, bytes, src, bytes))
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: dst and src overlap without being equal (in place needs dst == src)",
                     call);
  return TSHMEM_SUCCESS;
}

Status check_reduce_scatter_args(const CollRuntime &rt, const char *call, tshmem_team_t team, void *dst,
                                 const void *src, size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op,
                                 TeamInfo *info, bool looked_up) {
  TSHMEM_CHECK(check_coll_team(rt, call, team, info, looked_up));
  TSHMEM_CHECK(check_reduction(call, count, dtype, op));
  const size_t elem = dtype_size(dtype);
  const size_t n = static_cast<size_t>(info->size);
  if (count > rt.heap.size() / elem / n)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: count %zu x %d PEs exceeds the heap", call, count, info->size);
  const size_t bytes = count * elem;
  TSHMEM_CHECK(check_buffer(rt, call, "dst", dst, bytes, elem));
  TSHMEM_CHECK(check_buffer(rt, call, "src", src, bytes * n, elem));
  if (overlap(dst, bytes, src, bytes * n)) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: dst overlaps src", call);
  return TSHMEM_SUCCESS;
}

Status check_move_args(const CollRuntime &rt, CollKind kind, const char *call, tshmem_team_t team, void *dst,
                       const void *src, size_t nbytes, int root, TeamInfo *info, bool looked_up) {
  TSHMEM_CHECK(check_coll_team(rt, call, team, info, looked_up));
  if (kind == CollKind::kBarrier) return TSHMEM_SUCCESS;
  if (nbytes == 0) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: nbytes is 0", call);
  const size_t n = static_cast<size_t>(info->size);
  if (nbytes > rt.heap.size() / n)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: nbytes %zu exceeds the heap", call, nbytes);
  const size_t dst_bytes = kind == CollKind::kBroadcast ? nbytes : nbytes * n;
  const size_t src_bytes = kind == CollKind::kAlltoall ? nbytes * n : nbytes;
  TSHMEM_CHECK(check_buffer(rt, call, "dst", dst, dst_bytes, 1));
  TSHMEM_CHECK(check_buffer(rt, call, "src", src, src_bytes, 1));
  if (kind == CollKind::kBroadcast && (root < 0 || root >= info->size))
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: root %d outside the team [0, %d)", call, root, info->size);
  if (!(kind == CollKind::kBroadcast && dst == src) && overlap(dst, dst_bytes, src, src_bytes))
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: dst overlaps src", call);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
