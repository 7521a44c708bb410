// tshmem_team_translate_pe (nvshmem_team_translate_pe) on the host, on shm: with TSHMEM_DEBUG_NODE_SIZE=2 the
// node team is a proper part of the world at 4 PEs, so translations in and out of it can fail as well as succeed.
#include <gtest/gtest.h>

#include <string>

#include "tshmem/tshmem.h"

namespace {

class TeamTranslate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(tshmem_init(), 0) << tshmemx_last_error(); }
  static void TearDownTestSuite() { tshmem_finalize(); }
};

TEST_F(TeamTranslate, WorldToWorldIsIdentity) {
  const int n = tshmem_n_pes();
  for (int k = 0; k < n; ++k) EXPECT_EQ(tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, k, TSHMEM_TEAM_WORLD), k);
  EXPECT_EQ(tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, n, TSHMEM_TEAM_WORLD), -1);
  EXPECT_EQ(tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, -1, TSHMEM_TEAM_WORLD), -1);
}

TEST_F(TeamTranslate, NodeAndWorld) {
  const int node_n = tshmem_team_n_pes(TSHMEMX_TEAM_NODE), node_me = tshmem_team_my_pe(TSHMEMX_TEAM_NODE);
  const int first = tshmem_my_pe() - node_me;  // nodes are blocks of consecutive PEs here
  if (tshmem_n_pes() == 4) {
    ASSERT_EQ(node_n, 2) << "TSHMEM_DEBUG_NODE_SIZE=2 makes nodes of 2 PEs";
  }
  for (int k = 0; k < node_n; ++k) {
    EXPECT_EQ(tshmem_team_translate_pe(TSHMEMX_TEAM_NODE, k, TSHMEM_TEAM_WORLD), first + k);
    EXPECT_EQ(tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, first + k, TSHMEMX_TEAM_NODE), k);
  }
  EXPECT_EQ(tshmem_team_translate_pe(TSHMEMX_TEAM_NODE, node_n, TSHMEM_TEAM_WORLD), -1);
  for (int pe = 0; pe < tshmem_n_pes(); ++pe) {  // PEs of other nodes are no member of my node team
    if (pe < first || pe >= first + node_n) {
      EXPECT_EQ(tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, pe, TSHMEMX_TEAM_NODE), -1);
    }
  }
}

TEST_F(TeamTranslate, UnknownTeamIsAnError) {
  tshmemx_clear_last_error();
  EXPECT_EQ(tshmem_team_translate_pe(7, 0, TSHMEM_TEAM_WORLD), -1);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("tshmem_team_translate_pe: unknown team 7"), std::string::npos)
      << tshmemx_last_error();
  EXPECT_EQ(tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, 0, TSHMEM_TEAM_INVALID), -1);
}

}  // namespace
