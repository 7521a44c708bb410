// Host-initiated put/get on the GPU backends: blocking and on-stream, sizes from 1 byte to 1 MiB + 13 at
// odd offsets, from pageable host memory, pinned host memory and device memory. Each PE puts to the next
// PE and gets back what it put; the bytes around every transfer must stay untouched.
#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu_test_env.h"

namespace tshmem_test {
namespace {

constexpr size_t kRegion = 4 << 20;
const size_t kSizes[] = {1, 2, 3, 7, 8, 63, 64, 255, 4096, 4097, 65535, 1 << 20, (1 << 20) + 13};
const size_t kOffsets[] = {0, 1, 3, 7, 129, 4093};

uint8_t pattern(int pe, size_t i, size_t size, size_t offset) {
  return static_cast<uint8_t>(pe * 31 + i * 7 + size + offset * 3 + 1);  // never all-zero
}

std::vector<uint8_t> pattern_of(int pe, size_t size, size_t offset) {
  std::vector<uint8_t> out(size);
  for (size_t i = 0; i < size; ++i) out[i] = pattern(pe, i, size, offset);
  return out;
}

enum class Mode { kBlocking, kOnStream };

// One case: PE me puts [size] at buf+offset on PE (me+1)%n; then each PE checks its own copy (written by
// its predecessor) and the guard bytes around it, and gets back from its successor what it put there.
void put_get_case(char *buf, int me, int n, size_t size, size_t offset, Mode mode, cudaStream_t stream,
                  const void *source_memory) {
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  EXPECT_CUDA_OK(cudaMemset(buf, 0, kRegion));
  EXPECT_CUDA_OK(cudaDeviceSynchronize());
  tshmem_barrier_all();

  const int rc = mode == Mode::kBlocking ? tshmem_putmem(buf + offset, source_memory, size, next)
                                         : tshmemx_putmem_on_stream(buf + offset, source_memory, size, next, stream);
  EXPECT_EQ(rc, 0) << tshmemx_last_error();
  if (mode == Mode::kOnStream) {
    EXPECT_CUDA_OK(cudaStreamSynchronize(stream));
  }
  tshmem_barrier_all();  // quiet + barrier: the predecessor's put has landed here

  std::vector<uint8_t> mine(size + 2, 0xee);
  const size_t lo = offset > 0 ? offset - 1 : offset;  // include a guard byte before when there is one
  EXPECT_CUDA_OK(cudaMemcpy(mine.data(), buf + lo, size + 1 + (offset - lo), cudaMemcpyDeviceToHost));
  const uint8_t *landed = mine.data() + (offset - lo);
  if (offset > 0) {
    EXPECT_EQ(mine[0], 0) << "byte before the put was touched (size " << size << ", offset " << offset << ")";
  }
  EXPECT_EQ(landed[size], 0) << "byte after the put was touched (size " << size << ", offset " << offset << ")";
  EXPECT_EQ(std::memcmp(landed, pattern_of(prev, size, offset).data(), size), 0)
      << "PE " << me << " did not receive PE " << prev << "'s " << size << " bytes at offset " << offset;

  std::vector<uint8_t> back(size, 0);
  uint8_t *pinned = nullptr;
  if (mode == Mode::kBlocking) {
    EXPECT_EQ(tshmem_getmem(back.data(), buf + offset, size, next), 0) << tshmemx_last_error();
  } else {
    EXPECT_CUDA_OK(cudaMallocHost(reinterpret_cast<void **>(&pinned), size));
    if (pinned != nullptr) {
      EXPECT_EQ(tshmemx_getmem_on_stream(pinned, buf + offset, size, next, stream), 0) << tshmemx_last_error();
      EXPECT_CUDA_OK(cudaStreamSynchronize(stream));
      std::memcpy(back.data(), pinned, size);
      cudaFreeHost(pinned);
    }
  }
  EXPECT_EQ(std::memcmp(back.data(), pattern_of(me, size, offset).data(), size), 0)
      << "getmem from PE " << next << " (size " << size << ", offset " << offset << ")";
  tshmem_barrier_all();  // nobody clears its buffer while a successor still reads it
}

enum class Source { kPageable, kPinned, kDevice };

void run_all_cases(int me, int n, Mode mode, Source source) {
  char *buf = static_cast<char *>(tshmem_malloc(kRegion));
  ASSERT_TRUE(all_pes(buf != nullptr)) << tshmemx_last_error();
  cudaStream_t stream = nullptr;
  if (mode == Mode::kOnStream) {
    EXPECT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  const size_t largest = kSizes[sizeof(kSizes) / sizeof(kSizes[0]) - 1];
  std::vector<uint8_t> pageable(largest);
  void *pinned = nullptr, *device = nullptr;
  if (source == Source::kPinned) {
    EXPECT_CUDA_OK(cudaMallocHost(&pinned, largest));
  }
  if (source == Source::kDevice) {
    EXPECT_CUDA_OK(cudaMalloc(&device, largest));
  }

  for (size_t size : kSizes) {
    for (size_t offset : kOffsets) {
      const std::vector<uint8_t> data = pattern_of(me, size, offset);
      void *src = pageable.data();
      if (source == Source::kPageable) std::memcpy(pageable.data(), data.data(), size);
      if (source == Source::kPinned && pinned) std::memcpy(src = pinned, data.data(), size);
      if (source == Source::kDevice && device) {
        EXPECT_CUDA_OK(cudaMemcpy(src = device, data.data(), size, cudaMemcpyHostToDevice));
      }
      put_get_case(buf, me, n, size, offset, mode, stream, src);
    }
  }
  if (stream) cudaStreamDestroy(stream);
  if (pinned) cudaFreeHost(pinned);
  if (device) cudaFree(device);
  tshmem_free(buf);
}

TEST_P(GpuBackendTest, PutGetBlockingFromPageableHostMemory) {
  run_all_cases(me_, n_, Mode::kBlocking, Source::kPageable);
}
TEST_P(GpuBackendTest, PutGetBlockingFromDeviceMemory) { run_all_cases(me_, n_, Mode::kBlocking, Source::kDevice); }
TEST_P(GpuBackendTest, PutGetOnStreamFromPinnedHostMemory) { run_all_cases(me_, n_, Mode::kOnStream, Source::kPinned); }
TEST_P(GpuBackendTest, PutGetOnStreamFromDeviceMemory) { run_all_cases(me_, n_, Mode::kOnStream, Source::kDevice); }

TEST_P(GpuBackendTest, HostCallsRejectABadPeAndWriteNothing) {
  char *buf = static_cast<char *>(tshmem_calloc(1, 4096));
  ASSERT_TRUE(all_pes(buf != nullptr)) << tshmemx_last_error();
  const uint64_t value = 0x1234;
  EXPECT_EQ(tshmem_putmem(buf, &value, sizeof(value), n_), TSHMEM_ERR_INVALID_PE);
  EXPECT_EQ(tshmem_putmem(buf, &value, sizeof(value), -1), TSHMEM_ERR_INVALID_PE);
  EXPECT_EQ(tshmemx_putmem_on_stream(buf, &value, sizeof(value), 99, nullptr), TSHMEM_ERR_INVALID_PE);
  EXPECT_NE(std::string(tshmemx_last_error()).find("99"), std::string::npos) << tshmemx_last_error();
  uint64_t out = 0;
  EXPECT_EQ(tshmem_getmem(&out, buf, sizeof(out), n_), TSHMEM_ERR_INVALID_PE);
  tshmem_barrier_all();
  std::vector<uint64_t> words(512, 1);
  EXPECT_CUDA_OK(cudaMemcpy(words.data(), buf, 4096, cudaMemcpyDeviceToHost));
  for (uint64_t w : words) {
    EXPECT_EQ(w, 0u);
  }
  tshmem_free(buf);
}

}  // namespace
}  // namespace tshmem_test
