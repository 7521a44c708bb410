// tshmem_team_split_strided / tshmem_team_destroy on the host, on shm with real processes (np 1, 2, 4): even/odd
// and strided teams, my_pe/n_pes/translate_pe in and between them, every refusal on every PE with nothing
// created, PEs that disagree named, the live-team limit, destroy and reuse of a handle.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tshmem/tshmem.h"

namespace {

class TeamSplit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(tshmem_init(), 0) << tshmemx_last_error(); }
  static void TearDownTestSuite() { tshmem_finalize(); }
};

bool has(const std::string &text, const char *part) { return text.find(part) != std::string::npos; }

int split(tshmem_team_t parent, int start, int stride, int size, tshmem_team_t *team) {
  return tshmem_team_split_strided(parent, start, stride, size, nullptr, 0, team);
}

TEST_F(TeamSplit, EvenAndOdd) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  tshmem_team_t even = 99, odd = 99;
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &even), 0) << tshmemx_last_error();
  if (n >= 2) {
    ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 1, 2, n / 2, &odd), 0) << tshmemx_last_error();
  }
  tshmem_team_t mine = me % 2 == 0 ? even : odd, other = me % 2 == 0 ? odd : even;
  ASSERT_NE(mine, TSHMEM_TEAM_INVALID);
  if (n >= 2) {
    EXPECT_EQ(other, TSHMEM_TEAM_INVALID) << "PEs outside a team get TSHMEM_TEAM_INVALID";
  }
  EXPECT_EQ(tshmem_team_my_pe(mine), me / 2);
  EXPECT_EQ(tshmem_team_n_pes(mine), me % 2 == 0 ? (n + 1) / 2 : n / 2);
  for (int k = 0; k < tshmem_team_n_pes(mine); ++k) {
    EXPECT_EQ(tshmem_team_translate_pe(mine, k, TSHMEM_TEAM_WORLD), 2 * k + me % 2);
    EXPECT_EQ(tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, 2 * k + me % 2, mine), k);
  }
  for (int pe = 0; pe < n; ++pe) {  // the other parity is no member of mine
    if (pe % 2 != me % 2) {
      EXPECT_EQ(tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, pe, mine), -1);
    }
  }
  EXPECT_EQ(tshmem_team_translate_pe(mine, tshmem_team_n_pes(mine), TSHMEM_TEAM_WORLD), -1);
  tshmem_team_destroy(mine);
  EXPECT_EQ(tshmem_team_n_pes(mine), -1) << "a destroyed handle is refused";
}

TEST_F(TeamSplit, StridedAndBetweenSplitTeams) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  // The last PE alone, and PEs 1, 3 (stride 2 from 1) at 4 PEs, else everyone; translate between them.
  tshmem_team_t last = 99, wide = 99;
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, n - 1, 1, 1, &last), 0) << tshmemx_last_error();
  const int wide_start = n >= 4 ? 1 : 0, wide_stride = n >= 4 ? 2 : 1, wide_size = n >= 4 ? 2 : n;
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, wide_start, wide_stride, wide_size, &wide), 0) << tshmemx_last_error();
  EXPECT_EQ(last != TSHMEM_TEAM_INVALID, me == n - 1);
  const bool in_wide = me >= wide_start && (me - wide_start) % wide_stride == 0;
  EXPECT_EQ(wide != TSHMEM_TEAM_INVALID, in_wide);
  if (me == n - 1) {
    EXPECT_EQ(tshmem_team_my_pe(last), 0);
    EXPECT_EQ(tshmem_team_n_pes(last), 1);
    EXPECT_EQ(tshmem_team_translate_pe(last, 0, TSHMEM_TEAM_WORLD), n - 1);
    // The last PE is the last member of `wide` in every case above.
    EXPECT_EQ(tshmem_team_translate_pe(last, 0, wide), wide_size - 1);
    EXPECT_EQ(tshmem_team_translate_pe(wide, wide_size - 1, last), 0);
    if (wide_size > 1) {
      EXPECT_EQ(tshmem_team_translate_pe(wide, 0, last), -1);
    }
    tshmem_team_destroy(last);
  }
  if (in_wide) {
    EXPECT_EQ(tshmem_team_my_pe(wide), (me - wide_start) / wide_stride);
    EXPECT_EQ(tshmem_team_n_pes(wide), wide_size);
    tshmem_team_destroy(wide);
  }
}

struct BadSplit {
  int start, stride, size;
  bool null_team;
  const char *expect;
};

TEST_F(TeamSplit, BadArgumentsFailOnEveryPeNothingCreated) {
  const int n = tshmem_n_pes();
  // The handle the next good split gets: unchanged by every refusal below.
  tshmem_team_t probe = 99;
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, n, &probe), 0) << tshmemx_last_error();
  tshmem_team_destroy(probe);
  const std::string n_text = std::to_string(n);
  const BadSplit cases[] = {
      {0, 1, 0, false, "size 0: a team has at least 1 PE"},
      {0, 0, 1, false, "stride 0: must be at least 1"},
      {0, -2, 1, false, "stride -2: must be at least 1"},
      {-1, 1, 1, false, "start -1: outside parent team 0's PE indices [0, "},
      {n, 1, 1, false, "outside parent team 0's PE indices"},
      {0, 1, n + 1, false, "the last member, start + (size - 1) * stride = "},
      {0, 1, 1, true, "new_team is NULL"},
  };
  for (const BadSplit &c : cases) {
    tshmemx_clear_last_error();
    tshmem_team_t team = 77;
    EXPECT_EQ(tshmem_team_split_strided(TSHMEM_TEAM_WORLD, c.start, c.stride, c.size, nullptr, 0,
                                        c.null_team ? nullptr : &team),
              -1);
    EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG) << c.expect;
    const std::string error = tshmemx_last_error();
    EXPECT_TRUE(has(error, "tshmem_team_split_strided")) << error;
    EXPECT_TRUE(has(error, c.expect)) << error;
    EXPECT_EQ(team, 77) << "new_team untouched on failure";
  }
  tshmem_team_t again = 99;
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, n, &again), 0) << tshmemx_last_error();
  EXPECT_EQ(again, probe) << "a refused split created nothing";
  tshmem_team_destroy(again);
}

TEST_F(TeamSplit, PesThatDisagreeAreNamed) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  if (n < 2) GTEST_SKIP() << "needs 2 PEs to disagree";
  tshmem_team_t team = 77;
  EXPECT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, me == 1 ? 1 : n, &team), -1);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC);
  const std::string error = tshmemx_last_error();
  EXPECT_TRUE(has(error, "tshmem_team_split_strided(parent=0, start=0, stride=1, size=1)")) << error;
  EXPECT_TRUE(has(error, "PE 1")) << error;
  EXPECT_EQ(team, 77);
}

TEST_F(TeamSplit, SplitOfASmallerParentIsRefused) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  if (n < 2) GTEST_SKIP() << "at 1 PE every team spans the job";
  tshmem_team_t half = 99;
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, n / 2, &half), 0) << tshmemx_last_error();
  if (me < n / 2) {  // only the parent's members call, and each fails alone: no PE waits
    tshmem_team_t sub = 77;
    EXPECT_EQ(split(half, 0, 1, 1, &sub), -1);
    EXPECT_TRUE(has(tshmemx_last_error(), "parent team")) << tshmemx_last_error();
    EXPECT_TRUE(has(tshmemx_last_error(), "split TSHMEM_TEAM_WORLD")) << tshmemx_last_error();
    tshmem_team_destroy(half);
  }
}

TEST_F(TeamSplit, DestroyRefusals) {
  for (tshmem_team_t team : {TSHMEM_TEAM_WORLD, TSHMEMX_TEAM_NODE}) {
    tshmemx_clear_last_error();
    tshmem_team_destroy(team);
    EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG);
    EXPECT_TRUE(has(tshmemx_last_error(), "tshmem_team_destroy: team")) << tshmemx_last_error();
    EXPECT_TRUE(has(tshmemx_last_error(), "is predefined")) << tshmemx_last_error();
    EXPECT_EQ(tshmem_team_n_pes(team), team == TSHMEM_TEAM_WORLD ? tshmem_n_pes() : tshmem_team_n_pes(team));
  }
  EXPECT_GT(tshmem_team_n_pes(TSHMEMX_TEAM_NODE), 0) << "the node team survives a refused destroy";
  for (tshmem_team_t team : {TSHMEM_TEAM_INVALID, 1, 5, 1000}) {
    tshmemx_clear_last_error();
    tshmem_team_destroy(team);
    EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG) << team;
  }
  tshmem_team_t team = 99;
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, tshmem_n_pes(), &team), 0) << tshmemx_last_error();
  tshmem_team_destroy(team);
  tshmemx_clear_last_error();
  tshmem_team_destroy(team);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG) << "destroying twice is refused";
  EXPECT_TRUE(has(tshmemx_last_error(), "unknown team")) << tshmemx_last_error();
  EXPECT_EQ(tshmem_team_my_pe(team), -1);
  EXPECT_EQ(tshmem_team_translate_pe(team, 0, TSHMEM_TEAM_WORLD), -1);
}

TEST_F(TeamSplit, LiveTeamLimitAndReuse) {
  const int n = tshmem_n_pes();
  std::vector<tshmem_team_t> teams;
  for (int k = 0; k < TSHMEM_MAX_TEAMS - 3; ++k) {  // handles 0..2 are WORLD, unused, NODE
    tshmem_team_t team = 99;
    ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, n, &team), 0) << k << ": " << tshmemx_last_error();
    teams.push_back(team);
  }
  tshmem_team_t over = 77;
  EXPECT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, n, &over), -1);
  EXPECT_TRUE(has(tshmemx_last_error(), "TSHMEM_MAX_TEAMS (32)")) << tshmemx_last_error();
  EXPECT_EQ(over, 77);
  const tshmem_team_t freed = teams[5];
  tshmem_team_destroy(freed);
  tshmem_team_t reused = 99;
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, n, &reused), 0) << tshmemx_last_error();
  EXPECT_EQ(reused, freed) << "a destroyed handle is reused";
  teams[5] = reused;
  for (tshmem_team_t team : teams) tshmem_team_destroy(team);
  EXPECT_EQ(tshmem_team_n_pes(reused), -1);
}

// Split teams are collective teams now (their own barrier words; GPU results: tshmem_coll_test and the compat GPU
// test). Here, on shm, the on-stream forms refuse them for the backend's reason only, like WORLD.
TEST_F(TeamSplit, OnStreamCollectivesTakeSplitTeams) {
  tshmem_team_t team = 99;
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, tshmem_n_pes(), &team), 0) << tshmemx_last_error();
  EXPECT_NE(tshmemx_barrier_on_stream(team, nullptr), 0);
  const std::string world_reason = [] {
    tshmemx_barrier_on_stream(TSHMEM_TEAM_WORLD, nullptr);
    return std::string(tshmemx_last_error());
  }();
  EXPECT_NE(tshmemx_barrier_on_stream(team, nullptr), 0);
  EXPECT_EQ(tshmemx_last_error(), world_reason);
  EXPECT_FALSE(has(tshmemx_last_error(), "split team")) << tshmemx_last_error();
  EXPECT_NE(tshmemx_allreduce_on_stream(team, nullptr, nullptr, 1, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, nullptr), 0);
  EXPECT_FALSE(has(tshmemx_last_error(), "split team")) << tshmemx_last_error();
  EXPECT_EQ(tshmemx_mc_ptr(team, nullptr), nullptr);
  tshmem_team_destroy(team);
}

// Members of a new team agree on one handle, free on each of them, whatever each PE's own teams are.
TEST_F(TeamSplit, MembersAgreeOnTheHandle) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  tshmem_team_t solo = 99, all = 99;
  // PE 0 alone takes a handle the others leave free; the team of every PE must then skip it on every PE.
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, 1, &solo), 0) << tshmemx_last_error();
  ASSERT_EQ(split(TSHMEM_TEAM_WORLD, 0, 1, n, &all), 0) << tshmemx_last_error();
  EXPECT_NE(all, TSHMEM_TEAM_INVALID);
  if (me == 0) {
    EXPECT_NE(all, solo);
  }
  // Every PE holds the same handle: gather it through a host put into PE 0's copy.
  int *handles = static_cast<int *>(tshmem_calloc(static_cast<size_t>(n), sizeof(int)));
  ASSERT_NE(handles, nullptr);
  const int h = all;
  ASSERT_EQ(tshmem_putmem(handles + me, &h, sizeof h, 0), 0) << tshmemx_last_error();
  tshmem_barrier_all();
  if (me == 0) {
    std::vector<int> seen(static_cast<size_t>(n));
    ASSERT_EQ(tshmem_getmem(seen.data(), handles, seen.size() * sizeof(int), 0), 0) << tshmemx_last_error();
    for (int pe = 0; pe < n; ++pe) EXPECT_EQ(seen[static_cast<size_t>(pe)], h) << "PE " << pe;
  }
  tshmem_barrier_all();
  tshmem_free(handles);
  tshmem_team_destroy(all);
  if (me == 0) tshmem_team_destroy(solo);
}

}  // namespace
