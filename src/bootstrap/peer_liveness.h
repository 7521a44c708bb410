// Which PEs of this host are known to have died: their processes are gone. MPI cannot tell (Open MPI 4.1 without
// ULFM), and a collective that passes its bound cannot tell a slow PE from a dead one; the kernel can, for the PEs
// that share this host. Finalize asks before it enters MPI_Finalize, whose launcher fence waits for every process
// of the job and may wait for a dead one for ever.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tshmemi {

/// What a PE tells the PEs of its host about itself at init: its process id and its start time as the kernel
/// counts it (clock ticks since boot), so that a peer can tell its process from a later one that reuses the id.
struct ProcessStamp {
  int64_t pid = 0;
  int64_t start_ticks = -1;  ///< -1: unknown (no /proc)
};

/// This process's stamp.
ProcessStamp own_process_stamp();

class PeerLiveness {
 public:
  /// Watches `pe` if its stamp is visible here as it reported it (the same pid namespace and /proc): a peer seen
  /// under another pid namespace or without /proc is never judged.
  void watch(int pe, const ProcessStamp &stamp);

  /// The watched PEs whose processes are gone (exited, killed, or left as zombies), in ascending order.
  std::vector<int> gone() const;

 private:
  struct Watched {
    int pe;
    ProcessStamp stamp;
  };
  std::vector<Watched> watched_;
};

/// "PE 2" or "PEs 1,3" (pe_list's ranges: "PEs 0-3"): for messages.
std::string name_pes(const std::vector<int> &pes);

}  // namespace tshmemi
