// The off-node proxy driven from the CPU: what a kernel's requests cost the proxy, measured where there is no
// GPU. Producer threads of PE 0 post to PE 0's device channel exactly what a kernel posts (proxy_types.h),
// on the shm heap with PE 1 on another node (TSHMEM_DEBUG_NODE_SIZE=1):
//   - p request rate: -t threads each post -n inline 8-byte puts (a kernel's p) to their own word of PE 1,
//     then one QUIET; rows for 1, 2, 4, ... -t threads. The off-node path's target: >= 500 k/s.
//   - p ping-pong: PE 0 p's a counter to PE 1, which waits for it in its heap and p's it back; half round trip.
//   - put + quiet: an 8-byte put from PE 0's memory, then a QUIET waited for; per pair.
//   - staged get rate: producers post a kernel's staged gets (19 bytes of PE 1's heap into the put staging), each
//     keeping a window of them in flight as a warp of thread-scope getmem does, and wait on each ticket's result
//     tag, read the data and hand the ticket back; rows for 1 get in flight, one per producer (-t producers) and
//     the whole ring (-t producers sharing its tickets: a 1,024-thread block of gets through the default ring).
//   - put bandwidth: one producer posts puts of 64 KiB - 16 MiB from PE 0's heap (a kernel's putmem_nbi of a size
//     the kernel does not stage), 64 MiB a row, then one QUIET; PE 1 checks the last put's bytes. The staged path's
//     pipeline (the copy into send buffers, the messages, the target's copy) as a kernel's large puts drive it.
// The device twins are proxy_rate, p_ping_pong_latency, put_latency run across nodes on a GPU, and for the staged
// gets DeviceRmaLaunch.ThreadScopeGetsFillA1024ThreadBlock (tshmem_device_rma_test) across nodes.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "host_bench.h"
#include "tshmem/device/proxy_types.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

using namespace tshmem_perf;
using Clock = std::chrono::steady_clock;

namespace {

/// The producers of a row with windows of several gets meet here after each round (C++17 has no std::barrier). The
/// channel frees its slots in ticket order and a staged get holds its slot until its producer has read it: a
/// producer a round ahead of another that was descheduled mid-window could fill the ring behind that one's unread
/// tickets, and both would wait to post for ever.
class RoundBarrier {
 public:
  explicit RoundBarrier(int producers) : producers_(producers) {}
  void wait() {
    const int round = round_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == producers_) {
      arrived_.store(0, std::memory_order_relaxed);
      round_.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    while (round_.load(std::memory_order_acquire) == round) std::this_thread::yield();
  }

 private:
  const int producers_;
  std::atomic<int> arrived_{0};
  std::atomic<int> round_{0};
};

struct Channel {
  tshmemi_proxy_channel *ring;
  const char *heap;

  uint64_t offset_of(const void *symmetric) const {
    return static_cast<uint64_t>(static_cast<const char *>(symmetric) - heap);
  }
  uint64_t p(uint64_t *word, uint64_t value, int pe) const {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT;
    r.flags = TSHMEMI_PROXY_FLAG_INLINE;
    r.pe = pe;
    r.remote = offset_of(word);
    r.bytes = sizeof(uint64_t);
    r.value = value;
    return tshmemi_proxy_post(ring, &r);
  }
  // A kernel's putmem_nbi of `bytes` from `source` (not staged by the kernel) to `dest` on `pe`.
  uint64_t put(void *dest, const void *source, uint64_t bytes, int pe) const {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT;
    r.pe = pe;
    r.remote = offset_of(dest);
    r.local = reinterpret_cast<uint64_t>(source);
    r.bytes = bytes;
    return tshmemi_proxy_post(ring, &r);
  }
  // A kernel's staged get of `bytes` at `source` on `pe` into the put staging at `pos`; returns the ticket.
  uint64_t staged_get(const void *source, uint64_t bytes, int pe, uint64_t pos) const {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_GET;
    r.flags = TSHMEMI_PROXY_FLAG_STAGED;
    r.pe = pe;
    r.remote = offset_of(source);
    r.bytes = bytes;
    r.local = pos;
    return tshmemi_proxy_post(ring, &r);
  }
  // Waits for the staged get `ticket` (its result tag), reads its `bytes` at `pos` into `out`, hands the ticket back.
  void staged_get_read(uint64_t ticket, uint64_t pos, uint64_t bytes, unsigned char *out) const {
    tshmemi_proxy_result *slot = tshmemi_proxy_results(ring, ring->capacity) + (ticket & (ring->capacity - 1));
    while (__atomic_load_n(&slot->tag, __ATOMIC_ACQUIRE) != ticket + 1) std::this_thread::yield();
    for (uint64_t i = 0; i < bytes; ++i) out[i] = ring->staging[(pos + i) % ring->stage_bytes];
    __atomic_store_n(&slot->tag, TSHMEMI_PROXY_RESULT_TAKEN(ticket), __ATOMIC_RELEASE);
  }
  void quiet() const {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_QUIET;
    const uint64_t ticket = tshmemi_proxy_post(ring, &r);
    while (!tshmemi_proxy_done(ring, ticket)) std::this_thread::yield();
  }
};

void wait_for(const uint64_t *word, uint64_t value) {
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != value) std::this_thread::yield();
}

}  // namespace

int main(int argc, char **argv) {
  BenchConfig config;
  config.iters = 20000;
  config.warmup_iters = 1000;
  config.threads_per_cta = 4;  // -t: most producer threads
  int exit_code = 0;
  if (!start_host_bench(argc, argv, "host_proxy", &config, &exit_code)) return exit_code;
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  const int most_threads = config.threads_per_cta;
  auto *words = static_cast<uint64_t *>(tshmem_calloc(static_cast<size_t>(most_threads) + 2, sizeof(uint64_t)));
  const Channel channel{tshmemi_proxy_device_channel(), static_cast<const char *>(tshmemx_heap_base())};
  std::string skip;
  if (n != 2)
    skip = "needs exactly 2 PEs, got " + std::to_string(n);
  else if (std::string(tshmemx_backend_name()) != "shm")
    skip = std::string("the CPU producers need the shm heap (backend ") + tshmemx_backend_name() + ")";
  else if (channel.ring == nullptr || tshmem_ptr(words, 1 - me) != nullptr)
    skip = "PE 1 is on this node (set TSHMEM_DEBUG_NODE_SIZE=1): no off-node proxy to measure";
  if (words == nullptr) skip = std::string("allocation failed: ") + tshmemx_last_error();
  if (!skip.empty()) {
    if (me == 0) std::printf("host_proxy: skipped: %s\n", skip.c_str());
    tshmem_finalize();
    return 0;
  }
  Reporter report(config, "host_proxy", me == 0);
  report.note("backend shm, PE 1 on another node: CPU producers post to PE 0's device channel (a kernel's requests)");

  // p request rate.
  report.header("p request rate (CPU producers)", {"producers", "p per row", "rate (M p/s)"});
  std::vector<int> rows;  // 1, 2, 4, ... threads, and -t itself
  for (int threads = 1; threads < most_threads; threads *= 2) rows.push_back(threads);
  rows.push_back(most_threads);
  uint64_t base = 0;  // the last value of every word written so far, on both PEs
  for (int threads : rows) {
    double rate = 0;
    tshmem_barrier_all();
    for (int pass = 0; pass < 2; ++pass) {  // warm-up, then timed
      const int iters = pass == 0 ? config.warmup_iters : config.iters;
      if (me == 0) {
        const auto start = Clock::now();
        std::vector<std::thread> producers;
        for (int t = 0; t < threads; ++t)
          producers.emplace_back([&, t, iters] {
            for (int i = 0; i < iters; ++i) channel.p(words + t, base + static_cast<uint64_t>(i) + 1, 1);
          });
        for (std::thread &producer : producers) producer.join();
        channel.quiet();
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        rate = static_cast<double>(threads) * iters / seconds / 1e6;
      }
      base += static_cast<uint64_t>(iters);
    }
    tshmem_barrier_all();
    report.row(
        {std::to_string(threads), std::to_string(static_cast<long long>(threads) * config.iters), fmt_double(rate, 3)});
  }

  // p ping-pong, half round trip.
  uint64_t *flag = words + most_threads;
  const int rounds = std::max(1, config.iters / 10);
  report.header("p ping-pong latency (CPU producers)", {"size(B)", "op", "latency (us)"});
  tshmem_barrier_all();
  double us = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const int iters = pass == 0 ? std::max(1, config.warmup_iters / 10) : rounds;
    uint64_t value = __atomic_load_n(flag, __ATOMIC_ACQUIRE);
    tshmem_barrier_all();
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      ++value;
      if (me == 0) {
        channel.p(flag, value, 1);
        wait_for(flag, value);
      } else {
        wait_for(flag, value);
        channel.p(flag, value, 0);
      }
    }
    us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters / 2;
    channel.quiet();
    tshmem_barrier_all();
  }
  report.row({"8", "p ping-pong", fmt_double(us, 3)});

  // put + quiet.
  report.header("put + quiet latency (CPU producers)", {"size(B)", "op", "latency (us)"});
  tshmem_barrier_all();
  us = 0;
  if (me == 0) {
    const uint64_t source = 42;
    for (int pass = 0; pass < 2; ++pass) {
      const int iters = pass == 0 ? std::max(1, config.warmup_iters / 10) : rounds;
      const auto start = Clock::now();
      for (int i = 0; i < iters; ++i) {
        channel.put(words + most_threads + 1, &source, sizeof source, 1);
        channel.quiet();
      }
      us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
    }
  }
  tshmem_barrier_all();
  report.row({"8", "put+quiet", fmt_double(us, 3)});

  // Staged get rate: every producer keeps `window` gets in flight (posts them, then waits for each in turn).
  int wrong_gets = 0;
  if (channel.ring->stage_bytes > 0) {
    constexpr uint64_t kGetBytes = 19;  // the device twin's slice: misaligned, not a word
    constexpr uint64_t span = 64 * 1024;
    auto *source = static_cast<unsigned char *>(tshmem_malloc(span));
    const auto expected = [](uint64_t i) { return static_cast<unsigned char>(i * 7 + 3); };
    if (source != nullptr)
      for (uint64_t i = 0; i < span; ++i) source[i] = expected(i);
    report.header("staged get rate (CPU producers)",
                  {"producers", "gets in flight", "gets per row", "rate (k gets/s)"});
    const int ring_size = static_cast<int>(channel.ring->capacity);
    struct Row {
      int producers, window;
    };
    const std::vector<Row> get_rows = {{1, 1}, {most_threads, 1}, {most_threads, ring_size / most_threads}};
    for (const Row &row : get_rows) {
      const int in_flight = row.producers * row.window;
      const int gets = std::max(4 * in_flight, (std::max(1, config.iters / 10) / in_flight) * in_flight);
      double rate = 0;
      tshmem_barrier_all();
      if (me == 0 && source != nullptr) {
        std::atomic<int> bad{0};
        for (int pass = 0; pass < 2; ++pass) {  // warm-up (one window each), then timed
          const int windows = pass == 0 ? 1 : gets / in_flight;
          const auto start = Clock::now();
          RoundBarrier next_round(row.producers);
          std::vector<std::thread> producers;
          for (int t = 0; t < row.producers; ++t)
            producers.emplace_back([&, t, windows] {
              std::vector<uint64_t> tickets(static_cast<size_t>(row.window)), at(tickets.size()), pos(tickets.size());
              unsigned char got[kGetBytes];
              for (int round = 0; round < windows; ++round) {
                for (size_t w = 0; w < tickets.size(); ++w) {
                  const uint64_t i = (static_cast<uint64_t>(round * in_flight + t * row.window) + w) * 41;
                  at[w] = i % (span - kGetBytes);
                  pos[w] = tshmemi_proxy_stage_reserve(channel.ring, kGetBytes);
                  tickets[w] = channel.staged_get(source + at[w], kGetBytes, 1, pos[w]);
                }
                for (size_t w = 0; w < tickets.size(); ++w) {
                  channel.staged_get_read(tickets[w], pos[w], kGetBytes, got);
                  for (uint64_t k = 0; k < kGetBytes; ++k)
                    if (got[k] != expected(at[w] + k)) ++bad;
                }
                if (row.window > 1) next_round.wait();  // one ticket each is read before the next is posted
              }
            });
          for (std::thread &producer : producers) producer.join();
          const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
          rate = static_cast<double>(windows) * in_flight / seconds / 1e3;
        }
        wrong_gets = bad.load();
      }
      tshmem_barrier_all();
      report.row({std::to_string(row.producers), std::to_string(in_flight), std::to_string(gets), fmt_double(rate, 2)});
    }
    if (wrong_gets != 0) std::fprintf(stderr, "host_proxy: PE 0: %d bytes of staged gets wrong\n", wrong_gets);
    tshmem_free(source);
  }

  // Put bandwidth: PE 0's heap to PE 1's, one producer, every row 64 MiB, then a QUIET.
  int wrong_bytes = 0;
  {
    constexpr uint64_t kLargest = 16 << 20, kRowBytes = 64 << 20;
    auto *from = static_cast<char *>(tshmem_malloc(kLargest));
    auto *into = static_cast<char *>(tshmem_malloc(kLargest));
    report.header("put bandwidth (CPU producer)", {"size(B)", "op", "BW (GB/sec)"});
    if (from == nullptr || into == nullptr) {
      if (me == 0) std::printf("host_proxy: put bandwidth skipped: %s\n", tshmemx_last_error());
    } else {
      for (uint64_t size = 64 << 10; size <= kLargest; size *= 4) {
        const auto pattern = [size](uint64_t i) { return static_cast<char>((i * 131 + size / 4096) & 0xff); };
        for (uint64_t i = 0; i < size; ++i) from[i] = pattern(i);
        tshmem_barrier_all();
        double gbps = 0;
        if (me == 0) {
          for (int pass = 0; pass < 2; ++pass) {  // warm-up (one put), then timed
            const uint64_t puts = pass == 0 ? 1 : kRowBytes / size;
            const auto start = Clock::now();
            for (uint64_t i = 0; i < puts; ++i) channel.put(into, from, size, 1);
            channel.quiet();
            const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
            gbps = static_cast<double>(puts * size) / seconds / 1e9;
          }
        }
        tshmem_barrier_all();
        if (me == 1)
          for (uint64_t i = 0; i < size; ++i) wrong_bytes += into[i] != pattern(i);
        report.row({std::to_string(size), "put", fmt_double(gbps, 2)});
      }
    }
    if (wrong_bytes != 0) std::fprintf(stderr, "host_proxy: PE 1: %d bytes of the puts wrong\n", wrong_bytes);
    tshmem_free(into);
    tshmem_free(from);
  }

  // Every producer's word holds its last value at PE 1 (the last row wrote all of them).
  int wrong = 0;
  if (me == 1)
    for (int t = 0; t < most_threads; ++t)
      if (__atomic_load_n(words + t, __ATOMIC_ACQUIRE) != base) ++wrong;
  if (me == 1 && wrong != 0)
    std::fprintf(stderr, "host_proxy: PE 1: %d of %d producer words do not hold their last p (%llu)\n", wrong,
                 most_threads, static_cast<unsigned long long>(base));
  tshmem_free(words);
  tshmem_finalize();
  return wrong == 0 && wrong_gets == 0 && wrong_bytes == 0 ? 0 : 1;
}
