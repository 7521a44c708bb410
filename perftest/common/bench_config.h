// The perftest harness shared by every benchmark: NVSHMEM's options, its table layout and JSON lines.
// A benchmark parses a BenchConfig (no globals), loops over sizes() and reports through a Reporter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tshmem_perf {

struct BenchConfig {
  size_t min_size = 4;           ///< -b
  size_t max_size = 4 << 20;     ///< -e
  size_t step_factor = 2;        ///< -f
  int iters = 10;                ///< -n
  int warmup_iters = 5;          ///< -w
  int ctas = 1;                  ///< -c  (device benchmarks)
  int threads_per_cta = 1024;    ///< -t  (device benchmarks)
  std::string datatype = "int";  ///< -d
  std::string scope = "all";     ///< -s  thread|warp|block|all
  bool bidir = false;            ///< --bidir
  std::string json_path;         ///< --json FILE: one JSON object per line

  std::vector<size_t> sizes() const;
};

/// Parses argv with NVSHMEM's flags (-b -e -f -n -w -c -t -d -s, sizes accept K/M/G) plus --bidir and --json.
/// On -h or a bad option prints usage (naming the option and the rule) and returns false with *exit_code set.
bool parse_args(int argc, char **argv, const char *bench_name, BenchConfig *config, int *exit_code);

/// Prints NVSHMEM-shaped tables on PE 0 and appends JSON lines when --json is given.
///
/// Each JSON line carries the row under its column names plus the keys the compare script and the plots
/// read: "bench", "lib" and "build" (set_labels), "table" (the header's title), "metric" and "value" (the
/// last column: the measurement), and the launch shape "ctas", "threads", "iters", "bidir".
class Reporter {
 public:
  Reporter(const BenchConfig &config, std::string bench, bool printing_pe);
  ~Reporter();
  Reporter(const Reporter &) = delete;
  Reporter &operator=(const Reporter &) = delete;
  /// Which library ran ("tshmem", "nvshmem") and which build variant ("default", "pe_check=0").
  void set_labels(std::string lib, std::string build);
  /// Starts a table: `columns` like {"size(B)", "scope", "BW (GB/sec)"}; the last column is the measurement.
  /// A column may not take a name of the JSON line's own keys ("threads", "value", ...): it aborts naming it.
  void header(const std::string &title, const std::vector<std::string> &columns);
  /// One row; numbers are printed with the table's widths; also one JSON line with the same keys.
  void row(const std::vector<std::string> &values);
  void note(const std::string &text);

 private:
  std::string bench_;
  std::string lib_ = "tshmem";
  std::string build_ = "default";
  std::string title_;
  bool printing_;
  int ctas_, threads_, iters_;
  bool bidir_;
  std::vector<std::string> columns_;
  FILE *json_ = nullptr;
};

std::string fmt_double(double value, int precision = 3);

}  // namespace tshmem_perf
