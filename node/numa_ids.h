// Small helpers over sorted id lists (NUMA node ids) shared by node/'s files.
#ifndef HUYGENS_NODE_NUMA_IDS_H_
#define HUYGENS_NODE_NUMA_IDS_H_

#include <algorithm>
#include <iterator>
#include <vector>

#include "cpuset/cpuset.h"

namespace huygens {

// The ids as a set. REQUIRES: each id in [0, CpuSet::kMaxCpus).
inline CpuSet IdSet(const std::vector<int>& ids) {
  CpuSet::Builder b;
  for (int id : ids) b.Add(id);
  return b.Build();
}

// The union of two ascending id lists, ascending.
inline std::vector<int> UnionIds(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace huygens

#endif  // HUYGENS_NODE_NUMA_IDS_H_
