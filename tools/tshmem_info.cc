// tshmem-info: what this build is and what this host offers, read only (it creates nothing).
//   tshmem-info [--json]
// The text is the library's (tshmemx_info), so the Python package's tshmem.info() prints the same.
#include <cstdio>
#include <cstring>
#include <string>

#include "tshmem/tshmem.h"

int main(int argc, char **argv) {
  const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  if (argc > 1 && !json) {
    std::fprintf(stderr, "usage: tshmem-info [--json]\n");
    return std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  std::string text(tshmemx_info(json ? 1 : 0, nullptr, 0) + 1, '\0');
  tshmemx_info(json ? 1 : 0, text.data(), text.size());
  std::fputs(text.c_str(), stdout);
  return 0;
}
