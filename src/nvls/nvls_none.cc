// nvls.h for builds without CUDA: multicast is never available, and no collective is made for it.
#include "nvls/nvls.h"

namespace tshmemi {

NvlsDecision nvls_local_policy(const NvlsPolicyInput &) {
  NvlsDecision decision;
  decision.reason = "built without CUDA";
  return decision;
}

Status nvls_init(Bootstrap &, const NvlsPolicyInput &, std::unique_ptr<NvlsRegion> *, std::string *reason) {
  *reason = "built without CUDA";
  return TSHMEM_SUCCESS;
}

void nvls_finalize(Bootstrap &, std::unique_ptr<NvlsRegion> *) {}

}  // namespace tshmemi
