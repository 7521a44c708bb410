// The proxy's exported hooks (proxy_types.h): the device channel for CPU producers in tests, and refusals.
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

}  // extern "C"
