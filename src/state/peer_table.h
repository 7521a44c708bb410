// The peer table: where this PE sees every PE's heap. Built in one place, from the backend, and checked
// for the invariant the third bug report was about: the own slot is the own heap base, never NULL, and
// every node-local peer has a slot. There is no other way to build one.
#pragma once

#include <cstdint>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "mem/backend.h"

namespace tshmemi {

class PeerTable {
 public:
  /// Builds the table from a created backend. Fails (TSHMEM_ERR_INTERNAL) on a hole: an own slot that is
  /// not the own base, or a node-local peer without a mapping.
  static Status build(const MemBackend &backend, const Bootstrap &boot, PeerTable *out);

  int n_pes() const { return static_cast<int>(bases_.size()); }
  int my_pe() const { return my_pe_; }
  uint64_t heap_base() const { return bases_.empty() ? 0 : bases_[static_cast<size_t>(my_pe_)]; }
  /// 0 for a PE with no load/store path (another node). Caller checks the range.
  uint64_t base(int pe) const { return bases_[static_cast<size_t>(pe)]; }
  const std::vector<uint64_t> &bases() const { return bases_; }

 private:
  std::vector<uint64_t> bases_;
  int my_pe_ = -1;
};

}  // namespace tshmemi
