#include "child_job.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tshmem_test {

namespace {

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A /proc/<pid>[/task/<tid>]/stat's command name, state and process group (the fields after the name are counted
// from its last ')', as the name may hold either parenthesis).
bool parse_stat(const std::string &stat, std::string *name, char *state, long *group) {
  const size_t open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  *name = stat.substr(open + 1, close - open - 1);
  long parent = 0;
  return std::sscanf(stat.c_str() + close + 1, " %c %ld %ld", state, &parent, group) == 3;
}

std::string run_and_read(const std::string &command) {
  std::string out;
  if (FILE *pipe = popen(command.c_str(), "r")) {
    char chunk[4096];
    size_t got = 0;
    while ((got = fread(chunk, 1, sizeof chunk, pipe)) > 0) out.append(chunk, got);
    pclose(pipe);
  }
  return out;
}

// What every process of the job was doing when it was given up on: each thread's state and kernel wait channel,
// and the threads' stacks where eu-stack (elfutils) is installed. A hang seen once is explained by its log.
std::string describe_group(pid_t group) {
  std::string out = "\n--- the job's processes when it was given up on (thread: state, kernel wait) ---\n";
  const bool stacks = std::system("command -v eu-stack >/dev/null 2>&1") == 0;
  DIR *proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent *entry = readdir(proc)) {
    const std::string pid = entry->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string name;
    char state = 0;
    long pgrp = 0;
    if (!parse_stat(read_text("/proc/" + pid + "/stat"), &name, &state, &pgrp) || pgrp != group) continue;
    std::string command = read_text("/proc/" + pid + "/cmdline");
    for (char &c : command)
      if (c == '\0') c = ' ';
    out += "process " + pid + " (" + std::string(1, state) + "): " + command + "\n";
    if (DIR *tasks = opendir(("/proc/" + pid + "/task").c_str())) {
      while (dirent *task = readdir(tasks)) {
        const std::string tid = task->d_name;
        if (tid.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string at = "/proc/" + pid + "/task/" + tid;
        std::string thread;
        char thread_state = 0;
        long unused = 0;
        if (!parse_stat(read_text(at + "/stat"), &thread, &thread_state, &unused)) continue;
        out += "  thread " + tid + " " + thread + ": " + std::string(1, thread_state) + ", " +
               read_text(at + "/wchan") + "\n";
      }
      closedir(tasks);
    }
    if (stacks) out += run_and_read("timeout 10 eu-stack -p " + pid + " 2>&1");
  }
  closedir(proc);
  return out;
}

}  // namespace

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
      result.output += describe_group(pid);
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
