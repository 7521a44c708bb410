#include "state/registry.h"

#include <cstring>
#include <mutex>
#include <vector>

namespace tshmemi {
namespace {

struct Unit {
  tshmemi_state_fill_fn fill;
  uint32_t version;
  uint32_t size;
};

struct Registry {
  std::mutex mutex;
  std::vector<Unit *> units;
  bool published = false;
  int cuda_device = -1;
  tshmemi_device_state state;
};

Registry &registry() {
  static Registry *instance = new Registry();  // never destroyed: units in unloading libraries still unregister
  return *instance;
}

Status fill_unit(const Unit &unit, int cuda_device, const tshmemi_device_state &state) {
  if (unit.version != TSHMEMI_DEVICE_STATE_VERSION || unit.size != sizeof(tshmemi_device_state))
    return set_error(TSHMEM_ERR_CONFIG,
                     "device state: a translation unit was compiled with tshmem headers of state version %#x, size %u; "
                     "this library has version %#x, size %zu (rebuild it against this tshmem)",
                     unit.version, unit.size, TSHMEMI_DEVICE_STATE_VERSION, sizeof(tshmemi_device_state));
  const int rc = unit.fill(cuda_device, &state);
  if (rc != 0)
    return set_error(TSHMEM_ERR_CUDA,
                     "device state: filling a unit's __constant__ copy on device %d failed (cudaError %d)", cuda_device,
                     rc);
  return TSHMEM_SUCCESS;
}

}  // namespace

Status registry_publish(int cuda_device, const tshmemi_device_state &state) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.state = state;
  reg.cuda_device = cuda_device;
  reg.published = true;
  for (const Unit *unit : reg.units) TSHMEM_CHECK(fill_unit(*unit, cuda_device, state));
  return TSHMEM_SUCCESS;
}

void registry_withdraw() {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  if (!reg.published) return;
  tshmemi_device_state zero;
  std::memset(&zero, 0, sizeof(zero));
  zero.version = TSHMEMI_DEVICE_STATE_VERSION;
  zero.size = sizeof(zero);
  for (const Unit *unit : reg.units)
    if (unit->version == TSHMEMI_DEVICE_STATE_VERSION) unit->fill(reg.cuda_device, &zero);  // best effort
  reg.published = false;
  reg.state = zero;
}

tshmemi_device_state registry_current() {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  if (reg.published) return reg.state;
  tshmemi_device_state zero;
  std::memset(&zero, 0, sizeof(zero));
  return zero;
}

size_t registry_size() {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  return reg.units.size();
}

}  // namespace tshmemi

extern "C" {

__attribute__((visibility("default"))) void *tshmemi_register_device_state(tshmemi_state_fill_fn fill, uint32_t version,
                                                                           uint32_t size) {
  using namespace tshmemi;
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  Unit *unit = new Unit{fill, version, size};
  reg.units.push_back(unit);
  if (reg.published) fill_unit(*unit, reg.cuda_device, reg.state);  // late registrant: filled on arrival
  return unit;
}

__attribute__((visibility("default"))) void tshmemi_unregister_device_state(void *token) {
  using namespace tshmemi;
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  for (auto it = reg.units.begin(); it != reg.units.end(); ++it) {
    if (*it == token) {
      delete *it;
      reg.units.erase(it);
      return;
    }
  }
}

__attribute__((visibility("default"))) int tshmemx_device_view(tshmemi_device_state *out) {
  if (out == nullptr) return tshmemi::set_error(TSHMEM_ERR_INVALID_ARG, "tshmemx_device_view: out is NULL");
  *out = tshmemi::registry_current();
  return TSHMEM_SUCCESS;
}

}  // extern "C"
