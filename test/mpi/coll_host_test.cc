// The host-blocking collectives on the shm heap, run by the host: results against a reference that folds the
// members' values in team-index order (the GPU kernels' order), for every dtype and operator, on the world team, the
// node team and a strided split team, out of place and in place; broadcast, fcollect, alltoall and team barriers on
// the same teams; and a refused argument on one member named on every member of a split team, nothing left waiting.
// The same tests run with the PEs split into nodes (TSHMEM_DEBUG_NODE_SIZE): the world team then spans nodes and
// moves its data through the off-node path; a split team that spans nodes is refused on each member, naming the call,
// the team and the rule.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fixture.h"

namespace {

using tshmem_test::TshmemTest;

/// Whether a member of `team` lives on another node than this PE (TSHMEM_DEBUG_NODE_SIZE splits one host).
bool spans_nodes(tshmem_team_t team) {
  for (int k = 0; k < tshmem_team_n_pes(team); ++k)
    if (tshmem_team_translate_pe(team, k, TSHMEMX_TEAM_NODE) < 0) return true;
  return false;
}

class CollHost : public TshmemTest {
 protected:
  /// The teams every test runs on: world, node, and the PEs of even index (a split team with stride 2;
  /// TSHMEM_TEAM_INVALID on the other PEs, which skip it, and on every PE when it spans nodes: the host collectives
  /// refuse it, SplitTeamAcrossNodesIsRefused).
  std::vector<tshmem_team_t> teams() {
    tshmem_team_t even = TSHMEM_TEAM_INVALID;
    EXPECT_EQ(tshmem_team_split_strided(TSHMEM_TEAM_WORLD, 0, 2, (n_ + 1) / 2, nullptr, 0, &even), 0) << last_error();
    split_ = even;
    split_spans_nodes_ = !tshmem_test::all_pes(even == TSHMEM_TEAM_INVALID || !spans_nodes(even));
    return {TSHMEM_TEAM_WORLD, TSHMEMX_TEAM_NODE, split_spans_nodes_ ? TSHMEM_TEAM_INVALID : even};
  }
  void TearDown() override {
    if (split_ != TSHMEM_TEAM_INVALID) tshmem_team_destroy(split_);
    TshmemTest::TearDown();
  }
  tshmem_team_t split_ = TSHMEM_TEAM_INVALID;
  bool split_spans_nodes_ = false;  ///< the same on every PE
};

/// Member k's value at element e: a mix that makes the order of a float sum matter (a large first value).
template <class T>
T value(int k, size_t e, tshmemx_redop_t op) {
  if constexpr (std::is_floating_point_v<T>) {
    if (op == TSHMEMX_OP_PROD) return static_cast<T>(1.0 + 0.125 * static_cast<double>((k + e) % 5));
    return k == 0 ? static_cast<T>(1.0e8 + static_cast<double>(e))
                  : static_cast<T>(0.3 * (k + 1) + 0.01 * static_cast<double>(e));
  } else {
    const uint64_t x = (static_cast<uint64_t>(k) + 3) * 0x9e3779b97f4a7c15ull + e * 0x632be59bd9b4e019ull;
    return static_cast<T>(x >> 7);
  }
}

template <class T>
T fold(tshmemx_redop_t op, T acc, T x) {
  if constexpr (std::is_floating_point_v<T>) {
    if (op == TSHMEMX_OP_MIN) return std::fmin(acc, x);
    if (op == TSHMEMX_OP_MAX) return std::fmax(acc, x);
    if (op == TSHMEMX_OP_PROD) return acc * x;
    return acc + x;
  } else {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case TSHMEMX_OP_MIN: return x < acc ? x : acc;
      case TSHMEMX_OP_MAX: return x > acc ? x : acc;
      case TSHMEMX_OP_PROD: return static_cast<T>(static_cast<U>(acc) * static_cast<U>(x));
      case TSHMEMX_OP_AND: return acc & x;
      case TSHMEMX_OP_OR: return acc | x;
      case TSHMEMX_OP_XOR: return acc ^ x;
      case TSHMEMX_OP_SUM:
      case TSHMEMX_NUM_OPS: break;
    }
    return static_cast<T>(static_cast<U>(acc) + static_cast<U>(x));
  }
}

std::string last_error_text() { return tshmemx_last_error(); }

constexpr size_t kCount = 3001;   // not a multiple of any block or vector width; staged on WORLD and NODE
constexpr size_t kLarge = 40001;  // past the staging (128 KiB) at 4 and 8 bytes: read in place, closing rendezvous

template <class T>
void check_reduce(tshmem_team_t team, tshmemx_dtype_t dtype, bool in_place, void *dst_v, void *src_v,
                  size_t count = kCount) {
  if (team == TSHMEM_TEAM_INVALID) return;
  const int size = tshmem_team_n_pes(team), me = tshmem_team_my_pe(team);
  T *dst = static_cast<T *>(dst_v), *src = static_cast<T *>(src_v);
  const bool integer = std::is_integral_v<T>;
  for (int o = 0; o < TSHMEMX_NUM_OPS; ++o) {
    const auto op = static_cast<tshmemx_redop_t>(o);
    if (!integer && o >= TSHMEMX_OP_AND) continue;
    for (size_t e = 0; e < count; ++e) src[e] = value<T>(me, e, op);
    T *out = in_place ? src : dst;
    ASSERT_EQ(tshmemi_host_reduce(team, out, src, count, dtype, op), 0) << last_error_text();
    for (size_t e = 0; e < count; ++e) {
      T want = value<T>(0, e, op);
      for (int k = 1; k < size; ++k) want = fold<T>(op, want, value<T>(k, e, op));
      if (std::memcmp(&want, &out[e], sizeof(T)) != 0) {
        ADD_FAILURE() << "team " << team << " dtype " << dtype << " op " << o << (in_place ? " in place" : "")
                      << " element " << e << ": " << out[e] << ", want " << want;
        break;
      }
    }
  }
}

TEST_F(CollHost, ReduceEveryDtypeAndOperatorMatchesTheTeamOrderFold) {
  void *dst = tshmem_malloc(kLarge * 8), *src = tshmem_malloc(kLarge * 8);
  ASSERT_NE(dst, nullptr);
  ASSERT_NE(src, nullptr);
  for (tshmem_team_t team : teams()) {
    for (bool in_place : {false, true}) {
      check_reduce<float>(team, TSHMEMX_DTYPE_FLOAT, in_place, dst, src);
      check_reduce<double>(team, TSHMEMX_DTYPE_DOUBLE, in_place, dst, src);
      check_reduce<int32_t>(team, TSHMEMX_DTYPE_INT32, in_place, dst, src);
      check_reduce<int64_t>(team, TSHMEMX_DTYPE_INT64, in_place, dst, src);
      check_reduce<uint32_t>(team, TSHMEMX_DTYPE_UINT32, in_place, dst, src);
      check_reduce<uint64_t>(team, TSHMEMX_DTYPE_UINT64, in_place, dst, src);
      check_reduce<float>(team, TSHMEMX_DTYPE_FLOAT, in_place, dst, src, kLarge);
      check_reduce<int64_t>(team, TSHMEMX_DTYPE_INT64, in_place, dst, src, kLarge);
    }
  }
  tshmem_free(src);
  tshmem_free(dst);
}

// half and bfloat16 accumulate in float and round once: small integers are exact in both.
TEST_F(CollHost, HalfAndBfloat16SumInFloat) {
  const uint16_t one_half = 0x3c00, one_bf16 = 0x3f80;  // 1.0
  auto *buf = static_cast<uint16_t *>(tshmem_malloc(4 * sizeof(uint16_t)));
  ASSERT_NE(buf, nullptr);
  for (tshmem_team_t team : teams()) {
    if (team == TSHMEM_TEAM_INVALID) continue;
    const int size = tshmem_team_n_pes(team);
    buf[0] = buf[1] = one_half;
    ASSERT_EQ(tshmemi_host_reduce(team, buf + 2, buf, 2, TSHMEMX_DTYPE_HALF, TSHMEMX_OP_SUM), 0) << last_error();
    const uint16_t half_of[] = {0, 0x3c00, 0x4000, 0x4200, 0x4400};  // 0 .. 4
    EXPECT_EQ(buf[2], half_of[size]) << "team " << team;
    buf[0] = buf[1] = one_bf16;
    ASSERT_EQ(tshmemi_host_reduce(team, buf + 2, buf, 2, TSHMEMX_DTYPE_BFLOAT16, TSHMEMX_OP_SUM), 0) << last_error();
    const uint16_t bf16_of[] = {0, 0x3f80, 0x4000, 0x4040, 0x4080};
    EXPECT_EQ(buf[3], bf16_of[size]) << "team " << team;
  }
  tshmem_free(buf);
}

TEST_F(CollHost, MovesAndBarriersOnEveryTeam) {
  const size_t per = 1000;  // ints per member
  int *dst = static_cast<int *>(tshmem_malloc(per * 4 * sizeof(int)));
  int *src = static_cast<int *>(tshmem_malloc(per * 4 * sizeof(int)));
  ASSERT_NE(dst, nullptr);
  ASSERT_NE(src, nullptr);
  for (tshmem_team_t team : teams()) {
    if (team == TSHMEM_TEAM_INVALID) continue;
    const int size = tshmem_team_n_pes(team), me = tshmem_team_my_pe(team);
    for (size_t i = 0; i < per * 4; ++i) src[i] = me * 100000 + static_cast<int>(i);
    ASSERT_EQ(tshmem_int_fcollect(team, dst, src, per), 0) << last_error();
    for (int k = 0; k < size; ++k) EXPECT_EQ(dst[k * per + 7], k * 100000 + 7) << "fcollect, team " << team;
    ASSERT_EQ(tshmem_int_alltoall(team, dst, src, per), 0) << last_error();
    for (int k = 0; k < size; ++k)
      EXPECT_EQ(dst[k * per + 5], k * 100000 + me * static_cast<int>(per) + 5) << "alltoall, team " << team;
    const int root = size - 1;
    ASSERT_EQ(tshmem_int_broadcast(team, dst, src, per, root), 0) << last_error();
    EXPECT_EQ(dst[per - 1], root * 100000 + static_cast<int>(per) - 1) << "broadcast, team " << team;
    EXPECT_EQ(tshmem_barrier(team), 0) << last_error();
  }
  tshmem_free(src);
  tshmem_free(dst);
}

// A member of a split team passes a different count: every member gets the same error naming it, and the team's
// next call works (nothing left waiting).
TEST_F(CollHost, DivergentCallsOnASplitTeamAreNamedOnEveryMember) {
  if (n_ < 3) GTEST_SKIP() << "needs a split team of two PEs or more";
  teams();
  if (split_spans_nodes_) GTEST_SKIP() << "the split team spans nodes: refused (SplitTeamAcrossNodesIsRefused)";
  int *buf = static_cast<int *>(tshmem_calloc(16, sizeof(int)));
  ASSERT_NE(buf, nullptr);
  if (split_ == TSHMEM_TEAM_INVALID) {
    tshmem_free(buf);
    return;
  }
  const int size = tshmem_team_n_pes(split_), me = tshmem_team_my_pe(split_);
  const bool odd = me == size - 1;
  EXPECT_EQ(tshmem_int_sum_reduce(split_, buf + 8, buf, odd ? 4 : 2), TSHMEM_ERR_ASYMMETRIC);
  const std::string message = last_error();
  const int odd_pe = 2 * (size - 1);
  EXPECT_NE(message.find("divergent PE " + std::to_string(odd_pe) + "."), std::string::npos) << message;
  EXPECT_NE(message.find("count=4"), std::string::npos) << message;
  EXPECT_EQ(tshmem_int_sum_reduce(split_, buf + 8, buf, 2), 0) << last_error();
  tshmem_free(buf);
}

// With the PEs split into nodes, a split team with members on two nodes: every host collective and its barrier refuse
// it on each member alike (TSHMEM_ERR_INVALID_ARG naming the call, the team and the rule), before any waiting, and
// nothing is written; the world team's next call, across the nodes, works.
TEST_F(CollHost, SplitTeamAcrossNodesIsRefused) {
  teams();
  if (!split_spans_nodes_) GTEST_SKIP() << "the split team lives on one node (run with TSHMEM_DEBUG_NODE_SIZE)";
  int *buf = static_cast<int *>(tshmem_malloc(64 * sizeof(int)));
  ASSERT_NE(buf, nullptr);
  for (int i = 0; i < 64; ++i) buf[i] = me_ + 1;
  if (split_ != TSHMEM_TEAM_INVALID) {
    const std::string team = "team " + std::to_string(split_);
    const std::pair<const char *, int> calls[] = {
        {"tshmem_int32_sum_reduce", tshmem_int_sum_reduce(split_, buf + 32, buf, 4)},
        {"tshmemx_int32_sum_reduce_scatter",
         tshmemi_host_reduce_scatter(split_, buf + 32, buf, 4, TSHMEMX_DTYPE_INT32, TSHMEMX_OP_SUM)},
        {"tshmem_fcollectmem", tshmem_int_fcollect(split_, buf + 32, buf, 4)},
        {"tshmem_alltoallmem", tshmem_int_alltoall(split_, buf + 32, buf, 4)},
        {"tshmem_broadcastmem", tshmem_int_broadcast(split_, buf + 32, buf, 4, 0)},
        {"tshmem_barrier", tshmem_barrier(split_)},
    };
    for (const auto &[call, rc] : calls) EXPECT_EQ(rc, TSHMEM_ERR_INVALID_ARG) << call;
    // The last refusal's words: the call, the team, the rule.
    const std::string message = last_error();
    EXPECT_EQ(message.rfind("tshmem_barrier: ", 0), 0u) << message;
    EXPECT_NE(message.find(team + " spans more than this node"), std::string::npos) << message;
    EXPECT_NE(message.find("across nodes the collectives take TSHMEM_TEAM_WORLD only"), std::string::npos) << message;
    EXPECT_EQ(tshmem_int_sum_reduce(split_, buf + 32, buf, 4), TSHMEM_ERR_INVALID_ARG);
    EXPECT_EQ(std::string(tshmemx_last_error()).rfind("tshmem_int32_sum_reduce: " + team + " spans", 0), 0u)
        << tshmemx_last_error();
    for (int i = 32; i < 64; ++i) ASSERT_EQ(buf[i], me_ + 1) << "a refused call wrote dst";
  }
  ASSERT_EQ(tshmem_int_sum_reduce(TSHMEM_TEAM_WORLD, buf + 32, buf, 4), 0) << last_error();
  EXPECT_EQ(buf[32], n_ * (n_ + 1) / 2);
  tshmem_free(buf);
}

}  // namespace
