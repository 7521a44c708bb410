// The ucx row of a build without UCX: it says why, and never starts.
#include "transport/transport.h"

namespace tshmemi {
namespace {

std::string not_built() { return TSHMEM_UCX_ABSENT_REASON; }
std::string about() { return std::string("not built: ") + TSHMEM_UCX_ABSENT_REASON; }
Status make(const TransportInputs &, std::unique_ptr<Transport> *, std::string *unavailable) {
  *unavailable = TSHMEM_UCX_ABSENT_REASON;
  return TSHMEM_SUCCESS;
}

}  // namespace

const TransportEntry &transport_entry_ucx() {
  static const TransportEntry entry = {"ucx", not_built, about, make};
  return entry;
}

}  // namespace tshmemi
