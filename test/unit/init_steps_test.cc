// The fault-injection switch (TSHMEM_DEBUG_FAIL): which step, which PEs, fail or pause; every malformed
// value is refused naming the variable, the value and the rule. (The steps failing for real, across
// processes, are test/reliability.)
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "init_steps.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {
namespace {

std::set<int> selected(const FaultSpec &spec, int n_pes) {
  std::set<int> pes;
  for (int pe = 0; pe < n_pes; ++pe)
    if (spec.selects(pe, n_pes)) pes.insert(pe);
  return pes;
}

TEST(InitSteps, EveryStepHasAUniqueNameAndADescription) {
  std::set<std::string> names;
  for (int i = 0; i < static_cast<int>(InitStep::kCount); ++i) {
    const std::string name = init_step_name(static_cast<InitStep>(i));
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(name.find_first_of(":, "), std::string::npos) << name << " must be writable in TSHMEM_DEBUG_FAIL";
    EXPECT_GT(std::string(init_step_what(static_cast<InitStep>(i))).size(), 5u) << name;
  }
  EXPECT_EQ(std::string(init_step_name(InitStep::kEnv)), "env");
  EXPECT_EQ(std::string(init_step_name(InitStep::kReady)), "ready");
}

TEST(InitSteps, PeListsSelectThePesTheySay) {
  FaultSpec spec;
  ASSERT_EQ(parse_fault_spec("TSHMEM_DEBUG_FAIL", "heap-own:1", &spec), TSHMEM_SUCCESS);
  EXPECT_EQ(spec.step, static_cast<int>(InitStep::kHeapOwn));
  EXPECT_FALSE(spec.pause);
  EXPECT_EQ(selected(spec, 4), (std::set<int>{1}));
  ASSERT_EQ(parse_fault_spec("TSHMEM_DEBUG_FAIL", "env:0,2-3", &spec), TSHMEM_SUCCESS);
  EXPECT_EQ(selected(spec, 4), (std::set<int>{0, 2, 3}));
  ASSERT_EQ(parse_fault_spec("TSHMEM_DEBUG_FAIL", "ready:all", &spec), TSHMEM_SUCCESS);
  EXPECT_EQ(selected(spec, 3), (std::set<int>{0, 1, 2}));
  ASSERT_EQ(parse_fault_spec("TSHMEM_DEBUG_FAIL", "peer-table:all-but-0", &spec), TSHMEM_SUCCESS);
  EXPECT_EQ(selected(spec, 4), (std::set<int>{1, 2, 3}));
  ASSERT_EQ(parse_fault_spec("TSHMEM_DEBUG_FAIL", "heap-peers:all-but-1-2:pause", &spec), TSHMEM_SUCCESS);
  EXPECT_TRUE(spec.pause);
  EXPECT_EQ(selected(spec, 4), (std::set<int>{0, 3}));
  ASSERT_EQ(parse_fault_spec("TSHMEM_DEBUG_FAIL", "", &spec), TSHMEM_SUCCESS);
  EXPECT_EQ(spec.step, -1) << "empty: off";
  EXPECT_TRUE(selected(spec, 4).empty());
}

TEST(InitSteps, MalformedSwitchesAreRefusedByRule) {
  const std::pair<const char *, const char *> cases[] = {
      {"heap-own", "no ':'"},           {"heap:1", "unknown step 'heap'"},  {"env:", "bad PE list"},
      {"env:x", "bad PE list 'x'"},     {"env:3-1", "bad PE list"},         {"env:-1", "bad PE list"},
      {"env:1,", "bad PE list"},        {"env:all-but-", "bad PE list"},    {"env: 1", "bad PE list"},
      {"env:1:stop", "unknown action"}, {"env:1:pause:x", "unknown action"}};
  for (const auto &c : cases) {
    FaultSpec spec;
    EXPECT_EQ(parse_fault_spec("TSHMEM_DEBUG_FAIL", c.first, &spec), TSHMEM_ERR_CONFIG) << c.first;
    const std::string message = tshmemx_last_error();
    EXPECT_NE(message.find(std::string("TSHMEM_DEBUG_FAIL='") + c.first + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(c.second), std::string::npos) << message;
    EXPECT_NE(message.find("heap-own"), std::string::npos) << "the message lists the steps: " << message;
  }
}

TEST(InitSteps, APeThatDoesNotExistIsRefusedWhenArmed) {
  FaultSpec spec;
  ASSERT_EQ(parse_fault_spec("TSHMEM_DEBUG_FAIL", "env:1-4", &spec), TSHMEM_SUCCESS);
  EXPECT_EQ(arm_faults(spec, 0, 4), TSHMEM_ERR_CONFIG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("PE 4 does not exist (4 PEs)"), std::string::npos)
      << tshmemx_last_error();
  EXPECT_EQ(arm_faults(spec, 0, 5), TSHMEM_SUCCESS);
  disarm_faults();
}

}  // namespace
}  // namespace tshmemi
