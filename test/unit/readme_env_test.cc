// The README's variable table and the parser's table must list the same variables with the same
// defaults and descriptions: the parser is the truth, and this test fails when the README drifts.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "env.h"

namespace tshmemi {
namespace {

TEST(Readme, VariableTableMatchesTheParser) {
  std::ifstream readme(TSHMEM_README_PATH);
  ASSERT_TRUE(readme.good()) << "cannot open " << TSHMEM_README_PATH;
  std::stringstream text;
  text << readme.rdbuf();
  const std::string content = text.str();
  size_t rows_in_readme = 0;
  for (size_t at = content.find("| `TSHMEM_"); at != std::string::npos; at = content.find("| `TSHMEM_", at + 1))
    ++rows_in_readme;
  EXPECT_EQ(rows_in_readme, env_table().size()) << "README lists another number of TSHMEM_ variables";
  for (const EnvVarInfo &row : env_table()) {
    const std::string expected =
        std::string("| `") + row.name + "` | `" + row.default_text + "` | " + row.description + " |";
    EXPECT_NE(content.find(expected), std::string::npos) << "README row missing or different; expected:\n" << expected;
  }
}

}  // namespace
}  // namespace tshmemi
