// Host copies of the shm backend: memcpy, or streaming stores past a quarter of the last-level cache
// (mem/host_copy.h says why).
#include "mem/host_copy.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace tshmemi {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kLowestThreshold = kMiB;  // copies below it never look the threshold up

/// The size of cpu0's level-3 (else highest-level) unified cache from sysfs, 0 if none is listed. sysconf's
/// _SC_LEVEL3_CACHE_SIZE is not used: inside a virtual machine it can report the host's whole cache (256 MiB
/// where the guest sees 32).
size_t last_level_cache_bytes() {
  size_t best = 0;
  int best_level = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) break;
    if (type == "Instruction" || level < best_level) continue;
    size_t bytes = 0;
    size_t i = 0;
    for (; i < size.size() && size[i] >= '0' && size[i] <= '9'; ++i) bytes = bytes * 10 + (size[i] - '0');
    const char unit = i < size.size() ? size[i] : '\0';
    bytes <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    best = bytes;
    best_level = level;
  }
  return best;
}

}  // namespace

size_t streaming_copy_threshold() {
  static const size_t threshold = [] {
    const size_t cache = last_level_cache_bytes();
    return cache == 0 ? 8 * kMiB : std::clamp(cache / 4, kLowestThreshold, 64 * kMiB);
  }();
  return threshold;
}

void streaming_copy(void *dst, const void *src, size_t bytes) {
#if defined(__x86_64__)
  auto *d = static_cast<char *>(dst);
  const auto *s = static_cast<const char *>(src);
  // Up to the destination's next 16-byte boundary with memcpy; then 64 bytes (one line) per step with 16-byte
  // streaming stores (SSE2: every x86-64 CPU) from unaligned loads; the rest with memcpy.
  const size_t head = std::min(bytes, (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  for (; bytes >= 64; d += 64, s += 64, bytes -= 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i *>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + 48), e);
  }
  std::memcpy(d, s, bytes);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

void host_copy(void *dst, const void *src, size_t bytes) {
  // Small copies (a put of one word) never touch the threshold: the first of them does not read sysfs.
  if (bytes >= kLowestThreshold && bytes >= streaming_copy_threshold())
    streaming_copy(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

}  // namespace tshmemi
