// tshmem-info: what this build is and what this host offers, read only (it creates nothing).
//   tshmem-info [--json]
//   tshmem-info --stale | --remove-stale   what killed jobs left on this host (tshmemx_stale_files), or remove it
// The text is the library's (tshmemx_info), so the Python package's tshmem.info() prints the same.
#include <cstdio>
#include <cstring>
#include <string>

#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

int main(int argc, char **argv) {
  const char *option = argc > 1 ? argv[1] : "";
  const bool json = std::strcmp(option, "--json") == 0;
  const bool stale = std::strcmp(option, "--stale") == 0, remove = std::strcmp(option, "--remove-stale") == 0;
  if (argc > 2 || (argc > 1 && !json && !stale && !remove)) {
    std::fprintf(stderr, "usage: tshmem-info [--json | --stale | --remove-stale]\n");
    return std::strcmp(option, "-h") == 0 || std::strcmp(option, "--help") == 0 ? 0 : 2;
  }
  if (stale || remove) {
    // Room for every line found now, and for " (removed)" after each.
    std::string text(4 * tshmemx_stale_files(0, nullptr, 0) + 64, '\0');
    const size_t length = tshmemx_stale_files(remove ? 1 : 0, text.data(), text.size());
    text.resize(length < text.size() ? length : text.size() - 1);
    std::fputs(text.empty() ? "no stale files of tshmem on this host\n" : text.c_str(), stdout);
    return 0;
  }
  std::string text(tshmemx_info(json ? 1 : 0, nullptr, 0) + 1, '\0');
  tshmemx_info(json ? 1 : 0, text.data(), text.size());
  std::fputs(text.c_str(), stdout);
  return 0;
}
