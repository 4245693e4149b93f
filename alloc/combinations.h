// k-combinations of positions {0, ..., n-1} in lexicographic order, the enumeration kubelet
// uses (bitmask.IterateBitMasks, iterateCombinations in the static policy's NUMA distribution),
// so that the first of equally good subsets is the one kubelet would pick.
//
// A combination is k ascending positions in a caller-owned span (no allocation, for the
// allocator's hot loop):
//   FirstCombination(pos);                 // 0, 1, ..., k-1
//   do { use(pos); } while (NextCombination(pos, n));
//
// Thread-safety: pure functions on the caller's span.
#ifndef HUYGENS_ALLOC_COMBINATIONS_H_
#define HUYGENS_ALLOC_COMBINATIONS_H_

#include <cstddef>
#include <span>

namespace huygens {

// Sets `pos` to the first combination: 0, 1, ..., pos.size()-1.
inline void FirstCombination(std::span<int> pos) {
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int>(i);
}

// Advances `pos` (a k-combination of {0, ..., n-1}, ascending) to the next one in
// lexicographic order. Returns false when `pos` was the last one (n-k, ..., n-1); `pos` is then
// left unchanged. REQUIRES: pos.size() <= n.
inline bool NextCombination(std::span<int> pos, int n) {
  const int k = static_cast<int>(pos.size());
  int i = k - 1;
  while (i >= 0 && pos[static_cast<size_t>(i)] == n - k + i) --i;
  if (i < 0) return false;
  ++pos[static_cast<size_t>(i)];
  for (int j = i + 1; j < k; ++j) {
    pos[static_cast<size_t>(j)] = pos[static_cast<size_t>(j - 1)] + 1;
  }
  return true;
}

}  // namespace huygens

#endif  // HUYGENS_ALLOC_COMBINATIONS_H_
