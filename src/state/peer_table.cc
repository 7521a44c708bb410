#include "state/peer_table.h"

#include <algorithm>

namespace tshmemi {

Status PeerTable::build(const MemBackend &backend, const Bootstrap &boot, PeerTable *out) {
  PeerTable table;
  table.my_pe_ = boot.rank();
  table.bases_.resize(static_cast<size_t>(boot.size()));
  for (int pe = 0; pe < boot.size(); ++pe)
    table.bases_[static_cast<size_t>(pe)] = reinterpret_cast<uint64_t>(backend.peer_base(pe));

  const uint64_t own = reinterpret_cast<uint64_t>(backend.local_base());
  if (own == 0 || table.bases_[static_cast<size_t>(boot.rank())] != own)
    return set_error(TSHMEM_ERR_INTERNAL, "peer table: own slot (PE %d) is %#llx but the heap base is %#llx",
                     boot.rank(), static_cast<unsigned long long>(table.bases_[static_cast<size_t>(boot.rank())]),
                     static_cast<unsigned long long>(own));
  for (int pe : boot.local_pes())
    if (table.bases_[static_cast<size_t>(pe)] == 0)
      return set_error(TSHMEM_ERR_INTERNAL, "peer table: node-local PE %d has no mapping on PE %d", pe, boot.rank());
  *out = std::move(table);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
