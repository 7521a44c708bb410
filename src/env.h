// The one place that reads the environment. Parsing is strict: a malformed value is an error naming
// the variable, the value and the rule, never a silent default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "env_defs.h"

namespace tshmemi {

enum class EnvKind { Size, Int, Bool, Choice, String };

template <EnvKind K>
struct EnvType {
  using type = std::string;
};
template <>
struct EnvType<EnvKind::Size> {
  using type = uint64_t;
};
template <>
struct EnvType<EnvKind::Int> {
  using type = int64_t;
};
template <>
struct EnvType<EnvKind::Bool> {
  using type = bool;
};

/// Where the launcher placed this process, from its own variables (Open MPI's OMPI_COMM_WORLD_*, MPICH's
/// PMI_RANK/PMI_SIZE and MPI_LOCALRANKID/MPI_LOCALNRANKS, Slurm's SLURM_PROCID/NTASKS/LOCALID): known before MPI
/// starts. -1 where the launcher does not say (or says something that is not a count).
struct LauncherPlacement {
  int rank = -1;
  int size = -1;
  int local_rank = -1;  ///< among the processes of this host
  int local_size = -1;
};

/// Parsed options: one field per row of env_defs.h (the variable's name without TSHMEM_, lower case).
struct EnvOptions {
#define TSHMEM_ENV_FIELD(NAME, FIELD, KIND, DEFAULT, CATEGORY, DESCRIPTION) EnvType<EnvKind::KIND>::type FIELD{};
  TSHMEM_ENV_LIST(TSHMEM_ENV_FIELD)
#undef TSHMEM_ENV_FIELD

  // Foreign switches, read the owner's way (multicast goes off exactly when theirs would).
  bool nvshmem_disable_nvls = false;  ///< NVSHMEM_DISABLE_NVLS set and true by NVSHMEM's rule
  bool nccl_nvls_disabled = false;    ///< NCCL_NVLS_ENABLE set and 0 by NCCL's rule (unparseable: disabled)
  LauncherPlacement launcher;         ///< only a prediction: the bootstrap's ranks are the truth

  /// The variable that forbids NVLink multicast ("TSHMEM_DISABLE_NVLS=1", ...), or nullptr.
  const char *nvls_forbidding_variable() const {
    if (disable_nvls) return "TSHMEM_DISABLE_NVLS=1";
    if (nvshmem_disable_nvls) return "NVSHMEM_DISABLE_NVLS (set, true by NVSHMEM's rule)";
    if (nccl_nvls_disabled) return "NCCL_NVLS_ENABLE (0, or unparseable, by NCCL's rule)";
    return nullptr;
  }
  /// True when any of the three variables forbids NVLink multicast.
  bool nvls_forbidden() const { return nvls_forbidding_variable() != nullptr; }
};

/// One row of the variable table (for tshmem-info and the README check).
struct EnvVarInfo {
  const char *name;  ///< "TSHMEM_SYMMETRIC_SIZE"
  EnvKind kind;
  const char *default_text;
  const char *category;
  const char *description;
  const char *choices;  ///< "a|b|c" for Choice, else ""
};

const std::vector<EnvVarInfo> &env_table();

/// Reads a variable through `getenv_fn` (tests pass their own). Fills `out`; on a malformed value returns
/// TSHMEM_ERR_CONFIG with the message "TSHMEM_X=value: rule" as the last error.
using GetenvFn = const char *(*)(const char *);
/// `nvshmem_names`: where TSHMEM_<NAME> is unset, read NVSHMEM_<NAME> for the names of TSHMEM_ENV_NVSHMEM_NAMES.
Status parse_env(EnvOptions *out, GetenvFn getenv_fn = nullptr, bool nvshmem_names = false);

// The parsers, exposed for the unit tests.
Status parse_size(const char *name, const char *text, uint64_t *out);
Status parse_int(const char *name, const char *text, int64_t *out);
Status parse_bool(const char *name, const char *text, bool *out);
Status parse_choice(const char *name, const char *text, const char *choices, std::string *out);
bool nvshmem_style_true(const char *text);        ///< NVSHMEM: first char in "0NnFf" means false
bool nccl_style_nvls_disabled(const char *text);  ///< NCCL: strtoll == 0 or unparseable means disabled
LauncherPlacement launcher_placement(GetenvFn getenv_fn);

LogLevel log_level_from(const std::string &debug);
Status log_subsys_from(const std::string &list, unsigned *mask);

}  // namespace tshmemi
