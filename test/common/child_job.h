// Runs a child job (mpirun and its PEs) from a test that is itself no MPI process, for cases that must end a
// process: a device trap, a PE stopped on purpose. Output is captured (device printf goes to stdout); a job that
// outlives its time is killed, every process of it (the launcher puts each PE in a process group of its own: ending
// the child's group left them running), and its output then ends with what each of them was doing (every thread's
// state and kernel wait; the stacks where eu-stack, from elfutils, is installed).
#pragma once

#include <string>
#include <vector>

namespace tshmem_test {

struct ChildResult {
  int status = -1;  ///< exit code, or 128 + signal
  std::string output;
  bool timed_out = false;
  double seconds = 0;
};

/// Runs argv (argv[0] a path) with `env` ("NAME=value") added to this process's environment.
ChildResult run_child(const std::vector<std::string> &argv, int timeout_s, const std::vector<std::string> &env = {});

}  // namespace tshmem_test
