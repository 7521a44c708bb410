// nvls.h for builds without CUDA: multicast is never available, and no collective is made for it.
#include "context.h"
#include "nvls/nvls.h"

namespace tshmemi {

const char *nvls_forbidding_variable(const EnvOptions &env) {
  if (env.disable_nvls) return "TSHMEM_DISABLE_NVLS=1";
  if (env.nvshmem_disable_nvls) return "NVSHMEM_DISABLE_NVLS (set, true by NVSHMEM's rule)";
  if (env.nccl_nvls_disabled) return "NCCL_NVLS_ENABLE (0, or unparseable, by NCCL's rule)";
  return nullptr;
}

NvlsDecision nvls_local_policy(const NvlsPolicyInput &) {
  NvlsDecision decision;
  decision.reason = "built without CUDA";
  return decision;
}

Status nvls_init(Context &ctx) {
  ctx.nvls_reason = "built without CUDA";
  return TSHMEM_SUCCESS;
}

void nvls_finalize(Context &) {}

}  // namespace tshmemi
