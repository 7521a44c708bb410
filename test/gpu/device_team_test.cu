// Teams in kernels: tshmem_team_my_pe / n_pes / translate_pe read the device mirror of the team table, so a
// kernel sees a split team exactly as the host does, and a destroyed handle as unknown (-1).
#include <vector>

#include "device_test_util.h"
#include "tshmem/tshmem.h"

namespace {

struct TeamSeen {
  int my_pe, n_pes, first_in_world, world_in_team;
};

__global__ void team_kernel(const tshmem_team_t *teams, int n_teams, TeamSeen *seen) {
  for (int t = 0; t < n_teams; ++t) {
    seen[t].my_pe = tshmem_team_my_pe(teams[t]);
    seen[t].n_pes = tshmem_team_n_pes(teams[t]);
    seen[t].first_in_world = tshmem_team_translate_pe(teams[t], 0, TSHMEM_TEAM_WORLD);
    seen[t].world_in_team = tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, tshmem_my_pe(), teams[t]);
  }
}

std::vector<TeamSeen> run_kernel(const std::vector<tshmem_team_t> &teams) {
  tshmem_team_t *d_teams = nullptr;
  TeamSeen *d_seen = nullptr;
  std::vector<TeamSeen> seen(teams.size(), TeamSeen{-9, -9, -9, -9});
  TSHMEM_CUDA_EXPECT(cudaMalloc(&d_teams, teams.size() * sizeof(tshmem_team_t)));
  TSHMEM_CUDA_EXPECT(cudaMalloc(&d_seen, seen.size() * sizeof(TeamSeen)));
  TSHMEM_CUDA_EXPECT(cudaMemcpy(d_teams, teams.data(), teams.size() * sizeof(tshmem_team_t), cudaMemcpyHostToDevice));
  team_kernel<<<1, 1>>>(d_teams, static_cast<int>(teams.size()), d_seen);
  TSHMEM_CUDA_EXPECT(cudaGetLastError());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  TSHMEM_CUDA_EXPECT(cudaMemcpy(seen.data(), d_seen, seen.size() * sizeof(TeamSeen), cudaMemcpyDeviceToHost));
  TSHMEM_CUDA_EXPECT(cudaFree(d_teams));
  TSHMEM_CUDA_EXPECT(cudaFree(d_seen));
  return seen;
}

TEST(DeviceTeams, KernelSeesSplitTeamsLikeTheHost) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  tshmem_team_t even = 99, odd = 99, last = 99;
  ASSERT_EQ(tshmem_team_split_strided(TSHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &even), 0)
      << tshmemx_last_error();
  if (n >= 2) {
    ASSERT_EQ(tshmem_team_split_strided(TSHMEM_TEAM_WORLD, 1, 2, n / 2, nullptr, 0, &odd), 0) << tshmemx_last_error();
  }
  ASSERT_EQ(tshmem_team_split_strided(TSHMEM_TEAM_WORLD, n - 1, 1, 1, nullptr, 0, &last), 0) << tshmemx_last_error();
  const tshmem_team_t parity = me % 2 == 0 ? even : odd;
  std::vector<tshmem_team_t> teams = {TSHMEM_TEAM_WORLD, TSHMEMX_TEAM_NODE, parity};
  if (me == n - 1) teams.push_back(last);

  const std::vector<TeamSeen> seen = run_kernel(teams);
  for (size_t t = 0; t < teams.size(); ++t) {
    EXPECT_EQ(seen[t].my_pe, tshmem_team_my_pe(teams[t])) << "team " << teams[t];
    EXPECT_EQ(seen[t].n_pes, tshmem_team_n_pes(teams[t])) << "team " << teams[t];
    EXPECT_EQ(seen[t].first_in_world, tshmem_team_translate_pe(teams[t], 0, TSHMEM_TEAM_WORLD)) << teams[t];
    EXPECT_EQ(seen[t].world_in_team, tshmem_team_translate_pe(TSHMEM_TEAM_WORLD, me, teams[t])) << teams[t];
  }
  EXPECT_EQ(seen[2].my_pe, me / 2);
  EXPECT_EQ(seen[2].n_pes, me % 2 == 0 ? (n + 1) / 2 : n / 2);
  EXPECT_EQ(seen[2].first_in_world, me % 2);

  // Destroyed handles read as unknown in kernels too.
  tshmem_team_destroy(parity);
  if (me == n - 1) tshmem_team_destroy(last);
  const std::vector<TeamSeen> after = run_kernel({parity});
  EXPECT_EQ(after[0].my_pe, -1);
  EXPECT_EQ(after[0].n_pes, -1);
  EXPECT_EQ(after[0].first_in_world, -1);
}

}  // namespace
