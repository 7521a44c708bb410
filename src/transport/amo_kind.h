// The atomic kinds of the off-node path, in one encoding: tshmemi_proxy_amo (proxy_types.h), the device API's.
// Requests, transport operations and wire records carry it unchanged; a signal (SET or ADD) is the atomic it is
// (of_signal), converted once where a request becomes an operation. Which kinds exist, which fetch, and each
// kind's new value are defined here, for the host's atomics and the GPU's kernel alike.
#pragma once

#include <cstdint>

#include "tshmem/device/proxy_types.h"

#ifdef __CUDACC__
#define TSHMEMI_AMO_HD __host__ __device__
#else
#define TSHMEMI_AMO_HD
#endif

namespace tshmemi {
namespace amo_kind {

/// What a kind does to the word, without its fetch bit (op(): the low four bits). FETCH reads only (kRead); SWAP
/// and CSWAP exist only as fetching kinds.
constexpr unsigned kRead = 0;
constexpr unsigned kSet = TSHMEMI_AMO_SET;
constexpr unsigned kAdd = TSHMEMI_AMO_ADD;
constexpr unsigned kInc = TSHMEMI_AMO_INC;
constexpr unsigned kAnd = TSHMEMI_AMO_AND;
constexpr unsigned kOr = TSHMEMI_AMO_OR;
constexpr unsigned kXor = TSHMEMI_AMO_XOR;
constexpr unsigned kSwap = TSHMEMI_AMO_SWAP & 15u;
constexpr unsigned kCswap = TSHMEMI_AMO_CSWAP & 15u;

TSHMEMI_AMO_HD inline unsigned op(unsigned kind) { return kind & 15u; }

/// Whether the old value goes back to the origin.
inline bool fetches(unsigned kind) { return (kind & TSHMEMI_AMO_FETCH) != 0; }

/// Whether `kind` names an atomic: SET .. XOR, and FETCH with each op up to CSWAP (validation before anything is
/// applied).
inline bool known(unsigned kind) {
  return (kind >= TSHMEMI_AMO_SET && kind <= TSHMEMI_AMO_XOR) ||
         (kind >= TSHMEMI_AMO_FETCH && kind <= TSHMEMI_AMO_CSWAP);
}

/// A signal operation (TSHMEMI_PROXY_SIGNAL_SET / _ADD) as the atomic kind it is; 0 (no kind) for anything else.
inline unsigned of_signal(unsigned signal_op) {
  return signal_op == TSHMEMI_PROXY_SIGNAL_SET   ? unsigned{TSHMEMI_AMO_SET}
         : signal_op == TSHMEMI_PROXY_SIGNAL_ADD ? unsigned{TSHMEMI_AMO_ADD}
                                                 : 0u;
}

/// Whether `kind` is one a signal may carry: SET (a store at the target) or ADD (an atomic).
inline bool is_signal(unsigned kind) { return kind == TSHMEMI_AMO_SET || kind == TSHMEMI_AMO_ADD; }

/// The one definition of each kind's new value, from the old one.
template <class T>
TSHMEMI_AMO_HD inline T result(unsigned kind, T old, T value, T compare) {
  switch (op(kind)) {
    case kSet: return value;
    case kAdd: return static_cast<T>(old + value);
    case kInc: return static_cast<T>(old + 1);
    case kAnd: return static_cast<T>(old & value);
    case kOr: return static_cast<T>(old | value);
    case kXor: return static_cast<T>(old ^ value);
    case kSwap: return value;
    case kCswap: return old == compare ? value : old;
  }
  return old;  // kRead
}

}  // namespace amo_kind
}  // namespace tshmemi
