#include "sched/numa_view.h"

#include <algorithm>
#include <functional>

namespace huygens::sched {

NumaView::NumaView(const NodeState& state, BindPolicy bind) : bind_(bind) {
  tpc_ = std::max(1, state.Topology().CpusPerCore());
  const std::map<int, double>& capacity = state.Config().capacity;
  for (const NumaCounters& c : state.Counters()) {
    if (c.user_cpus <= 0) continue;
    double factor = 1.0;
    if (!capacity.empty()) {
      auto it = capacity.find(c.numa);
      if (it != capacity.end()) factor = it->second;
    }
    Add(c.numa, c.user_cpus, c.free_cpus, c.free_cores, c.unshared_threads, factor);
  }
}

NumaView::NumaView(const NodeInfo& node, BindPolicy bind) : bind_(bind) {
  const NodeSummary& s = node.summary;
  if (!s.numa_inline) {
    *this = NumaView(*node.cpu_state, bind);
    return;
  }
  tpc_ = s.threads_per_core;
  for (int i = 0; i < s.num_numa; ++i) {
    const NodeSummary::Numa& n = s.numa[i];
    Add(n.numa, n.user, n.free, n.free_cores, n.unshared_threads, 1.0);
  }
}

void NumaView::Add(int numa, int user, int free, int free_cores, int unshared, double factor) {
  if (size_ == kMaxNuma) return;
  Figures& f = figures_[static_cast<size_t>(size_)];
  f.numa = numa;
  f.user = user;
  f.free = free;
  f.free_cores = free_cores;
  f.unshared = unshared;
  factor_[static_cast<size_t>(size_)] = factor;
  ++size_;
  Recompute(f);
}

void NumaView::Recompute(Figures& f) const {
  f.offer = NumaOfferFromCounts(bind_, tpc_, f.free, f.free_cores,
                                factor_[static_cast<size_t>(&f - figures_.data())]);
}

int NumaView::TotalFree() const {
  int sum = 0;
  for (int i = 0; i < size_; ++i) sum += figures_[static_cast<size_t>(i)].free;
  return sum;
}

int NumaView::TotalFreeCores() const {
  int sum = 0;
  for (int i = 0; i < size_; ++i) sum += figures_[static_cast<size_t>(i)].free_cores;
  return sum;
}

int NumaView::TopSum(int Figures::*field, int k) const {
  std::array<int, kMaxNuma> values;
  for (int i = 0; i < size_; ++i) values[static_cast<size_t>(i)] = figures_[static_cast<size_t>(i)].*field;
  const int n = std::min(k, size_);
  std::partial_sort(values.begin(), values.begin() + n, values.begin() + size_,
                    std::greater<int>());
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += values[static_cast<size_t>(i)];
  return sum;
}

int NumaView::PreferredSize(int cpus) const {
  std::array<int, kMaxNuma> user;
  for (int i = 0; i < size_; ++i) user[static_cast<size_t>(i)] = figures_[static_cast<size_t>(i)].user;
  return PreferredNumaCount(std::span<const int>(user.data(), static_cast<size_t>(size_)), cpus);
}

bool NumaView::KubeletAdmits(TopologyPolicy policy, int cpus) const {
  if (cpus <= 0) return true;
  switch (policy) {
    case TopologyPolicy::kNone:
    case TopologyPolicy::kBestEffort: return true;
    case TopologyPolicy::kSingleNumaNode: return TopSum(&Figures::free, 1) >= cpus;
    case TopologyPolicy::kRestricted:
      return TopSum(&Figures::free, PreferredSize(cpus)) >= cpus;
  }
  return true;
}

int NumaView::NodesNeeded(TopologyPolicy policy, int cpus) const {
  if (cpus <= 0) return 0;
  switch (policy) {
    case TopologyPolicy::kSingleNumaNode: return TopSum(&Figures::offer, 1) >= cpus ? 1 : 0;
    case TopologyPolicy::kRestricted: {
      const int k = PreferredSize(cpus);
      return TopSum(&Figures::offer, k) >= cpus ? k : 0;
    }
    case TopologyPolicy::kNone:
    case TopologyPolicy::kBestEffort:
      for (int k = 1; k <= size_; ++k) {
        if (TopSum(&Figures::offer, k) >= cpus) return k;
      }
      return 0;
  }
  return 0;
}

bool NumaView::AllocatorFits(TopologyPolicy policy, int cpus) const {
  return cpus <= 0 || NodesNeeded(policy, cpus) > 0;
}

void NumaView::Choose(TopologyPolicy policy, NumaStrategy strategy, int cpus,
                      std::vector<int>& out) const {
  out.clear();
  const int k = NodesNeeded(policy, cpus);
  if (k == 0) return;
  if (k == 1) {
    // The allocator's order among single nodes: waste (alloc/waste.h's Rank), then the
    // strategy's best fit.
    const bool packing = strategy != NumaStrategy::kLeastAllocated;
    int best = -1;
    std::pair<int, int> best_rank;
    for (int i = 0; i < size_; ++i) {
      const Figures& f = figures_[static_cast<size_t>(i)];
      if (f.offer < cpus) continue;
      const auto rank = Rank(ShareWaste(bind_, tpc_, f.free, f.free_cores, cpus, f.unshared), packing);
      bool better = best < 0 || rank < best_rank;
      if (best >= 0 && rank == best_rank) {
        const int best_offer = figures_[static_cast<size_t>(best)].offer;
        better = packing ? f.offer < best_offer : f.offer > best_offer;
      }
      if (better) {
        best = i;
        best_rank = rank;
      }
    }
    out.push_back(best);
    return;
  }
  for (int i = 0; i < size_; ++i) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    return figures_[static_cast<size_t>(a)].offer > figures_[static_cast<size_t>(b)].offer;
  });
  out.resize(static_cast<size_t>(k));
}

std::array<int, NumaView::kMaxNuma> NumaView::Split(std::span<const int> chosen,
                                                    int cpus) const {
  std::array<int, kMaxNuma> offers{}, whole{}, shares{};
  const size_t n = std::min(chosen.size(), static_cast<size_t>(kMaxNuma));
  for (size_t k = 0; k < n; ++k) {
    const Figures& f = figures_[static_cast<size_t>(chosen[k])];
    offers[k] = f.offer;
    whole[k] = UnsharedCapacity(bind_, tpc_, f.offer, f.free_cores, f.unshared);
  }
  SplitShares(std::span<const int>(offers.data(), n), std::span<const int>(whole.data(), n), cpus,
              std::span<int>(shares.data(), n));
  return shares;
}

Waste NumaView::WasteOf(std::span<const int> chosen, int cpus) const {
  Waste waste;
  const std::array<int, kMaxNuma> shares = Split(chosen, cpus);
  for (size_t k = 0; k < chosen.size() && k < shares.size(); ++k) {
    const Figures& f = figures_[static_cast<size_t>(chosen[k])];
    waste += ShareWaste(bind_, tpc_, f.free, f.free_cores, shares[k], f.unshared);
  }
  return waste;
}

void NumaView::Place(TopologyPolicy policy, NumaStrategy strategy, int cpus) {
  std::vector<int> chosen;
  Choose(policy, strategy, cpus, chosen);
  const std::array<int, kMaxNuma> shares = Split(chosen, cpus);
  for (size_t k = 0; k < chosen.size() && k < shares.size(); ++k) {
    Figures& f = figures_[static_cast<size_t>(chosen[k])];
    const int take = shares[k];
    f.free -= take;
    // Whole cores go first under packed and full-cores; spread-cores takes one thread of a
    // whole free core while there are any.
    const int cores = bind_ == BindPolicy::kSpreadCores ? take : take / tpc_;
    // Packed fills the unshared threads with what whole cores leave over.
    if (bind_ == BindPolicy::kPacked) {
      f.unshared = std::max(0, f.unshared - (take - tpc_ * std::min(cores, f.free_cores)));
      f.unshared = std::min(f.unshared, f.free);
    }
    f.free_cores = std::max(0, std::min(f.free_cores - cores, f.free / tpc_));
    Recompute(f);
  }
}

int NumaView::OfferWithin(TopologyPolicy policy, const std::vector<int>& set, int cpus) const {
  std::vector<int> offers;
  for (int i = 0; i < size_; ++i) {
    if (std::find(set.begin(), set.end(), at(i).numa) != set.end()) offers.push_back(at(i).offer);
  }
  std::sort(offers.rbegin(), offers.rend());
  if (policy == TopologyPolicy::kRestricted) {
    const int preferred = PreferredSize(cpus);
    if (static_cast<int>(offers.size()) < preferred) return 0;
    offers.resize(static_cast<size_t>(preferred));
  }
  int sum = 0;
  for (int o : offers) sum += o;
  return sum;
}

}  // namespace huygens::sched
