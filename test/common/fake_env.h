// An environment a test fills, for the parser's getenv argument (parse_env in src/env.h): the variables live in a
// map, not in the process, so a test sets exactly what it means and nothing of the real environment leaks in.
#pragma once

#include <map>
#include <string>

namespace tshmem_test {

/// The variables fake_getenv reads; a test clears and sets them.
inline std::map<std::string, std::string> &fake_env() {
  static std::map<std::string, std::string> vars;
  return vars;
}

/// getenv over fake_env().
inline const char *fake_getenv(const char *name) {
  const auto it = fake_env().find(name);
  return it == fake_env().end() ? nullptr : it->second.c_str();
}

}  // namespace tshmem_test
