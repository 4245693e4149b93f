#include "alloc/topology_index.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>

#include "absl/container/inlined_vector.h"

namespace huygens {
namespace {

size_t Sz(int i) { return static_cast<size_t>(i); }

// Renumbers the ids in `ids` densely in ascending id order. Returns the dense index per entry
// and fills `dense_ids` with the id of each dense index.
std::vector<int> Densify(const std::vector<int>& ids, std::vector<int>& dense_ids) {
  int max_id = -1;
  for (int id : ids) max_id = std::max(max_id, id);
  std::vector<int> dense_of(Sz(max_id + 1), -1);
  for (int id : ids) dense_of[Sz(id)] = 0;
  dense_ids.clear();
  for (int id = 0; id <= max_id; ++id) {
    if (dense_of[Sz(id)] == 0) {
      dense_of[Sz(id)] = static_cast<int>(dense_ids.size());
      dense_ids.push_back(id);
    }
  }
  std::vector<int> out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) out[i] = dense_of[Sz(ids[i])];
  return out;
}

// Groups items by owner: for each i, items[i] goes to owner[i] (in [0, num_owners)), keeping
// the order of i. With `items` empty, the item is i itself.
TopologyIndex::Lists Group(const std::vector<int>& owner, int num_owners,
                           const std::vector<int>& items = {}) {
  TopologyIndex::Lists lists;
  lists.start.assign(Sz(num_owners + 1), 0);
  for (int o : owner) ++lists.start[Sz(o + 1)];
  for (size_t i = 1; i < lists.start.size(); ++i) lists.start[i] += lists.start[i - 1];
  lists.items.resize(owner.size());
  std::vector<int> next(lists.start.begin(), lists.start.end() - 1);
  for (size_t i = 0; i < owner.size(); ++i) {
    lists.items[Sz(next[Sz(owner[i])]++)] = items.empty() ? static_cast<int>(i) : items[i];
  }
  return lists;
}

// Maximal runs of consecutive members per unit of ascending member lists.
TopologyIndex::Ranges RangesOf(const TopologyIndex::Lists& lists) {
  TopologyIndex::Ranges ranges;
  const int units = static_cast<int>(lists.start.size()) - 1;
  ranges.start.push_back(0);
  for (int u = 0; u < units; ++u) {
    int run_begin = -1, prev = -2;
    for (int item : lists.Of(u)) {
      if (item != prev + 1) {
        if (run_begin >= 0) {
          ranges.begin.push_back(run_begin);
          ranges.end.push_back(prev + 1);
        }
        run_begin = item;
      }
      prev = item;
    }
    if (run_begin >= 0) {
      ranges.begin.push_back(run_begin);
      ranges.end.push_back(prev + 1);
    }
    ranges.start.push_back(static_cast<int>(ranges.begin.size()));
  }
  return ranges;
}

// Word masks per unit of its ranges: one entry per word a unit touches, ascending by word.
TopologyIndex::Masks MasksOf(const TopologyIndex::Ranges& ranges) {
  TopologyIndex::Masks masks;
  const int units = static_cast<int>(ranges.start.size()) - 1;
  masks.start.push_back(0);
  for (int u = 0; u < units; ++u) {
    const size_t first = masks.items.size();
    for (size_t r = ranges.First(u); r < ranges.Last(u); ++r) {
      for (int local = ranges.begin[r]; local < ranges.end[r]; ++local) {
        const size_t word = Sz(local) >> 6;
        if (masks.items.size() == first || masks.items.back().word != word) {
          // Ranges of a unit ascend, so a word seen before is the last one.
          masks.items.push_back({word, 0});
        }
        masks.items.back().mask |= uint64_t{1} << (local & 63);
      }
    }
    masks.start.push_back(static_cast<int>(masks.items.size()));
  }
  return masks;
}

// Dense pair numbering of (a, b) combinations present in the per-CPU columns, in ascending
// (a, b) order.
std::vector<int> PairsOf(const std::vector<int>& a, const std::vector<int>& b, int num_b,
                         std::vector<int>& pair_a, std::vector<int>& pair_b) {
  std::vector<int> key(a.size());
  for (size_t i = 0; i < a.size(); ++i) key[i] = a[i] * num_b + b[i];
  std::vector<int> dense_keys;
  std::vector<int> pair_of = Densify(key, dense_keys);
  pair_a.clear();
  pair_b.clear();
  for (int k : dense_keys) {
    pair_a.push_back(k / num_b);
    pair_b.push_back(k % num_b);
  }
  return pair_of;
}

// Bit i of x (i < 32) moved to bit 2i; higher bits of x must be 0.
uint64_t SpreadByTwo(uint64_t x) {
  x = (x | (x << 16)) & 0x0000ffff0000ffffULL;
  x = (x | (x << 8)) & 0x00ff00ff00ff00ffULL;
  x = (x | (x << 4)) & 0x0f0f0f0f0f0f0f0fULL;
  x = (x | (x << 2)) & 0x3333333333333333ULL;
  return (x | (x << 1)) & 0x5555555555555555ULL;
}

// Bits [pos, pos + count) of a bitmap (words past its end are 0), as the low bits of a word.
// REQUIRES: 1 <= count <= 64.
uint64_t ExtractBits(std::span<const uint64_t> words, int pos, int count) {
  const size_t w = Sz(pos) >> 6;
  const int b = pos & 63;
  uint64_t x = w < words.size() ? words[w] >> b : 0;
  if (b != 0 && w + 1 < words.size()) x |= words[w + 1] << (64 - b);
  return count == 64 ? x : x & ((uint64_t{1} << count) - 1);
}

}  // namespace

TopologyIndex::TopologyIndex(const CpuTopology& topo) {
  // Online CPUs in id order (position j), with their raw unit ids.
  std::vector<int> ids, cores, numas, sockets, l3s;
  for (const CpuInfo& c : topo.Cpus()) {
    if (!c.online) continue;
    ids.push_back(c.id);
    cores.push_back(c.core);
    numas.push_back(c.numa);
    sockets.push_back(c.socket);
    l3s.push_back(c.l3);
  }
  const std::vector<int> core_j = Densify(cores, core_id_);
  const std::vector<int> numa_j = Densify(numas, numa_id_);
  const std::vector<int> socket_j = Densify(sockets, socket_id_);
  const std::vector<int> l3_j = Densify(l3s, l3_id_);

  // Hierarchical local order: socket, NUMA node, L3 group, core, CPU id. Dense indexes are
  // below CpuSet::kMaxCpus (2^13), so the four unit indexes pack into one 52-bit key.
  std::vector<std::pair<uint64_t, int>> keyed(ids.size());
  for (size_t j = 0; j < ids.size(); ++j) {
    const uint64_t key = (uint64_t(socket_j[j]) << 39) | (uint64_t(numa_j[j]) << 26) |
                         (uint64_t(l3_j[j]) << 13) | uint64_t(core_j[j]);
    keyed[j] = {key, static_cast<int>(j)};
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> order(ids.size());
  for (size_t i = 0; i < keyed.size(); ++i) order[i] = keyed[i].second;
  local_of_.assign(ids.empty() ? 0 : Sz(ids.back() + 1), -1);
  std::vector<int> local_of_j(ids.size());
  for (size_t local = 0; local < order.size(); ++local) {
    const size_t j = Sz(order[local]);
    local_of_j[j] = static_cast<int>(local);
    local_of_[Sz(ids[j])] = static_cast<int>(local);
    cpu_id_.push_back(ids[j]);
    core_of_.push_back(core_j[j]);
    numa_of_.push_back(numa_j[j]);
    socket_of_.push_back(socket_j[j]);
    l3_of_.push_back(l3_j[j]);
  }
  ns_of_ = PairsOf(numa_of_, socket_of_, NumSockets(), ns_numa_, ns_socket_);
  nl_of_ = PairsOf(numa_of_, l3_of_, NumL3Groups(), nl_numa_, nl_l3_);

  core_cpus_ = Group(core_of_, NumCores());
  numa_cpus_ = Group(numa_of_, NumNumaNodes());
  socket_cpus_ = Group(socket_of_, NumSockets());
  l3_cpus_ = Group(l3_of_, NumL3Groups());
  socket_cpus_by_id_ = Group(socket_j, NumSockets(), local_of_j);
  core_ranges_ = RangesOf(core_cpus_);
  numa_ranges_ = RangesOf(numa_cpus_);
  socket_ranges_ = RangesOf(socket_cpus_);
  l3_ranges_ = RangesOf(l3_cpus_);
  ns_ranges_ = RangesOf(Group(ns_of_, NumNumaSocketPairs()));
  nl_ranges_ = RangesOf(Group(nl_of_, NumNumaL3Pairs()));
  numa_masks_ = MasksOf(numa_ranges_);
  l3_masks_ = MasksOf(l3_ranges_);
  ns_masks_ = MasksOf(ns_ranges_);
  nl_masks_ = MasksOf(nl_ranges_);
  core_start_mask_.assign(Sz(NumCpus() / 64 + 1), 0);
  uniform_core_size_ = NumCores() > 0 ? core_cpus_.SizeOf(0) : 0;
  for (int local = 1; local < NumCpus(); ++local) {
    if (core_of_[Sz(local)] < core_of_[Sz(local - 1)]) cores_in_local_order_ = false;
  }
  for (int core = 0; core < NumCores(); ++core) {
    max_threads_per_core_ = std::max(max_threads_per_core_, core_cpus_.SizeOf(core));
    if (core_cpus_.SizeOf(core) != uniform_core_size_) uniform_core_size_ = 0;
    const size_t r = core_ranges_.First(core);
    const int begin = core_ranges_.begin[r], end = core_ranges_.end[r];
    core_word_.push_back(begin / 64);
    uint64_t mask = 0;
    if (begin / 64 == (end - 1) / 64) {
      for (int i = begin; i < end; ++i) mask |= uint64_t{1} << (i % 64);
    } else {
      uniform_core_size_ = 0;
    }
    core_mask_.push_back(mask);
    core_start_mask_[Sz(begin / 64)] |= uint64_t{1} << (begin % 64);
  }

  // ToLocalBits' runs: the longest run of consecutive online ids from each id whose local
  // indexes advance by one stride of 1, 2, 4 or 8.
  for (int id = 0; id < static_cast<int>(local_of_.size());) {
    const int local = local_of_[Sz(id)];
    if (local < 0) {
      ++id;
      continue;
    }
    IdRun run{id, local, 1, 0};
    if (id + 1 < static_cast<int>(local_of_.size())) {
      const int stride = local_of_[Sz(id + 1)] - local;
      if (stride == 1 || stride == 2 || stride == 4 || stride == 8) {
        run.shift = std::countr_zero(static_cast<unsigned>(stride));
        while (id + run.length < static_cast<int>(local_of_.size()) &&
               local_of_[Sz(id + run.length)] == local + run.length * stride) {
          ++run.length;
        }
      }
    }
    id_runs_.push_back(run);
    id += run.length;
  }

  // Parents of each core, from its first CPU.
  std::vector<int> core_numa(Sz(NumCores())), core_socket(Sz(NumCores())),
      core_l3(Sz(NumCores()));
  for (int core = 0; core < NumCores(); ++core) {
    const int first = core_cpus_.Of(core)[0];
    core_numa[Sz(core)] = numa_of_[Sz(first)];
    core_socket[Sz(core)] = socket_of_[Sz(first)];
    core_l3[Sz(core)] = l3_of_[Sz(first)];
    core_nl_.push_back(nl_of_[Sz(first)]);
  }
  numa_cores_ = Group(core_numa, NumNumaNodes());
  socket_cores_ = Group(core_socket, NumSockets());
  l3_cores_ = Group(core_l3, NumL3Groups());

  // Pairs are numbered in ascending (NUMA, other) order, so grouping by NUMA keeps them
  // ordered by socket / L3 group; grouping by socket keeps them ordered by NUMA node.
  numa_ns_ = Group(ns_numa_, NumNumaNodes());
  socket_ns_ = Group(ns_socket_, NumSockets());
  numa_nl_ = Group(nl_numa_, NumNumaNodes());
}

int TopologyIndex::NumaIndexOf(int numa_id) const {
  auto it = std::lower_bound(numa_id_.begin(), numa_id_.end(), numa_id);
  if (it == numa_id_.end() || *it != numa_id) return -1;
  return static_cast<int>(it - numa_id_.begin());
}

void TopologyIndex::ToLocalBits(const CpuSet& cpus, std::span<uint64_t> local) const {
  std::fill(local.begin(), local.end(), 0);
  const std::span<const uint64_t> bits = cpus.Bitmap();
  const int end = static_cast<int>(bits.size()) * 64;
  for (const IdRun& run : id_runs_) {
    if (run.id >= end) break;
    const int per_chunk = 64 >> run.shift;
    for (int done = 0; done < run.length; done += per_chunk) {
      uint64_t chunk = ExtractBits(bits, run.id + done, std::min(per_chunk, run.length - done));
      if (chunk == 0) continue;
      for (int i = 0; i < run.shift; ++i) chunk = SpreadByTwo(chunk);
      // Every set bit of the chunk is a local index below NumCpus(), so a carry into the next
      // word stays inside `local`.
      const int pos = run.local + (done << run.shift);
      const size_t w = Sz(pos) >> 6;
      const int b = pos & 63;
      local[w] |= chunk << b;
      if (b != 0 && (chunk >> (64 - b)) != 0) local[w + 1] |= chunk >> (64 - b);
    }
  }
}

CpuSet TopologyIndex::ToCpuSet(std::span<const int> locals) const {
  // Bitmap words up to the largest id the index knows (local_of_ has one entry per id).
  absl::InlinedVector<uint64_t, 16> words(local_of_.size() / 64 + 1, 0);
  uint64_t* bits = words.data();
  for (int local : locals) {
    const int cpu = cpu_id_[Sz(local)];
    bits[Sz(cpu) >> 6] |= uint64_t{1} << (cpu & 63);
  }
  return CpuSet::FromBitmap(words);
}

}  // namespace huygens
