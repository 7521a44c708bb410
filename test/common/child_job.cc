#include "child_job.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace tshmem_test {

ChildResult run_child(const std::vector<std::string> &args, int timeout_s, const std::vector<std::string> &env) {
  ChildResult result;
  int fds[2];
  if (pipe(fds) != 0) return result;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    for (const std::string &kv : env) putenv(const_cast<char *>(kv.c_str()));
    std::vector<char *> argv;
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  const auto deadline = start + std::chrono::seconds(timeout_s);
  char chunk[4096];
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, 200);
    if (ready > 0) {
      const ssize_t got = read(fds[0], chunk, sizeof(chunk));
      if (got <= 0) break;
      result.output.append(chunk, static_cast<size_t>(got));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      result.timed_out = true;
      kill(-pid, SIGCONT);  // a PE stopped on purpose must be able to die
      kill(-pid, SIGKILL);  // the child's process group: mpirun and its PEs
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tshmem_test
