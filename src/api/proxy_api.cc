// The proxy's exported hooks (proxy_types.h): the device channel for CPU producers in tests, and refusals; and
// tshmemx_peer_path, how each PE is reached.
#include <algorithm>
#include <cstring>

#include "context.h"

using namespace tshmemi;

extern "C" {

TSHMEM_API tshmemi_proxy_channel *tshmemi_proxy_device_channel(void) {
  ContextRef ctx = context();
  return ctx && ctx->proxy ? ctx->proxy->device_channel() : nullptr;
}

TSHMEM_API uint64_t tshmemi_proxy_refused(char *text, size_t text_bytes) {
  ContextRef ctx = context();
  if (!ctx || !ctx->proxy) return 0;
  std::string last;
  const uint64_t count = ctx->proxy->refused(&last);
  if (text != nullptr && text_bytes > 0) {
    const size_t n = std::min(last.size(), text_bytes - 1);
    std::memcpy(text, last.data(), n);
    text[n] = '\0';
  }
  return count;
}

TSHMEM_API int tshmemi_proxy_send_unsolicited_reply(int pe, uint64_t id, uint64_t bytes) {
  ContextRef ctx = context();
  if (!ctx || !ctx->proxy || pe < 0 || pe >= ctx->peers.n_pes()) return TSHMEM_ERR_INVALID_ARG;
  return ctx->proxy->send_unsolicited_reply(pe, id, bytes);
}

TSHMEM_API int tshmemi_proxy_put_unchecked(int pe, uint64_t heap_offset, const void *src, size_t bytes) {
  ContextRef ctx = context();
  if (!ctx || !ctx->proxy || pe < 0 || pe >= ctx->peers.n_pes() || ctx->peers.base(pe) != 0)
    return TSHMEM_ERR_INVALID_ARG;
  return ctx->proxy->put(heap_offset, src, bytes, pe);
}

TSHMEM_API int tshmemx_peer_path(int pe, char *text, size_t text_bytes) {
  const char *call = "tshmemx_peer_path";
  return guarded_status(call, [&]() -> int {
    if (text == nullptr || text_bytes == 0)
      return set_error(TSHMEM_ERR_INVALID_ARG, "%s: text is NULL or text_bytes is 0", call);
    text[0] = '\0';
    ContextRef ctx = require_context(call);
    if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
    TSHMEM_CHECK(check_pe(*ctx, call, pe));
    std::string path;
    if (pe == ctx->peers.my_pe())
      path = "self";
    else if (ctx->peers.base(pe) != 0)
      path = "node (loads and stores)";
    else if (ctx->proxy)
      path = ctx->proxy->path_of(pe);
    else
      path =
          "unreachable: " + (ctx->offnode_reason.empty() ? std::string("no off-node transport") : ctx->offnode_reason);
    const size_t n = std::min(path.size(), text_bytes - 1);
    std::memcpy(text, path.data(), n);
    text[n] = '\0';
    return TSHMEM_SUCCESS;
  });
}

}  // extern "C"
