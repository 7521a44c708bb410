// Which PEs of this host are known to have died (peer_liveness.h), from /proc/<pid>/stat.
#include "bootstrap/peer_liveness.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "bootstrap/agree.h"

namespace tshmemi {

namespace {

// Field 3 (the state) and field 22 (the start time) of /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may hold spaces or parentheses itself: the fields after it are counted from its last ')'.
bool read_stat(int64_t pid, char *state, int64_t *start_ticks) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  std::FILE *file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return false;
  char text[1024] = {};
  const size_t got = std::fread(text, 1, sizeof(text) - 1, file);
  std::fclose(file);
  text[got] = '\0';
  const char *after_name = std::strrchr(text, ')');
  if (after_name == nullptr) return false;
  long long ticks = -1;
  // After ") ": state, then fields 4 .. 21 (18 of them), then the start time.
  if (std::sscanf(after_name + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lld",
                  state, &ticks) != 2)
    return false;
  *start_ticks = ticks;
  return true;
}

}  // namespace

ProcessStamp own_process_stamp() {
  ProcessStamp stamp;
  stamp.pid = static_cast<int64_t>(getpid());
  char state = 0;
  if (!read_stat(stamp.pid, &state, &stamp.start_ticks)) stamp.start_ticks = -1;
  return stamp;
}

void PeerLiveness::watch(int pe, const ProcessStamp &stamp) {
  if (stamp.pid <= 0 || stamp.start_ticks < 0) return;
  char state = 0;
  int64_t ticks = -1;
  if (read_stat(stamp.pid, &state, &ticks) && ticks == stamp.start_ticks) watched_.push_back({pe, stamp});
}

std::vector<int> PeerLiveness::gone() const {
  std::vector<int> pes;
  for (const Watched &w : watched_) {
    char state = 0;
    int64_t ticks = -1;
    // Gone: no such process, a zombie (killed, not yet reaped by its launcher) or a later process under its id.
    if (!read_stat(w.stamp.pid, &state, &ticks) || state == 'Z' || state == 'X' || ticks != w.stamp.start_ticks)
      pes.push_back(w.pe);
  }
  return pes;
}

std::string name_pes(const std::vector<int> &pes) { return (pes.size() == 1 ? "PE " : "PEs ") + pe_list(pes); }

}  // namespace tshmemi
