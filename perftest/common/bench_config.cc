#include "bench_config.h"

#include <getopt.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tshmem_perf {
namespace {

bool parse_size(const char *text, size_t *out) {
  char *end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text) return false;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10, ++end;
  else if (*end == 'M' || *end == 'm')
    shift = 20, ++end;
  else if (*end == 'G' || *end == 'g')
    shift = 30, ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(value) << shift;
  return true;
}

bool parse_positive(const char *text, int *out) {
  char *end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0 || value > 1 << 30) return false;
  *out = static_cast<int>(value);
  return true;
}

void usage(const char *bench) {
  std::fprintf(stderr,
               "usage: %s [-b min_size] [-e max_size] [-f step_factor] [-n iters] [-w warmup_iters]\n"
               "          [-c ctas] [-t threads_per_cta] [-d datatype] [-s thread|warp|block|all] [--bidir]\n"
               "          [--json FILE]\n"
               "sizes accept K, M and G suffixes; options as in NVSHMEM's perftest\n",
               bench);
}

std::string json_escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

/// A number as is, anything else as a JSON string.
std::string json_value(const std::string &text) {
  char *end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const bool numeric = !text.empty() && end != text.c_str() && *end == '\0' && std::isfinite(value);
  return numeric ? text : "\"" + json_escape(text) + "\"";
}

}  // namespace

std::vector<size_t> BenchConfig::sizes() const {
  std::vector<size_t> out;
  for (size_t size = min_size; size <= max_size; size *= step_factor) {
    out.push_back(size);
    if (step_factor < 2) break;
  }
  return out;
}

bool parse_args(int argc, char **argv, const char *bench_name, BenchConfig *config, int *exit_code) {
  static const option kLong[] = {{"bidir", no_argument, nullptr, 'B'},
                                 {"json", required_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "hb:e:f:n:w:c:t:d:s:", kLong, nullptr)) != -1) {
    bool ok = true;
    switch (opt) {
      case 'b': ok = parse_size(optarg, &config->min_size) && config->min_size > 0; break;
      case 'e': ok = parse_size(optarg, &config->max_size); break;
      case 'f': {
        int factor = 0;
        ok = parse_positive(optarg, &factor) && factor >= 2;
        config->step_factor = static_cast<size_t>(factor);
        break;
      }
      case 'n': ok = parse_positive(optarg, &config->iters); break;
      case 'w':
        ok = parse_positive(optarg, &config->warmup_iters) || std::strcmp(optarg, "0") == 0;
        if (std::strcmp(optarg, "0") == 0) config->warmup_iters = 0;
        break;
      case 'c': ok = parse_positive(optarg, &config->ctas); break;
      case 't': ok = parse_positive(optarg, &config->threads_per_cta) && config->threads_per_cta <= 1024; break;
      case 'd': config->datatype = optarg; break;
      case 's':
        config->scope = optarg;
        ok = config->scope == "thread" || config->scope == "warp" || config->scope == "block" || config->scope == "all";
        break;
      case 'B': config->bidir = true; break;
      case 'J': config->json_path = optarg; break;
      case 'h':
        usage(bench_name);
        *exit_code = 0;
        return false;
      default:
        usage(bench_name);
        *exit_code = 2;
        return false;
    }
    if (!ok) {
      std::fprintf(stderr, "%s: invalid value '%s' for -%c\n", bench_name, optarg ? optarg : "", opt);
      usage(bench_name);
      *exit_code = 2;
      return false;
    }
  }
  if (config->min_size > config->max_size) {
    std::fprintf(stderr, "%s: -b %zu is larger than -e %zu\n", bench_name, config->min_size, config->max_size);
    *exit_code = 2;
    return false;
  }
  return true;
}

Reporter::Reporter(const BenchConfig &config, std::string bench, bool printing_pe)
    : bench_(std::move(bench)),
      printing_(printing_pe),
      ctas_(config.ctas),
      threads_(config.threads_per_cta),
      iters_(config.iters),
      bidir_(config.bidir) {
  if (printing_ && !config.json_path.empty()) json_ = std::fopen(config.json_path.c_str(), "a");
}

Reporter::~Reporter() {
  if (json_) std::fclose(json_);
}

void Reporter::set_labels(std::string lib, std::string build) {
  lib_ = std::move(lib);
  build_ = std::move(build);
}

void Reporter::header(const std::string &title, const std::vector<std::string> &columns) {
  // A column named like one of the JSON line's own keys would write that key twice: readers keep one.
  static const char *const kOwnKeys[] = {"bench", "lib",  "build",   "table", "metric",
                                         "value", "ctas", "threads", "iters", "bidir"};
  for (const std::string &column : columns)
    for (const char *key : kOwnKeys)
      if (column == key) {
        std::fprintf(stderr, "Reporter::header(\"%s\"): column \"%s\" is a key of every JSON line; name it apart\n",
                     title.c_str(), key);
        std::abort();
      }
  columns_ = columns;
  title_ = title;
  if (!printing_) return;
  std::printf("#%s\n", title.c_str());
  for (const std::string &column : columns) std::printf("%-17s ", column.c_str());
  std::printf("\n");
}

void Reporter::row(const std::vector<std::string> &values) {
  if (!printing_) return;
  for (const std::string &value : values) std::printf("%-17s ", value.c_str());  // a space even past 17
  std::printf("\n");
  std::fflush(stdout);
  if (!json_) return;
  std::fprintf(json_, "{\"bench\": \"%s\", \"lib\": \"%s\", \"build\": \"%s\", \"table\": \"%s\"",
               json_escape(bench_).c_str(), json_escape(lib_).c_str(), json_escape(build_).c_str(),
               json_escape(title_).c_str());
  const size_t n = values.size() < columns_.size() ? values.size() : columns_.size();
  for (size_t i = 0; i < n; ++i)
    std::fprintf(json_, ", \"%s\": %s", json_escape(columns_[i]).c_str(), json_value(values[i]).c_str());
  if (n > 0)
    std::fprintf(json_, ", \"metric\": \"%s\", \"value\": %s", json_escape(columns_[n - 1]).c_str(),
                 json_value(values[n - 1]).c_str());
  std::fprintf(json_, ", \"ctas\": %d, \"threads\": %d, \"iters\": %d, \"bidir\": %s}\n", ctas_, threads_, iters_,
               bidir_ ? "true" : "false");
  std::fflush(json_);
}

void Reporter::note(const std::string &text) {
  if (printing_) std::printf("# %s\n", text.c_str());
}

std::string fmt_double(double value, int precision) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", precision, value);
  return buffer;
}

}  // namespace tshmem_perf
