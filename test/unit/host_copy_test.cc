// host_copy and its streaming path: every alignment of source and destination, every tail length, the bytes
// just outside the destination untouched, and the threshold where host_copy switches.
#include "mem/host_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tshmemi {
namespace {

constexpr uint8_t kGuard = 0xA5;

std::vector<uint8_t> pattern(size_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>(i * 131 + (i >> 8) * 7 + 1);
  return v;
}

/// Copies `bytes` from src + src_skew to dst + dst_skew with `copy`; checks the copied bytes and that the 64
/// bytes on either side of the destination keep their guard value.
template <class Copy>
void expect_exact_copy(Copy copy, size_t bytes, size_t src_skew, size_t dst_skew) {
  const std::vector<uint8_t> src = pattern(bytes + src_skew);
  std::vector<uint8_t> dst(bytes + dst_skew + 128, kGuard);
  uint8_t *to = dst.data() + 64 + dst_skew;
  copy(to, src.data() + src_skew, bytes);
  for (size_t i = 0; i < bytes; ++i)
    ASSERT_EQ(to[i], src[src_skew + i]) << "byte " << i << " of " << bytes << " (src skew " << src_skew << ", dst skew "
                                        << dst_skew << ")";
  for (size_t i = 0; i < 64 + dst_skew; ++i) ASSERT_EQ(dst[i], kGuard) << "wrote " << 64 + dst_skew - i << " before";
  for (size_t i = 64 + dst_skew + bytes; i < dst.size(); ++i)
    ASSERT_EQ(dst[i], kGuard) << "wrote " << i - (64 + dst_skew + bytes) << " past the end";
}

TEST(HostCopy, StreamingEveryAlignmentAndTail) {
  for (size_t src_skew = 0; src_skew < 16; ++src_skew)
    for (size_t dst_skew = 0; dst_skew < 16; ++dst_skew)
      for (size_t bytes : {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 4096 + 37})
        expect_exact_copy(streaming_copy, bytes, src_skew, dst_skew);
}

TEST(HostCopy, ThresholdIsWithinItsBounds) {
  const size_t t = streaming_copy_threshold();
  EXPECT_GE(t, size_t{1} << 20);
  EXPECT_LE(t, size_t{64} << 20);
  EXPECT_EQ(t, streaming_copy_threshold()) << "read once";
}

TEST(HostCopy, BothSidesOfTheThreshold) {
  const size_t t = streaming_copy_threshold();
  expect_exact_copy(host_copy, t - 1, 3, 5);  // memcpy
  expect_exact_copy(host_copy, t + 7, 5, 3);  // streaming, with a head and a tail
}

}  // namespace
}  // namespace tshmemi
