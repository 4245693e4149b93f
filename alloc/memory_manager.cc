#include "alloc/memory_manager.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "alloc/combinations.h"
#include "fmt/format.h"

namespace huygens {
namespace {

using Mask = uint64_t;

Mask MaskOf(const std::vector<int>& ids) {
  Mask m = 0;
  for (int id : ids) {
    if (id >= 0 && id < 64) m |= Mask{1} << id;
  }
  return m;
}

std::vector<int> IdsOf(Mask m) {
  std::vector<int> ids;
  while (m != 0) {
    ids.push_back(std::countr_zero(m));
    m &= m - 1;
  }
  return ids;
}

int Count(Mask m) { return std::popcount(m); }

// kubelet's IsNarrowerThan: fewer NUMA nodes, then the smaller bitmask.
bool Narrower(Mask a, Mask b) {
  return Count(a) != Count(b) ? Count(a) < Count(b) : a < b;
}

const MemoryTable& TableOf(const MemoryManagerState& s, int numa, const std::string& resource) {
  static const MemoryTable kZero{};
  auto n = s.machine.find(numa);
  if (n == s.machine.end()) return kZero;
  auto t = n->second.memory_map.find(resource);
  return t == n->second.memory_map.end() ? kZero : t->second;
}

const ContainerSpec* FindContainer(const PodSpec& pod, const std::string& name) {
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const ContainerSpec& c : *list) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

bool SameGroup(const std::vector<int>& cells, Mask mask) { return MaskOf(cells) == mask &&
                                                                   Count(mask) ==
                                                                       static_cast<int>(cells.size()); }

uint64_t Reusable(const MemoryManagerState& s, const std::string& pod_uid, Mask mask,
                  const std::string& resource) {
  auto p = s.reusable.find(pod_uid);
  if (p == s.reusable.end()) return 0;
  auto m = p->second.find(IdsOf(mask));
  if (m == p->second.end()) return 0;
  auto r = m->second.find(resource);
  return r == m->second.end() ? 0 : r->second;
}

// kubelet's calculateHints: the qualifying sets (in kubelet's visiting order) and
// minAffinitySize. Sets larger than max_set_size are not visited (they still could not lower
// minAffinitySize below a visited size, so only the list is cut).
struct HintSets {
  std::vector<Mask> sets;
  int min_affinity_size = 0;
};

HintSets Calculate(const MemoryManagerState& s, const std::string& pod_uid,
                   const MemoryRequests& requests, int max_set_size) {
  std::vector<int> ids;
  for (const auto& [id, _] : s.machine) ids.push_back(id);
  HintSets out;
  out.min_affinity_size = static_cast<int>(ids.size());
  const int n = static_cast<int>(ids.size());
  for (int k = 1; k <= std::min(n, max_set_size); ++k) {
    std::vector<int> pos(static_cast<size_t>(k));
    FirstCombination(pos);
    do {
      Mask mask = 0;
      for (int p : pos) mask |= Mask{1} << ids[static_cast<size_t>(p)];
      const std::vector<int> bits = IdsOf(mask);
      bool enough_allocatable = true;
      for (const auto& [resource, size] : requests) {
        uint64_t allocatable = 0;
        for (int id : bits) allocatable += TableOf(s, id, resource).allocatable;
        if (allocatable < size) enough_allocatable = false;
      }
      if (!enough_allocatable) continue;
      out.min_affinity_size = std::min(out.min_affinity_size, k);
      if (k == 1 && s.machine.at(bits[0]).cells.size() > 1) continue;
      bool group_ok = true;
      if (k > 1) {
        for (int id : bits) {
          const NumaMemoryState& node = s.machine.at(id);
          if (node.number_of_assignments <= 0) continue;
          if (node.cells.size() == 1 || !SameGroup(node.cells, mask)) group_ok = false;
        }
      }
      if (!group_ok) continue;
      bool enough_free = true;
      for (const auto& [resource, size] : requests) {
        uint64_t free = 0;
        for (int id : bits) free += TableOf(s, id, resource).free;
        if (free + Reusable(s, pod_uid, mask, resource) < size) enough_free = false;
      }
      if (!enough_free) continue;
      out.sets.push_back(mask);
    } while (NextCombination(pos, n));
  }
  return out;
}

// kubelet's findBestHint over the qualifying sets that contain `within` (0 = all): the
// narrowest; preferred when it has min_affinity_size NUMA nodes. nullopt when none.
std::optional<TopologyHint> BestHint(const HintSets& h, Mask within) {
  std::optional<Mask> best;
  for (Mask m : h.sets) {
    if ((m & within) != within) continue;
    if (!best || Narrower(m, *best)) best = m;
  }
  if (!best) return std::nullopt;
  return TopologyHint{IdsOf(*best), Count(*best) == h.min_affinity_size};
}

bool SatisfiesRequest(const MemoryManagerState& s, Mask mask, const MemoryRequests& requests) {
  for (const auto& [resource, size] : requests) {
    uint64_t free = 0;
    for (int id : IdsOf(mask)) free += TableOf(s, id, resource).free;
    if (free < size) return false;
  }
  return true;
}

bool ViolatesNumaAllocations(const MemoryManagerState& s, Mask mask) {
  if (Count(mask) == 1) return false;
  for (int id : IdsOf(mask)) {
    auto n = s.machine.find(id);
    if (n == s.machine.end() || n->second.number_of_assignments == 0) continue;
    if (n->second.cells.size() == 1 || !SameGroup(n->second.cells, mask)) return true;
  }
  return false;
}

// The table for `resource` on `numa`, created (zeros) when missing.
MemoryTable& MutableTable(MemoryManagerState& s, int numa, const std::string& resource) {
  return s.machine[numa].memory_map[resource];
}

// kubelet's updateMachineState.
void Take(MemoryManagerState& s, const std::vector<int>& affinity, const std::string& resource,
          uint64_t size) {
  for (int id : affinity) {
    NumaMemoryState& node = s.machine[id];
    ++node.number_of_assignments;
    node.cells = affinity;
    if (size == 0) continue;
    MemoryTable& t = MutableTable(s, id, resource);
    if (t.free == 0) continue;
    const uint64_t got = std::min(t.free, size);
    t.reserved += got;
    t.free -= got;
    size -= got;
  }
}

// kubelet's updatePodReusableMemory.
void UpdateReusable(MemoryManagerState& s, const PodSpec& pod, const ContainerSpec& container,
                    const std::vector<MemoryBlock>& blocks) {
  for (auto it = s.reusable.begin(); it != s.reusable.end();) {
    it = it->first == pod.uid ? std::next(it) : s.reusable.erase(it);
  }
  if (container.init && !container.restartable) {
    auto& pod_map = s.reusable[pod.uid];
    for (const MemoryBlock& b : blocks) {
      uint64_t& r = pod_map[b.numa_affinity][b.type];
      r = std::max(r, b.size);
    }
    return;
  }
  auto p = s.reusable.find(pod.uid);
  if (p == s.reusable.end()) return;
  for (const MemoryBlock& b : blocks) {
    auto m = p->second.find(b.numa_affinity);
    if (m == p->second.end()) continue;
    auto r = m->second.find(b.type);
    if (r == m->second.end() || r->second == 0) continue;
    r->second = b.size >= r->second ? 0 : r->second - b.size;
  }
}

// kubelet's updateInitContainersMemoryBlocks.
void ShrinkInitBlocks(MemoryManagerState& s, const PodSpec& pod, const ContainerSpec& container,
                      const std::vector<MemoryBlock>& blocks) {
  auto pod_it = s.assignments.find(pod.uid);
  for (const MemoryBlock& cb : blocks) {
    uint64_t left = cb.size;
    for (const ContainerSpec& init : pod.init_containers) {
      if (init.name == container.name || left == 0) break;
      if (init.restartable || pod_it == s.assignments.end()) continue;
      auto ib = pod_it->second.find(init.name);
      if (ib == pod_it->second.end()) continue;
      for (MemoryBlock& b : ib->second) {
        if (b.size == 0 || b.type != cb.type || b.numa_affinity != cb.numa_affinity) continue;
        const uint64_t used = std::min(b.size, left);
        b.size -= used;
        left -= used;
      }
    }
  }
}

std::map<std::string, ProviderHints> HintsFor(const MemoryRequests& requests,
                                              const std::vector<TopologyHint>& hints) {
  std::map<std::string, ProviderHints> out;
  for (const auto& [resource, _] : requests) out[resource] = hints;
  return out;
}

// kubelet's regenerateHints.
std::map<std::string, ProviderHints> Regenerate(const std::vector<MemoryBlock>& blocks,
                                                const MemoryRequests& requests) {
  if (blocks.size() != requests.size()) return {};
  std::map<std::string, ProviderHints> out;
  for (const auto& [resource, _] : requests) out[resource] = std::vector<TopologyHint>{};
  for (const MemoryBlock& b : blocks) {
    auto r = requests.find(b.type);
    if (r == requests.end() || r->second != b.size) return {};
    out[b.type]->push_back(TopologyHint{b.numa_affinity, true});
  }
  return out;
}

const std::vector<MemoryBlock>* BlocksOf(const MemoryManagerState& s, const std::string& uid,
                                         const std::string& container) {
  auto p = s.assignments.find(uid);
  if (p == s.assignments.end()) return nullptr;
  auto c = p->second.find(container);
  return c == p->second.end() ? nullptr : &c->second;
}

absl::Status Refuse(std::string_view what) {
  return absl::ResourceExhaustedError(fmt::format("[memorymanager] {}", what));
}

}  // namespace

std::optional<TopologyHint> FindBestMemoryHint(const std::vector<TopologyHint>& hints) {
  const TopologyHint* best = nullptr;
  for (const TopologyHint& h : hints) {
    if (best == nullptr || (h.preferred && !best->preferred) ||
        (h.preferred == best->preferred && Narrower(MaskOf(h.numa_nodes), MaskOf(best->numa_nodes)))) {
      best = &h;
    }
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

bool MemoryManagerPlacesPod(const PodSpec& pod) {
  return QosOf(pod) == QosClass::kGuaranteed && pod.pod_cpu_request_milli == 0 &&
         pod.pod_cpu_limit_milli == 0;
}

MemoryRequests ContainerMemoryRequests(const ContainerSpec& c) {
  MemoryRequests out;
  const int64_t memory = EffectiveRequest(c.memory_request_bytes, c.memory_limit_bytes);
  if (memory > 0 || c.memory_limit_bytes > 0) out[kMemoryResource] = static_cast<uint64_t>(memory);
  for (const auto& [resource, bytes] : c.hugepages_request_bytes) {
    out[resource] = static_cast<uint64_t>(std::max<int64_t>(bytes, 0));
  }
  return out;
}

MemoryRequests PodMemoryRequests(const PodSpec& pod) {
  MemoryRequests init_peak, restartable, apps;
  for (const ContainerSpec& c : pod.init_containers) {
    for (const auto& [resource, size] : ContainerMemoryRequests(c)) {
      init_peak.try_emplace(resource, 0);
      if (c.restartable) {
        restartable[resource] += size;
      } else {
        init_peak[resource] = std::max(init_peak[resource], restartable[resource] + size);
      }
    }
  }
  for (const ContainerSpec& c : pod.containers) {
    for (const auto& [resource, size] : ContainerMemoryRequests(c)) apps[resource] += size;
  }
  MemoryRequests out;
  for (const auto& [resource, size] : apps) {
    out[resource] = std::max(size + restartable[resource], init_peak[resource]);
  }
  return out;
}

MemoryManagerPolicy::MemoryManagerPolicy(const CpuTopology& topo, ReservedMemory reserved)
    : reserved_(std::move(reserved)) {
  for (const NumaNode& n : topo.NumaNodes()) nodes_[n.id] = {n.memory_bytes, n.hugepages};
}

absl::StatusOr<MemoryManagerPolicy> MemoryManagerPolicy::Create(const CpuTopology& topo,
                                                                ReservedMemory reserved,
                                                                bool require_system_reserved) {
  MemoryManagerPolicy p(topo, std::move(reserved));
  if (p.nodes_.size() > 64 || (!p.nodes_.empty() && p.nodes_.rbegin()->first > 63) ||
      (!p.nodes_.empty() && p.nodes_.begin()->first < 0)) {
    return absl::InvalidArgumentError(
        "memory manager: NUMA node ids must lie in 0..63 (Huygens limit)");
  }
  uint64_t total_memory_reserved = 0;
  for (const auto& [numa, resources] : p.reserved_) {
    auto node = p.nodes_.find(numa);
    if (node == p.nodes_.end()) {
      return absl::InvalidArgumentError(fmt::format(
          "reservedMemory: NUMA node {} does not exist on this machine", numa));
    }
    for (const auto& [resource, bytes] : resources) {
      uint64_t total = 0;
      if (resource == kMemoryResource) {
        total = node->second.first;
        total_memory_reserved += bytes;
      } else {
        for (const auto& [page, pages] : node->second.second) {
          if (HugepageResourceName(page) == resource) total = page * pages;
        }
      }
      if (bytes > total) {
        return absl::InvalidArgumentError(fmt::format(
            "reservedMemory[numaNode={}].limits.{}: {} bytes reserved, the NUMA node has {}",
            numa, resource, bytes, total));
      }
    }
  }
  if (require_system_reserved && total_memory_reserved == 0) {
    return absl::InvalidArgumentError(
        "reservedMemory: the Static memory manager policy needs memory reserved for the system "
        "on some NUMA node (kubelet: \"you should specify the system reserved memory\")");
  }
  return p;
}

MemoryManagerState MemoryManagerPolicy::InitialState() const {
  MemoryManagerState s;
  for (const auto& [id, node] : nodes_) {
    NumaMemoryState& ns = s.machine[id];
    ns.cells = {id};
    const int numa = id;  // clang before 16 cannot capture a structured binding
    const auto reserved_of = [&](const std::string& resource) -> uint64_t {
      auto r = reserved_.find(numa);
      if (r == reserved_.end()) return 0;
      auto v = r->second.find(resource);
      return v == r->second.end() ? 0 : v->second;
    };
    uint64_t hugepages_total = 0;
    for (const auto& [page, pages] : node.second) {
      const std::string name = HugepageResourceName(page);
      const uint64_t total = page * pages;
      const uint64_t sys = reserved_of(name);
      const uint64_t allocatable = total >= sys ? total - sys : 0;
      ns.memory_map[name] = {total, sys, allocatable, 0, allocatable};
      hugepages_total += total;
    }
    const uint64_t sys = reserved_of(kMemoryResource);
    const uint64_t taken = sys + hugepages_total;
    const uint64_t allocatable = node.first >= taken ? node.first - taken : 0;
    ns.memory_map[kMemoryResource] = {node.first, sys, allocatable, 0, allocatable};
  }
  return s;
}

std::map<std::string, ProviderHints> MemoryManagerPolicy::CalculateHints(
    const MemoryManagerState& state, const std::string& pod_uid, const MemoryRequests& requests,
    int max_set_size) const {
  const HintSets h = Calculate(state, pod_uid, requests, max_set_size);
  if (h.sets.empty()) return {};
  std::vector<TopologyHint> hints;
  hints.reserve(h.sets.size());
  for (Mask m : h.sets) hints.push_back({IdsOf(m), Count(m) == h.min_affinity_size});
  return HintsFor(requests, hints);
}

std::map<std::string, ProviderHints> MemoryManagerPolicy::ContainerHints(
    const MemoryManagerState& state, const PodSpec& pod, const std::string& container_name,
    int max_set_size) const {
  if (!MemoryManagerPlacesPod(pod)) return {};
  const ContainerSpec* c = FindContainer(pod, container_name);
  if (c == nullptr) return {};
  const MemoryRequests requests = ContainerMemoryRequests(*c);
  if (const auto* blocks = BlocksOf(state, pod.uid, container_name)) {
    return Regenerate(*blocks, requests);
  }
  return CalculateHints(state, pod.uid, requests, max_set_size);
}

std::map<std::string, ProviderHints> MemoryManagerPolicy::PodHints(const MemoryManagerState& state,
                                                                   const PodSpec& pod,
                                                                   int max_set_size) const {
  if (!MemoryManagerPlacesPod(pod)) return {};
  const MemoryRequests requests = PodMemoryRequests(pod);
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const ContainerSpec& c : *list) {
      if (const auto* blocks = BlocksOf(state, pod.uid, c.name)) {
        return Regenerate(*blocks, requests);
      }
    }
  }
  // kubelet computes the pod's hints once, without the reusable memory of init containers.
  return CalculateHints(state, /*pod_uid=*/"", requests, max_set_size);
}

absl::StatusOr<std::vector<MemoryBlock>> MemoryManagerPolicy::Allocate(
    MemoryManagerState& state, const PodSpec& pod, const std::string& container_name,
    const std::optional<TopologyHint>& affinity) const {
  const ContainerSpec* c = FindContainer(pod, container_name);
  if (c == nullptr) {
    return absl::NotFoundError(fmt::format("[memorymanager] pod {} has no container {:?}",
                                           pod.uid, container_name));
  }
  if (!MemoryManagerPlacesPod(pod)) return std::vector<MemoryBlock>{};
  if (const auto* blocks = BlocksOf(state, pod.uid, container_name)) {
    std::vector<MemoryBlock> existing = *blocks;
    UpdateReusable(state, pod, *c, existing);
    return existing;
  }
  const MemoryRequests requests = ContainerMemoryRequests(*c);
  const TopologyHint given = affinity.value_or(TopologyHint{});
  TopologyHint best = given;
  // The sets are computed lazily: most calls come with a hint that satisfies the request.
  std::optional<HintSets> sets;
  const auto all_sets = [&]() -> const HintSets& {
    if (!sets) sets = Calculate(state, pod.uid, requests, 64);
    return *sets;
  };
  if (given.numa_nodes.empty()) {
    std::optional<TopologyHint> def = BestHint(all_sets(), 0);
    if (!def) {
      return Refuse(
          "failed to get the default NUMA affinity, no NUMA nodes with enough memory is "
          "available");
    }
    if (!def->preferred && given.preferred) return Refuse("failed to find the default preferred hint");
    best = *def;
  }
  Mask mask = MaskOf(best.numa_nodes);
  if (!SatisfiesRequest(state, mask, requests)) {
    std::optional<TopologyHint> ext = BestHint(all_sets(), mask);
    if (!ext) return Refuse("failed to find NUMA nodes to extend the current topology hint");
    if (!ext->preferred && best.preferred) {
      return Refuse("failed to find the extended preferred hint");
    }
    best = *ext;
    mask = MaskOf(best.numa_nodes);
  }
  if (ViolatesNumaAllocations(state, mask)) {
    return Refuse("preferred hint violates NUMA node allocation");
  }
  const std::vector<int> bits = IdsOf(mask);
  std::vector<MemoryBlock> blocks;
  for (const auto& [resource, size] : requests) {
    blocks.push_back({bits, resource, size});
    const uint64_t reusable = Reusable(state, pod.uid, mask, resource);
    Take(state, bits, resource, reusable >= size ? 0 : size - reusable);
  }
  UpdateReusable(state, pod, *c, blocks);
  state.assignments[pod.uid][container_name] = blocks;
  ShrinkInitBlocks(state, pod, *c, blocks);
  return blocks;
}

void MemoryManagerPolicy::Restore(MemoryManagerState& state, const std::string& pod_uid,
                                  const std::string& container_name,
                                  std::vector<MemoryBlock> blocks) const {
  RemoveContainer(state, pod_uid, container_name);
  std::vector<MemoryBlock> kept;
  for (MemoryBlock& b : blocks) {
    const bool known = !b.numa_affinity.empty() &&
                       std::all_of(b.numa_affinity.begin(), b.numa_affinity.end(),
                                   [&](int id) { return state.machine.contains(id); });
    if (!known) continue;
    Take(state, b.numa_affinity, b.type, b.size);
    kept.push_back(std::move(b));
  }
  if (!kept.empty()) state.assignments[pod_uid][container_name] = std::move(kept);
}

void MemoryManagerPolicy::RemoveContainer(MemoryManagerState& state, const std::string& pod_uid,
                                          const std::string& container_name) const {
  auto p = state.assignments.find(pod_uid);
  if (p == state.assignments.end()) return;
  auto c = p->second.find(container_name);
  if (c == p->second.end()) return;
  const std::vector<MemoryBlock> blocks = std::move(c->second);
  p->second.erase(c);
  if (p->second.empty()) state.assignments.erase(p);
  for (const MemoryBlock& b : blocks) {
    uint64_t released = b.size;
    for (int id : b.numa_affinity) {
      NumaMemoryState& node = state.machine[id];
      --node.number_of_assignments;
      if (node.number_of_assignments == 0) node.cells = {id};
      if (released == 0) continue;
      MemoryTable& t = MutableTable(state, id, b.type);
      if (t.reserved == 0) continue;
      const uint64_t back = std::min(t.reserved, released);
      t.free += back;
      t.reserved -= back;
      released -= back;
    }
  }
}

std::vector<int> MemoryManagerPolicy::MemoryNumaNodes(const MemoryManagerState& state,
                                                      const std::string& pod_uid,
                                                      const std::string& container_name) {
  Mask m = 0;
  if (const auto* blocks = BlocksOf(state, pod_uid, container_name)) {
    for (const MemoryBlock& b : *blocks) m |= MaskOf(b.numa_affinity);
  }
  return IdsOf(m);
}

}  // namespace huygens
