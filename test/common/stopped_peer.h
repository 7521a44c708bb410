// For the child jobs of the off-node bound tests: two PEs, of which PE 1 stops itself (SIGSTOP: every thread of it,
// its proxy too, as a hung process would) while PE 0 makes calls that need it; PE 0 continues it (SIGCONT) at a
// time it names, so that the job can end either way. Header-only: the helpers link MPI and tshmem themselves.
#pragma once

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace tshmem_test {

class StoppedPeer {
 public:
  using Clock = std::chrono::steady_clock;

  /// Collective (MPI_COMM_WORLD, after tshmem_init): learns the PEs' process ids.
  StoppedPeer() {
    const int mine = static_cast<int>(getpid());
    MPI_Allgather(&mine, 1, MPI_INT, pids_, 1, MPI_INT, MPI_COMM_WORLD);
  }
  ~StoppedPeer() {
    if (waker_.joinable()) waker_.join();
  }
  StoppedPeer(const StoppedPeer &) = delete;
  StoppedPeer &operator=(const StoppedPeer &) = delete;

  /// Collective. PE 1 stops here and returns once continued; PE 0 returns at once, and PE 1 is continued at `wake`.
  void stop_pe1(int me, Clock::time_point wake) {
    if (me == 1) {
      MPI_Barrier(MPI_COMM_WORLD);  // PE 0's waker runs by now
      raise(SIGSTOP);
      return;
    }
    waker_ = std::thread([this, wake] {
      std::this_thread::sleep_until(wake);
      kill(pids_[1], SIGCONT);
    });
    MPI_Barrier(MPI_COMM_WORLD);
  }

  /// PE 0: waits for the waker (PE 1 has been continued).
  void join() {
    if (waker_.joinable()) waker_.join();
  }

 private:
  int pids_[2] = {0, 0};
  std::thread waker_;
};

}  // namespace tshmem_test
