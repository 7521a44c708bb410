#include "env.h"

#include <strings.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "init_steps.h"
#include "tshmem/device/internal_regions.h"

namespace tshmemi {
namespace {

constexpr int64_t kMaxTimeoutMs = 24ll * 3600 * 1000;

const char *choices_of(const char *name) {
  if (std::strcmp(name, "TSHMEM_MEM_BACKEND") == 0) return TSHMEM_ENV_CHOICES_MEM_BACKEND;
  if (std::strcmp(name, "TSHMEM_BIND") == 0) return TSHMEM_ENV_CHOICES_BIND;
  if (std::strcmp(name, "TSHMEM_DEBUG") == 0) return TSHMEM_ENV_CHOICES_DEBUG;
  if (std::strcmp(name, "TSHMEM_UCX_GPU_DIRECT") == 0) return TSHMEM_ENV_CHOICES_UCX_GPU_DIRECT;
  return "";
}

bool is_space_only(const char *text) {
  for (; *text; ++text)
    if (!std::isspace(static_cast<unsigned char>(*text))) return false;
  return true;
}

bool has_space(const char *text) {
  for (; *text; ++text)
    if (std::isspace(static_cast<unsigned char>(*text))) return true;
  return false;
}

// Each field is parsed by its kind; the overloads let the X-macro below stay free of logic.
Status parse_into(const char *name, EnvKind, const char *text, uint64_t *out) { return parse_size(name, text, out); }
Status parse_into(const char *name, EnvKind, const char *text, int64_t *out) { return parse_int(name, text, out); }
Status parse_into(const char *name, EnvKind, const char *text, bool *out) { return parse_bool(name, text, out); }
Status parse_into(const char *name, EnvKind kind, const char *text, std::string *out) {
  if (kind == EnvKind::Choice) return parse_choice(name, text, choices_of(name), out);
  *out = text;
  return TSHMEM_SUCCESS;
}

}  // namespace

const std::vector<EnvVarInfo> &env_table() {
  static const std::vector<EnvVarInfo> table = {
#define TSHMEM_ENV_ROW(NAME, FIELD, KIND, DEFAULT, CATEGORY, DESCRIPTION) \
  {"TSHMEM_" #NAME, EnvKind::KIND, DEFAULT, CATEGORY, DESCRIPTION, choices_of("TSHMEM_" #NAME)},
      TSHMEM_ENV_LIST(TSHMEM_ENV_ROW)
#undef TSHMEM_ENV_ROW
  };
  return table;
}

Status parse_size(const char *name, const char *text, uint64_t *out) {
  if (text == nullptr || *text == '\0' || is_space_only(text))
    return set_error(TSHMEM_ERR_CONFIG, "%s='%s': expected a size such as 4096, 64K, 512M or 2G", name,
                     text ? text : "");
  // strtoull would skip leading whitespace and accept a sign (" -1" is 2^64 - 1): only digits may start a size.
  if (has_space(text))
    return set_error(TSHMEM_ERR_CONFIG, "%s='%s': a size contains no whitespace (write it as 1G, 512M, 4096)", name,
                     text);
  if (*text == '-' || *text == '+')
    return set_error(TSHMEM_ERR_CONFIG, "%s='%s': a size has no sign (write it as 1G, 512M, 4096)", name, text);
  if (!std::isdigit(static_cast<unsigned char>(*text)))
    return set_error(TSHMEM_ERR_CONFIG, "%s='%s': a size starts with a decimal digit (write it as 1G, 512M, 4096)",
                     name, text);
  errno = 0;
  char *end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || errno == ERANGE)
    return set_error(TSHMEM_ERR_CONFIG, "%s='%s': expected a size such as 4096, 64K, 512M or 2G", name, text);
  unsigned shift = 0;
  switch (*end) {
    case '\0': break;
    case 'k':
    case 'K':
      shift = 10;
      ++end;
      break;
    case 'm':
    case 'M':
      shift = 20;
      ++end;
      break;
    case 'g':
    case 'G':
      shift = 30;
      ++end;
      break;
    case 't':
    case 'T':
      shift = 40;
      ++end;
      break;
    default: return set_error(TSHMEM_ERR_CONFIG, "%s='%s': unknown suffix '%s' (allowed: K, M, G, T)", name, text, end);
  }
  if ((*end == 'i' || *end == 'I') && shift != 0) ++end;  // "64Ki" reads as 64K
  if ((*end == 'b' || *end == 'B') && shift != 0) ++end;  // "64KB", "64KiB"
  if (*end != '\0')
    return set_error(TSHMEM_ERR_CONFIG, "%s='%s': trailing characters '%s' after the size", name, text, end);
  if (shift != 0 && value > (~0ull >> shift))
    return set_error(TSHMEM_ERR_CONFIG, "%s='%s': size overflows 64 bits", name, text);
  *out = static_cast<uint64_t>(value) << shift;
  return TSHMEM_SUCCESS;
}

Status parse_int(const char *name, const char *text, int64_t *out) {
  if (text == nullptr || *text == '\0') return set_error(TSHMEM_ERR_CONFIG, "%s='': expected an integer", name);
  if (has_space(text)) return set_error(TSHMEM_ERR_CONFIG, "%s='%s': an integer contains no whitespace", name, text);
  errno = 0;
  char *end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE)
    return set_error(TSHMEM_ERR_CONFIG, "%s='%s': expected a decimal integer", name, text);
  *out = value;
  return TSHMEM_SUCCESS;
}

Status parse_bool(const char *name, const char *text, bool *out) {
  static const char *const kTrue[] = {"1", "true", "yes", "on"};
  static const char *const kFalse[] = {"0", "false", "no", "off"};
  if (text != nullptr) {
    for (const char *word : kTrue)
      if (strcasecmp(text, word) == 0) return *out = true, TSHMEM_SUCCESS;
    for (const char *word : kFalse)
      if (strcasecmp(text, word) == 0) return *out = false, TSHMEM_SUCCESS;
  }
  return set_error(TSHMEM_ERR_CONFIG, "%s='%s': expected one of 0/1/true/false/yes/no/on/off", name, text ? text : "");
}

Status parse_choice(const char *name, const char *text, const char *choices, std::string *out) {
  const std::string value = text ? text : "";
  std::string list = choices;
  size_t start = 0;
  while (start <= list.size()) {
    size_t bar = list.find('|', start);
    if (bar == std::string::npos) bar = list.size();
    if (strcasecmp(list.substr(start, bar - start).c_str(), value.c_str()) == 0) {
      *out = list.substr(start, bar - start);
      return TSHMEM_SUCCESS;
    }
    start = bar + 1;
  }
  return set_error(TSHMEM_ERR_CONFIG, "%s='%s': expected one of %s", name, value.c_str(), choices);
}

bool nvshmem_style_true(const char *text) {
  // NVSHMEM's boolean rule: empty or a first character in "0NnFf" is false, anything else true.
  if (text == nullptr || *text == '\0') return false;
  return std::strchr("0NnFf", *text) == nullptr;
}

bool nccl_style_nvls_disabled(const char *text) {
  // NCCL reads NCCL_NVLS_ENABLE with strtoll: 0 disables. We also disable when it does not parse
  // ("false", "off"): when a site says something we cannot read, multicast stays off.
  if (text == nullptr) return false;
  errno = 0;
  char *end = nullptr;
  const long long value = std::strtoll(text, &end, 0);
  if (end == text || errno == ERANGE) return true;
  return value == 0;
}

LogLevel log_level_from(const std::string &debug) {
  if (debug == "none") return LogLevel::kNone;
  if (debug == "info") return LogLevel::kInfo;
  if (debug == "trace") return LogLevel::kTrace;
  return LogLevel::kWarn;
}

Status log_subsys_from(const std::string &list, unsigned *mask) {
  static const struct {
    const char *name;
    unsigned bit;
  } kNames[] = {{"INIT", kLogInit}, {"BOOT", kLogBoot}, {"HEAP", kLogHeap}, {"MEM", kLogMem},
                {"CUDA", kLogCuda}, {"TOPO", kLogTopo}, {"NVLS", kLogNvls}, {"ALL", kLogAll}};
  unsigned result = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string word = list.substr(start, comma - start);
    bool known = false;
    for (const auto &entry : kNames) {
      if (strcasecmp(entry.name, word.c_str()) == 0) {
        result |= entry.bit;
        known = true;
      }
    }
    if (!known)
      return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_DEBUG_SUBSYS='%s': unknown subsystem '%s' (allowed: %s)",
                       list.c_str(), word.c_str(), "INIT,BOOT,HEAP,MEM,CUDA,TOPO,NVLS,ALL");
    start = comma + 1;
  }
  *mask = result;
  return TSHMEM_SUCCESS;
}

namespace {
bool has_nvshmem_name(const char *name) {
#define TSHMEM_ENV_NVSHMEM_MATCH(NAME) \
  if (std::strcmp(name, #NAME) == 0) return true;
  TSHMEM_ENV_NVSHMEM_NAMES(TSHMEM_ENV_NVSHMEM_MATCH)
#undef TSHMEM_ENV_NVSHMEM_MATCH
  return false;
}
}  // namespace

Status parse_env(EnvOptions *out, GetenvFn getenv_fn, bool nvshmem_names) {
  if (getenv_fn == nullptr) getenv_fn = [](const char *name) -> const char * { return std::getenv(name); };
  EnvOptions options;
  // Defaults go through the same parser as user values, so the table's text is the single truth. A value
  // taken from NVSHMEM's name is reported under that name.
#define TSHMEM_ENV_PARSE(NAME, FIELD, KIND, DEFAULT, CATEGORY, DESCRIPTION)               \
  {                                                                                       \
    const char *name = "TSHMEM_" #NAME;                                                   \
    const char *text = getenv_fn(name);                                                   \
    if (text == nullptr && nvshmem_names && has_nvshmem_name(#NAME)) {                    \
      name = "NVSHMEM_" #NAME;                                                            \
      text = getenv_fn(name);                                                             \
    }                                                                                     \
    TSHMEM_CHECK(parse_into(name, EnvKind::KIND, text ? text : DEFAULT, &options.FIELD)); \
  }
  TSHMEM_ENV_LIST(TSHMEM_ENV_PARSE)
#undef TSHMEM_ENV_PARSE
  if (options.symmetric_size < 2 * TSHMEM_INTERNAL_HEAP_BYTES)
    return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_SYMMETRIC_SIZE=%llu: must be at least %u bytes",
                     static_cast<unsigned long long>(options.symmetric_size), 2 * TSHMEM_INTERNAL_HEAP_BYTES);
  if (options.symmetric_size >= (uint64_t{1} << 48))
    return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_SYMMETRIC_SIZE=%llu: must be below 256 TiB (2^48 bytes)",
                     static_cast<unsigned long long>(options.symmetric_size));
  if (options.debug_node_size < 0 || options.debug_node_size > TSHMEM_MAX_PES)
    return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_DEBUG_NODE_SIZE=%lld: must be 0 (off) or a PE count up to %d",
                     static_cast<long long>(options.debug_node_size), TSHMEM_MAX_PES);
  if (options.init_timeout_ms < 1 || options.init_timeout_ms > kMaxTimeoutMs)
    return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_INIT_TIMEOUT_MS=%lld: must be 1 to %lld (one day) milliseconds",
                     static_cast<long long>(options.init_timeout_ms), static_cast<long long>(kMaxTimeoutMs));
  if (options.wait_timeout_ms < 0 || options.wait_timeout_ms > kMaxTimeoutMs)
    return set_error(TSHMEM_ERR_CONFIG,
                     "TSHMEM_WAIT_TIMEOUT_MS=%lld: must be 0 (forever) to %lld (one day) milliseconds",
                     static_cast<long long>(options.wait_timeout_ms), static_cast<long long>(kMaxTimeoutMs));
  if (options.proxy_timeout_ms < 1 || options.proxy_timeout_ms > kMaxTimeoutMs)
    return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_PROXY_TIMEOUT_MS=%lld: must be 1 to %lld (one day) milliseconds",
                     static_cast<long long>(options.proxy_timeout_ms), static_cast<long long>(kMaxTimeoutMs));
  if (options.wait_warn_ms < 0 || options.wait_warn_ms > kMaxTimeoutMs)
    return set_error(TSHMEM_ERR_CONFIG,
                     "TSHMEM_WAIT_WARN_MS=%lld: must be 0 (no warning) to %lld (one day) milliseconds",
                     static_cast<long long>(options.wait_warn_ms), static_cast<long long>(kMaxTimeoutMs));
  // The proxy's sizes are checked here, not when a job first spans nodes: a value that would fail there fails
  // on one node too, and tshmem-info never prints a figure for it.
  const int64_t ring = options.proxy_ring;
  if (ring < 2 || ring > (int64_t{1} << 24) || (ring & (ring - 1)) != 0)
    return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_PROXY_RING=%lld: must be a power of two in [2, 16777216]",
                     static_cast<long long>(ring));
  if (options.proxy_chunk < 64 || options.proxy_chunk > (uint64_t{256} << 20))
    return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_PROXY_CHUNK=%llu: must be in [64, 268435456] bytes",
                     static_cast<unsigned long long>(options.proxy_chunk));
  if (options.proxy_stage_max > (uint64_t{1} << 20))
    return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_PROXY_STAGE_MAX=%llu: must be in [0, 1048576] bytes",
                     static_cast<unsigned long long>(options.proxy_stage_max));
  unsigned mask = 0;
  TSHMEM_CHECK(log_subsys_from(options.debug_subsys, &mask));
  FaultSpec fault;
  TSHMEM_CHECK(parse_fault_spec("TSHMEM_DEBUG_FAIL", options.debug_fail, &fault));
  const char *nvshmem = getenv_fn("NVSHMEM_DISABLE_NVLS");
  options.nvshmem_disable_nvls = nvshmem != nullptr && nvshmem_style_true(nvshmem);
  options.nccl_nvls_disabled = nccl_style_nvls_disabled(getenv_fn("NCCL_NVLS_ENABLE"));
  options.launcher = launcher_placement(getenv_fn);
  *out = options;
  return TSHMEM_SUCCESS;
}

namespace {

// A launcher's count: a whole non-negative number below 2^31, else -1 (not ours to refuse).
int launcher_count(const char *text) {
  if (text == nullptr || *text < '0' || *text > '9') return -1;
  char *end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  return errno == 0 && *end == '\0' && value <= INT32_MAX ? static_cast<int>(value) : -1;
}

}  // namespace

LauncherPlacement launcher_placement(GetenvFn getenv_fn) {
  struct Names {
    const char *rank, *size, *local_rank, *local_size;
  };
  // The first launcher whose local rank is set wins; Slurm gives no per-host count (tasks may be uneven).
  static const Names launchers[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
  };
  LauncherPlacement out;
  for (const Names &n : launchers) {
    out.local_rank = launcher_count(getenv_fn(n.local_rank));
    if (out.local_rank < 0) continue;
    out.rank = launcher_count(getenv_fn(n.rank));
    out.size = launcher_count(getenv_fn(n.size));
    out.local_size = n.local_size != nullptr ? launcher_count(getenv_fn(n.local_size)) : -1;
    if (n.local_size == nullptr && launcher_count(getenv_fn("SLURM_NNODES")) == 1) out.local_size = out.size;
    return out;
  }
  return LauncherPlacement{};
}

}  // namespace tshmemi
