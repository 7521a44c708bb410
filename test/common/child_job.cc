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
#include <utility>

namespace tshmem_test {

namespace {

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A /proc/<pid>[/task/<tid>]/stat's command name, state and parent (the fields after the name are counted from its
// last ')', as the name may hold either parenthesis).
bool parse_stat(const std::string &stat, std::string *name, char *state, long *parent) {
  const size_t open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  *name = stat.substr(open + 1, close - open - 1);
  return std::sscanf(stat.c_str() + close + 1, " %c %ld", state, parent) == 2;
}

bool all_digits(const std::string &text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// The job's processes: `root` and its descendants. Not its process group: the launcher (Open MPI's mpirun) puts
// each PE in a process group of its own.
std::vector<pid_t> job_processes(pid_t root) {
  std::vector<std::pair<long, pid_t>> parent_of;  // (parent, pid) of every process
  if (DIR *proc = opendir("/proc")) {
    while (dirent *entry = readdir(proc)) {
      std::string name;
      char state = 0;
      long parent = 0;
      if (all_digits(entry->d_name) &&
          parse_stat(read_text(std::string("/proc/") + entry->d_name + "/stat"), &name, &state, &parent))
        parent_of.emplace_back(parent, static_cast<pid_t>(std::atol(entry->d_name)));
    }
    closedir(proc);
  }
  std::vector<pid_t> job = {root};
  for (size_t i = 0; i < job.size(); ++i)
    for (const auto &[parent, pid] : parent_of)
      if (parent == job[i]) job.push_back(pid);
  return job;
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
std::string describe(const std::vector<pid_t> &job) {
  std::string out = "\n--- the job's processes when it was given up on (thread: state, kernel wait) ---\n";
  const bool stacks = std::system("command -v eu-stack >/dev/null 2>&1") == 0;
  for (const pid_t process : job) {
    const std::string pid = std::to_string(process);
    std::string command = read_text("/proc/" + pid + "/cmdline");
    for (char &c : command)
      if (c == '\0') c = ' ';
    out += "process " + pid + ": " + command + "\n";
    if (DIR *tasks = opendir(("/proc/" + pid + "/task").c_str())) {
      while (dirent *task = readdir(tasks)) {
        const std::string tid = task->d_name;
        if (!all_digits(tid)) continue;
        const std::string at = "/proc/" + pid + "/task/" + tid;
        std::string thread;
        char state = 0;
        long parent = 0;
        if (!parse_stat(read_text(at + "/stat"), &thread, &state, &parent)) continue;
        out += "  thread " + tid + " " + thread + ": " + std::string(1, state) + ", " + read_text(at + "/wchan") + "\n";
      }
      closedir(tasks);
    }
    if (stacks) out += run_and_read("timeout 10 eu-stack -p " + pid + " 2>&1");
  }
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
      const std::vector<pid_t> job = job_processes(pid);
      result.output += describe(job);
      for (const pid_t process : job) {
        kill(process, SIGCONT);  // a PE stopped on purpose must be able to die
        kill(process, SIGKILL);  // mpirun and each PE (every PE leads a process group of its own)
      }
      kill(-pid, SIGKILL);  // and whatever else is left of the child's own group
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
