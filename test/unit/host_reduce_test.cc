// The host collectives' arithmetic (src/coll/host_reduce.cc): the GPU's conversions, value for value, and the fold
// in member order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "coll/host_reduce.h"

namespace tshmemi {
namespace {

TEST(HostReduce, HalfConversionsRoundToNearestEvenAsTheGpu) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);                      // the largest half
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);                      // below the halfway point
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                      // halfway: to even, infinity
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -24)), 0x8001);        // the smallest subnormal, negative
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);         // halfway to it: to even, zero
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // halfway between 1 and its successor: even
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::quiet_NaN()), 0x7fff);
  for (uint32_t h = 0; h < 0x7c00; ++h) EXPECT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h);
}

TEST(HostReduce, Bfloat16ConversionsRoundToNearestEvenAsTheGpu) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(1.0f / 3.0f), 0x3eab);
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // halfway: to even
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()), 0x7fff);
  EXPECT_EQ(bfloat16_to_float(0x4040), 3.0f);
}

TEST(HostReduce, FloatSumsFoldInMemberOrder) {
  const float a[] = {1e8f}, b[] = {3.0f}, c[] = {3.0f};
  const void *srcs[] = {a, b, c};
  float out = 0;
  host_reduce(TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, &out, srcs, 3, 1);
  EXPECT_EQ(out, (1e8f + 3.0f) + 3.0f);             // not 1e8f + (3 + 3): member 0 first, then 1, then 2
  const uint16_t h0[] = {0x3c00}, h1[] = {0x1400};  // 1 and 2^-10: the sum rounds once, in float
  const void *halves[] = {h0, h1, h1};
  uint16_t hout = 0;
  host_reduce(TSHMEMX_DTYPE_HALF, TSHMEMX_OP_SUM, &hout, halves, 3, 1);
  EXPECT_EQ(hout, float_to_half(1.0f + 2 * std::ldexp(1.0f, -10)));
}

// A few elements are folded one at a time, more in blocks of members: both in member order, at every count.
TEST(HostReduce, EveryCountFoldsInMemberOrder) {
  for (size_t count : {size_t{1}, size_t{16}, size_t{17}, size_t{1024}, size_t{1025}, size_t{3000}}) {
    std::vector<float> a(count), b(count, 3.0f), c(count, 3.0f), out(count, 0.0f);
    for (size_t j = 0; j < count; ++j) a[j] = 1e8f + static_cast<float>(j % 7) * 8.0f;
    const void *srcs[] = {a.data(), b.data(), c.data()};
    host_reduce(TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, out.data(), srcs, 3, count);
    size_t bad = count;
    for (size_t j = 0; j < count && bad == count; ++j)
      if (out[j] != (a[j] + 3.0f) + 3.0f) bad = j;
    EXPECT_EQ(bad, count) << count << " elements: element " << bad << " was not folded as ((a + b) + c)";
    std::vector<int64_t> i0(count, 5), i1(count, -9), iout(count, 0);
    const void *isrcs[] = {i0.data(), i1.data()};
    host_reduce(TSHMEMX_DTYPE_INT64, TSHMEMX_OP_MIN, iout.data(), isrcs, 2, count);
    EXPECT_TRUE(std::all_of(iout.begin(), iout.end(), [](int64_t v) { return v == -9; })) << count << " elements";
  }
}

TEST(HostReduce, IntegersWrapAndUnsignedCompareUnsigned) {
  const int32_t a[] = {INT32_MAX}, b[] = {1};
  const void *srcs[] = {a, b};
  int32_t out = 0;
  host_reduce(TSHMEMX_DTYPE_INT32, TSHMEMX_OP_SUM, &out, srcs, 2, 1);
  EXPECT_EQ(out, INT32_MIN);
  const uint32_t u0[] = {0xffffffffu}, u1[] = {1u};
  const void *usrcs[] = {u0, u1};
  uint32_t uout = 0;
  host_reduce(TSHMEMX_DTYPE_UINT32, TSHMEMX_OP_MAX, &uout, usrcs, 2, 1);
  EXPECT_EQ(uout, 0xffffffffu);
}

}  // namespace
}  // namespace tshmemi
