// The on-stream collectives are GPU kernels: on the shm backend (and in a build without CUDA) every one of
// them fails at once on every PE with TSHMEM_ERR_CONFIG naming the call, and nothing hangs; before init
// they report that tshmem is not initialised.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fixture.h"
#include "tshmem/tshmemx.h"

namespace tshmem_test {
namespace {

using CollOnShm = TshmemTest;

std::vector<std::pair<const char *, std::function<int()>>> every_collective(void *dst, const void *src) {
  return {
      {"tshmemx_allreduce_on_stream",
       [=] {
         return tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, dst, src, 4, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM,
                                            nullptr);
       }},
      {"tshmemx_reduce_scatter_on_stream",
       [=] {
         return tshmemx_reduce_scatter_on_stream(TSHMEM_TEAM_WORLD, dst, src, 4, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM,
                                                 nullptr);
       }},
      {"tshmemx_allgather_on_stream",
       [=] { return tshmemx_allgather_on_stream(TSHMEM_TEAM_WORLD, dst, src, 16, nullptr); }},
      {"tshmemx_alltoall_on_stream",
       [=] { return tshmemx_alltoall_on_stream(TSHMEM_TEAM_WORLD, dst, src, 16, nullptr); }},
      {"tshmemx_broadcast_on_stream",
       [=] { return tshmemx_broadcast_on_stream(TSHMEM_TEAM_WORLD, dst, src, 16, 0, nullptr); }},
      {"tshmemx_barrier_on_stream", [] { return tshmemx_barrier_on_stream(TSHMEM_TEAM_WORLD, nullptr); }},
  };
}

TEST_F(CollOnShm, EveryCollectiveFailsClearlyAndNothingHangs) {
  auto *buffers = static_cast<char *>(tshmem_calloc(2, 4096));
  ASSERT_NE(buffers, nullptr);
  for (auto &[name, call] : every_collective(buffers, buffers + 4096)) {
    EXPECT_EQ(call(), TSHMEM_ERR_CONFIG) << name;
    const std::string message = tshmemx_last_error();
    EXPECT_EQ(message.rfind(name, 0), 0u) << "the message starts with the call: " << message;
    EXPECT_NE(message.find("collectives run on the GPU"), std::string::npos) << message;
  }
  tshmem_barrier_all();  // every PE got here: no collective waited for another
  tshmem_free(buffers);
}

TEST(CollBeforeInit, EveryCollectiveSaysTshmemIsNotInitialised) {
  char buffer[64] = {};
  for (auto &[name, call] : every_collective(buffer, buffer + 32)) {
    EXPECT_EQ(call(), TSHMEM_ERR_NOT_INITIALIZED) << name;
    EXPECT_NE(std::string(tshmemx_last_error()).find(std::string(name) + ": tshmem is not initialised"),
              std::string::npos)
        << tshmemx_last_error();
  }
}

}  // namespace
}  // namespace tshmem_test
