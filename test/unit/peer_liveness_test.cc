// PeerLiveness (bootstrap/peer_liveness.h): finalize's only source for "this PE died". A live process is never
// judged gone, an exited or unreaped one is, and a stamp that does not match the process under its id is not watched.
#include "bootstrap/peer_liveness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace {

using tshmemi::PeerLiveness;
using tshmemi::ProcessStamp;

TEST(PeerLiveness, OwnStampHasAStartTime) {
  const ProcessStamp stamp = tshmemi::own_process_stamp();
  EXPECT_EQ(stamp.pid, static_cast<int64_t>(getpid()));
  EXPECT_GE(stamp.start_ticks, 0);
}

TEST(PeerLiveness, ALiveProcessIsNotGone) {
  PeerLiveness liveness;
  liveness.watch(3, tshmemi::own_process_stamp());
  EXPECT_TRUE(liveness.gone().empty());
}

// A child stands for a peer: killed, it is a zombie until reaped (as a PE killed before its launcher reaps it), then
// gone; both count as gone.
TEST(PeerLiveness, AKilledProcessIsGoneBeforeAndAfterItIsReaped) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const ProcessStamp stamp = tshmemi::own_process_stamp();
    if (write(ready[1], &stamp, sizeof stamp) != static_cast<ssize_t>(sizeof stamp)) _exit(1);
    pause();
    _exit(0);
  }
  ProcessStamp stamp;
  ASSERT_EQ(read(ready[0], &stamp, sizeof stamp), static_cast<ssize_t>(sizeof stamp));
  close(ready[0]);
  close(ready[1]);
  PeerLiveness liveness;
  liveness.watch(2, stamp);
  EXPECT_TRUE(liveness.gone().empty());
  kill(child, SIGKILL);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (liveness.gone().empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(liveness.gone(), std::vector<int>{2}) << "a zombie";
  waitpid(child, nullptr, 0);
  EXPECT_EQ(liveness.gone(), std::vector<int>{2}) << "reaped";
  EXPECT_EQ(tshmemi::name_pes(liveness.gone()), "PE 2");
  EXPECT_EQ(tshmemi::name_pes({0, 2}), "PEs 0,2");
}

// A stamp whose start time is not that of the process under its id (another pid namespace, or the id reused) is
// never watched: nothing is judged on it.
TEST(PeerLiveness, AMismatchedStampIsNotWatched) {
  ProcessStamp stamp = tshmemi::own_process_stamp();
  stamp.start_ticks += 1;
  PeerLiveness liveness;
  liveness.watch(1, stamp);
  EXPECT_TRUE(liveness.gone().empty());
  liveness.watch(1, {999999999, 5});  // no such process
  EXPECT_TRUE(liveness.gone().empty());
}

}  // namespace
