// atomic_latency: one thread of PE 0 applies each remote atomic to a word on PE 1 `iters` times (NVSHMEM's
// shmem_atomic_latency shape). A fetching operation's address depends on the value the previous one
// returned, so each is a full round trip rather than one of many in flight; the others are each followed by
// quiet. compare_swap compares with the value it expects the word to hold, so every swap succeeds.
#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

template <class O, Amo Op, class T>
__global__ void atomic_latency_kernel(T *remote, T *sink, int peer, int iters) {
  using U = std::make_unsigned_t<T>;
  T fetched = 0, expected = 0;
  for (int i = 0; i < iters; ++i) {
    // 0 for every value these loops produce (all far below 2^(bits-2)), but the compiler cannot know it.
    T *target = remote + ((static_cast<U>(fetched) >> (8 * sizeof(T) - 2)) & 1u);
    if constexpr (Op == Amo::compare_swap) {
      const T old = O::template amo<Op, T>(target, T(expected + 1), expected, peer);
      expected = old == expected ? T(expected + 1) : old;  // resynchronises if the word held something else
      fetched = old;
    } else if constexpr (amo_fetches(Op)) {
      fetched = O::template amo<Op, T>(target, T(1), T(0), peer);
    } else {
      O::template amo<Op, T>(target, T(1), T(0), peer);
      O::quiet();
    }
  }
  *sink = fetched;
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.iterations(1000, 100);
  b.runs_alone = true;  // PE 0 works, PE 1 only serves: at 1 PE a local row
  if (!b.start(argc, argv, "atomic_latency")) return b.exit_code;

  char *words = b.alloc(256);
  const bool known = with_amo_type(b.config.datatype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    b.report().note(std::string(Ops::kName) + ", one thread of PE 0 on a word of PE 1, " + b.config.datatype);
    b.report().header("atomic latency by operation", {"op", "type", "latency (us)"});
    for_each_amo([&](auto op) {
      constexpr Amo kOp = decltype(op)::value;
      T *remote = reinterpret_cast<T *>(words);
      T *sink = reinterpret_cast<T *>(words + 128);
      const float ms = b.timed(b.me == 0, false, [&](int iters) {
        return b.launch(atomic_latency_kernel<Ops, kOp, T>, 1, 1, remote, sink, b.peer, iters);
      });
      b.report().row({amo_name(kOp), b.config.datatype, fmt_double(static_cast<double>(ms) * 1e3 / b.config.iters, 3)});
    });
  });
  return b.finish_typed(known, "int (int32) or long (64-bit, run as uint64)");
}
