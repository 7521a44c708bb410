// The table of remote transports. TSHMEM_REMOTE_TRANSPORT_LIST (from TSHMEM_REMOTE_TRANSPORTS in
// src/CMakeLists.txt) is X(name) for each folder src/transport/<name>/, in the order auto tries them; each folder
// defines transport_entry_<name>().
#include "transport/transport.h"
#include "transport_list.h"  // generated: TSHMEM_REMOTE_TRANSPORT_LIST

namespace tshmemi {

#define TSHMEM_TRANSPORT_DECLARE(NAME) const TransportEntry &transport_entry_##NAME();
TSHMEM_REMOTE_TRANSPORT_LIST(TSHMEM_TRANSPORT_DECLARE)
#undef TSHMEM_TRANSPORT_DECLARE

const std::vector<const TransportEntry *> &transport_table() {
#define TSHMEM_TRANSPORT_ROW(NAME) &transport_entry_##NAME(),
  static const std::vector<const TransportEntry *> table = {TSHMEM_REMOTE_TRANSPORT_LIST(TSHMEM_TRANSPORT_ROW)};
#undef TSHMEM_TRANSPORT_ROW
  return table;
}

const TransportEntry *find_transport(const std::string &name) {
  for (const TransportEntry *entry : transport_table())
    if (name == entry->name) return entry;
  return nullptr;
}

std::string transport_choices() {
  std::string out = "auto";
  for (const TransportEntry *entry : transport_table()) out += std::string("|") + entry->name;
  return out;
}

}  // namespace tshmemi
