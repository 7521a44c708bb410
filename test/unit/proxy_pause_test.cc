// When an idle proxy's pause may grow (transport/proxy.h, cores_shared): the host's PEs have fewer cores than
// threads, counted from the CPUs this thread may run on.
#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

#include "transport/proxy.h"

namespace tshmemi {
namespace {

int allowed_cores() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  EXPECT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  return CPU_COUNT(&allowed);
}

TEST(CoresShared, TwoThreadsPerPeAgainstTheCoresOfTheHost) {
  const int cores = allowed_cores();
  if (cores < static_cast<int>(std::thread::hardware_concurrency()))
    GTEST_SKIP() << "this process is bound to " << cores << " of the host's cores: the binding rule applies";
  for (int pes = 1; pes <= cores + 1; ++pes)
    EXPECT_EQ(cores_shared(pes), 2 * pes > cores) << pes << " PEs on " << cores << " cores";
  EXPECT_TRUE(cores_shared(1 << 20)) << "a million PEs on one host";
  EXPECT_EQ(cores_shared(0), cores < 2) << "an unknown count is one PE";
}

// A launcher that binds each PE to its own cores: the PE's two threads share what it was given.
TEST(CoresShared, APeBoundToOneCoreSharesIt) {
  cpu_set_t saved;
  CPU_ZERO(&saved);
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; ++cpu)
    if (CPU_ISSET(cpu, &saved)) first = cpu;
  ASSERT_GE(first, 0);
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "a host of one core: every PE shares it";
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const bool bound_one = cores_shared(1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_TRUE(bound_one) << "one PE bound to CPU " << first << " alone";
}

}  // namespace
}  // namespace tshmemi
