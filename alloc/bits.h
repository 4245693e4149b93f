// PopCount: the number of set bits of a 64-bit word, inline on every x86-64 target.
//
// Without -mpopcnt (the baseline x86-64 target Debian builds for), std::popcount compiles to a
// call into libgcc, which dominated the profiles of the take and of hint generation; this
// branch-free SWAR form stays inline. Thread-safety: a pure function.
#ifndef HUYGENS_ALLOC_BITS_H_
#define HUYGENS_ALLOC_BITS_H_

#include <cstdint>

namespace huygens {

inline int PopCount(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

}  // namespace huygens

#endif  // HUYGENS_ALLOC_BITS_H_
