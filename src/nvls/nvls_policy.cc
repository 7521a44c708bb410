// nvls_local_policy: the order of the checks is the point. The variables come first and return before
// anything in nvls_driver.h is touched; test/unit/nvls_policy_test.cc counts the calls to prove it.
#include <cstring>

#include "nvls/nvls.h"
#include "nvls/nvls_driver.h"

namespace tshmemi {

NvlsDecision nvls_local_policy(const NvlsPolicyInput &input) {
  NvlsDecision decision;
  // 1. The site's and the user's switches: no driver call of any kind past this point when set.
  if (input.env == nullptr) {
    decision.reason = "no environment given (internal)";
    return decision;
  }
  if (const char *variable = input.env->nvls_forbidding_variable()) {
    decision.reason = format("forbidden by %s", variable);
    return decision;
  }
  // 2. Only cuMemCreate memory can be bound to a multicast object.
  if (input.backend != "vmm") {
    decision.reason =
        format("the %s backend's heap cannot be bound to a multicast object (vmm only)", input.backend.c_str());
    return decision;
  }
  if (input.cuda_device < 0) {
    decision.reason = "no CUDA device";
    return decision;
  }
  // 3. The entry points and the device's support.
  if (nvls_driver_load() != TSHMEM_SUCCESS) {
    decision.reason = last_error_message();
    return decision;
  }
  CUdevice device = 0;
  int supported = 0;
  CUresult rc = TSHMEMI_NVLS(cuDeviceGet(&device, input.cuda_device));
  if (rc == CUDA_SUCCESS)
    rc = TSHMEMI_NVLS(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, device));
  if (rc != CUDA_SUCCESS) {
    nvls_cu_error(rc, "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED)", __FILE__, __LINE__);
    decision.reason = last_error_message();
    return decision;
  }
  if (supported == 0) {
    decision.reason = format("CUDA device %d reports no multicast support", input.cuda_device);
    return decision;
  }
  // 4. Granularity: the bind and the mapping need base and size in multiples of it.
  CUmulticastObjectProp prop;
  std::memset(&prop, 0, sizeof(prop));
  prop.numDevices = static_cast<unsigned>(input.local_n_pes);
  prop.size = static_cast<size_t>(input.heap_size);
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t minimum = 0, recommended = 0;
  rc = TSHMEMI_NVLS(cuMulticastGetGranularity(&minimum, &prop, CU_MULTICAST_GRANULARITY_MINIMUM));
  if (rc == CUDA_SUCCESS)
    rc = TSHMEMI_NVLS(cuMulticastGetGranularity(&recommended, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  if (rc != CUDA_SUCCESS || minimum == 0) {
    if (rc != CUDA_SUCCESS) nvls_cu_error(rc, "cuMulticastGetGranularity", __FILE__, __LINE__);
    decision.reason = rc != CUDA_SUCCESS ? last_error_message() : std::string("multicast granularity 0");
    return decision;
  }
  const auto divides = [&](uint64_t g) { return g != 0 && input.heap_size % g == 0 && input.heap_base % g == 0; };
  decision.granularity = divides(recommended) ? recommended : minimum;
  if (!divides(decision.granularity)) {
    decision.reason = format(
        "heap base %#llx / size %llu are not multiples of the multicast granularity %llu "
        "(set TSHMEM_SYMMETRIC_SIZE to a multiple of it)",
        static_cast<unsigned long long>(input.heap_base), static_cast<unsigned long long>(input.heap_size),
        static_cast<unsigned long long>(minimum));
    decision.granularity = 0;
    return decision;
  }
  decision.use = true;
  decision.reason = "available";
  return decision;
}

}  // namespace tshmemi
