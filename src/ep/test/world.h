// Test inputs for a whole job, the same on every PE that builds them (a fixed seed): the CPU suite feeds them to
// the references, the GPU suite uploads its own PE's share and compares with the references.
#pragma once

#include <random>
#include <vector>

#include "dispatch/dispatch_reference.h"

namespace tshmem_ep {

// A job's inputs: tokens[p] tokens on PE p, routed by `route` (0 random, 1 every token to every PE, 2 only to
// the home PE, 3 random with -1 entries).
inline std::vector<PeTokens> make_world(const std::vector<int64_t> &tokens, int64_t hidden, bool fp8, int64_t k,
                                        int64_t experts, int route, uint32_t seed) {
  std::mt19937 rng(seed);
  const int n = static_cast<int>(tokens.size());
  const int64_t local = experts / n;
  std::vector<PeTokens> w(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    PeTokens &in = w[static_cast<size_t>(p)];
    in.num_tokens = tokens[static_cast<size_t>(p)];
    const size_t t = static_cast<size_t>(in.num_tokens);
    in.x.resize(t * static_cast<size_t>(hidden) * (fp8 ? 1 : 2));
    for (auto &b : in.x) b = static_cast<uint8_t>(rng() & 0x3f);  // small finite bf16 / fp8 bit patterns
    if (fp8) {
      in.scales.resize(t * static_cast<size_t>(hidden / 128));
      for (auto &s : in.scales) s = static_cast<float>(rng() % 1000) / 64.0f;
    }
    in.topk_idx.resize(t * static_cast<size_t>(k));
    in.topk_weights.resize(t * static_cast<size_t>(k));
    for (size_t i = 0; i < t; ++i) {
      for (int64_t j = 0; j < k; ++j) {
        int64_t e;
        if (route == 1)
          e = (j % n) * local + (j / n) % local;
        else if (route == 2)
          e = p * local + static_cast<int64_t>(rng() % static_cast<uint32_t>(local));
        else
          e = static_cast<int64_t>(rng() % static_cast<uint32_t>(experts));
        if (route == 3 && rng() % 3 == 0) e = -1;
        in.topk_idx[i * static_cast<size_t>(k) + static_cast<size_t>(j)] = e;
        in.topk_weights[i * static_cast<size_t>(k) + static_cast<size_t>(j)] =
            static_cast<float>(rng() % 1024 + 1) / 1024.0f;
      }
    }
  }
  return w;
}

}  // namespace tshmem_ep
