// The exported multicast and team calls: queries (not collective), split (collective) and destroy.
#include "coll/team.h"
#include "context.h"
#include "tshmem/tshmem.h"

using namespace tshmemi;

extern "C" {

TSHMEM_API int tshmem_team_my_pe(tshmem_team_t team) {
  ContextRef ctx = require_context("tshmem_team_my_pe");
  TeamInfo info;
  if (!ctx || ctx->teams.lookup(team, "tshmem_team_my_pe", &info) != TSHMEM_SUCCESS) return -1;
  return info.my_index;
}

TSHMEM_API int tshmem_team_n_pes(tshmem_team_t team) {
  ContextRef ctx = require_context("tshmem_team_n_pes");
  TeamInfo info;
  if (!ctx || ctx->teams.lookup(team, "tshmem_team_n_pes", &info) != TSHMEM_SUCCESS) return -1;
  return info.size;
}

TSHMEM_API int tshmem_team_translate_pe(tshmem_team_t src_team, int src_pe, tshmem_team_t dest_team) {
  const char *call = "tshmem_team_translate_pe";
  ContextRef ctx = require_context(call);
  TeamInfo src, dest;
  if (!ctx || ctx->teams.lookup(src_team, call, &src) != TSHMEM_SUCCESS ||
      ctx->teams.lookup(dest_team, call, &dest) != TSHMEM_SUCCESS)
    return -1;
  if (src_pe < 0 || src_pe >= src.size) return -1;
  const int pe = src.start + src_pe * src.stride;
  const int offset = pe - dest.start;
  if (offset < 0 || offset % dest.stride != 0 || offset / dest.stride >= dest.size) return -1;
  return offset / dest.stride;
}

TSHMEM_API void *tshmemx_mc_ptr(tshmem_team_t team, const void *ptr) {
  ContextRef ctx = require_context("tshmemx_mc_ptr");
  TeamInfo info;
  if (!ctx || ctx->teams.lookup(team, "tshmemx_mc_ptr", &info) != TSHMEM_SUCCESS) return nullptr;
  // The multicast object spans this node's devices: a team reaching beyond the node has no multicast address.
  // A split team is no multicast group either: a store through the node's object would reach non-members.
  if (!ctx->nvls || !info.predefined || !info.node_local || info.size != ctx->boot->local_size()) return nullptr;
  if (!ctx->heap->contains(ptr, 1)) return nullptr;
  return reinterpret_cast<void *>(ctx->nvls->mc_base() + ctx->heap->offset_of(ptr));
}

TSHMEM_API int tshmemx_mc_ptr_checked(tshmem_team_t team, const void *ptr, size_t bytes, void **out) {
  const char *call = "tshmemx_mc_ptr_checked";
  return guarded_status(call, [&]() -> int {
    if (out == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: out is NULL", call);
    *out = nullptr;
    ContextRef ctx = require_context(call);
    if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
    TeamInfo info;
    TSHMEM_CHECK(ctx->teams.lookup(team, call, &info));
    if (!ctx->heap->contains(ptr, bytes))
      return set_error(TSHMEM_ERR_INVALID_ARG, "%s: [%p, +%zu bytes) is not inside the symmetric heap", call, ptr,
                       bytes);
    // The same rules as tshmemx_mc_ptr, each with its reason.
    if (!ctx->nvls)
      return set_error(TSHMEM_ERR_CONFIG, "%s: NVLink multicast is off in this job: %s", call,
                       ctx->nvls_reason.c_str());
    if (!info.predefined)
      return set_error(TSHMEM_ERR_CONFIG,
                       "%s: team %d is a split team: the node's multicast object would reach PEs outside it (use "
                       "TSHMEMX_TEAM_NODE)",
                       call, static_cast<int>(team));
    if (!info.node_local || info.size != ctx->boot->local_size())
      return set_error(TSHMEM_ERR_CONFIG,
                       "%s: team %d has PEs of other nodes: a multicast object spans one node's GPUs (use "
                       "TSHMEMX_TEAM_NODE)",
                       call, static_cast<int>(team));
    *out = reinterpret_cast<void *>(ctx->nvls->mc_base() + ctx->heap->offset_of(ptr));
    return TSHMEM_SUCCESS;
  });
}

TSHMEM_API int tshmem_team_split_strided(tshmem_team_t parent, int start, int stride, int size,
                                         const tshmem_team_config_t * /*config*/, long /*config_mask*/,
                                         tshmem_team_t *new_team) {
  ContextRef ctx = require_context("tshmem_team_split_strided");
  if (!ctx) return -1;
  if (team_split_strided(ctx->teams, *ctx->boot, *ctx->check, ctx->device_state.get(), parent, start, stride, size,
                         new_team) != TSHMEM_SUCCESS)
    return -1;
  // The host collectives' rendezvous of the new team continues above every call number of the handle's slots: the
  // job's checked calls so far (the same on every PE), shifted past any team's count of calls.
  if (*new_team != TSHMEM_TEAM_INVALID) ctx->host_coll->on_split(*new_team, ctx->check->sequence() << 32);
  return 0;
}

TSHMEM_API void tshmem_team_destroy(tshmem_team_t team) {
  ContextRef ctx = require_context("tshmem_team_destroy");
  if (ctx) (void)team_destroy(ctx->teams, *ctx->mem, ctx->device_state.get(), team);
}

TSHMEM_API const char *tshmemx_mc_status(void) {
  ContextRef ctx = context();
  return ctx ? ctx->nvls_reason.c_str() : nullptr;
}

}  // extern "C"
