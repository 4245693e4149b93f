#include "sim/cpu_ledger.h"

#include <algorithm>
#include <map>
#include <utility>

#include "fmt/format.h"

namespace huygens::sim {

LedgerShape::LedgerShape(std::shared_ptr<const CpuTopology> topo) : topology(std::move(topo)) {
  const int size = topology->AllCpus().Empty() ? 0 : topology->AllCpus().Max() + 1;
  core_of.assign(static_cast<size_t>(size), -1);
  numa_of.assign(static_cast<size_t>(size), -1);
  std::map<int, int> dense;  // core id -> dense index
  for (int core : topology->CoreIds()) {
    const int index = static_cast<int>(cores.size());
    dense[core] = index;
    cores.push_back(topology->CpusInCore(core).ToVector());
    for (int cpu : cores.back()) core_of[static_cast<size_t>(cpu)] = index;
  }
  const auto& nodes = topology->NumaNodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int cpu : nodes[i].cpus) numa_of[static_cast<size_t>(cpu)] = static_cast<int>(i);
  }
}

CpuLedger::CpuLedger(std::shared_ptr<const LedgerShape> shape, const CpuSet& user_pool)
    : shape_(std::move(shape)), user_pool_(user_pool) {
  owner_.assign(shape_->core_of.size(), -1);
  free_per_numa_.assign(shape_->topology->NumaNodes().size(), 0);
  for (int cpu : user_pool_) {
    const int numa = shape_->numa_of[static_cast<size_t>(cpu)];
    if (numa >= 0) ++free_per_numa_[static_cast<size_t>(numa)];
  }
  user_per_numa_ = free_per_numa_;
  user_numa_nodes_ = static_cast<int>(
      std::count_if(user_per_numa_.begin(), user_per_numa_.end(), [](int n) { return n > 0; }));
  user_cpus_ = user_pool_.Size();
  for (size_t i = 0; i < free_per_numa_.size(); ++i) fragmented_ += FragmentOf(static_cast<int>(i));
}

int CpuLedger::Owner(int cpu) const {
  if (cpu < 0 || static_cast<size_t>(cpu) >= owner_.size()) return -1;
  return owner_[static_cast<size_t>(cpu)];
}

bool CpuLedger::CoreShared(int core) const {
  int first = -1;
  for (int cpu : shape_->cores[static_cast<size_t>(core)]) {
    const int o = owner_[static_cast<size_t>(cpu)];
    if (o < 0) continue;
    if (first < 0) {
      first = o;
    } else if (o != first) {
      return true;
    }
  }
  return false;
}

int CpuLedger::FragmentOf(int numa_index) const {
  const int free = free_per_numa_[static_cast<size_t>(numa_index)];
  return StrandedCpus(free);
}

int CpuLedger::NumaLoadSpread() const {
  int most = 0, fewest = 0;
  bool first = true;
  for (size_t i = 0; i < user_per_numa_.size(); ++i) {
    if (user_per_numa_[i] == 0) continue;
    const int held = user_per_numa_[i] - free_per_numa_[i];
    most = first ? held : std::max(most, held);
    fewest = first ? held : std::min(fewest, held);
    first = false;
  }
  return most - fewest;
}

absl::Status CpuLedger::Take(int pod, const CpuSet& cpus) {
  if (!cpus.IsSubsetOf(user_pool_)) {
    return absl::FailedPreconditionError(
        fmt::format("pod {} takes CPUs {} outside the user pool", pod,
                    cpus.Difference(user_pool_).ToString()));
  }
  for (int cpu : cpus) {
    const int o = owner_[static_cast<size_t>(cpu)];
    if (o >= 0 && o != pod) {
      return absl::FailedPreconditionError(
          fmt::format("pod {} takes CPU {}, held by pod {}", pod, cpu, o));
    }
  }
  for (int cpu : cpus) {
    if (owner_[static_cast<size_t>(cpu)] == pod) continue;
    const int core = shape_->core_of[static_cast<size_t>(cpu)];
    const int numa = shape_->numa_of[static_cast<size_t>(cpu)];
    const bool was_shared = CoreShared(core);
    fragmented_ -= FragmentOf(numa);
    owner_[static_cast<size_t>(cpu)] = pod;
    --free_per_numa_[static_cast<size_t>(numa)];
    ++held_;
    fragmented_ += FragmentOf(numa);
    shared_cores_ += (CoreShared(core) ? 1 : 0) - (was_shared ? 1 : 0);
  }
  return absl::OkStatus();
}

void CpuLedger::Release(int pod, const CpuSet& cpus) {
  for (int cpu : cpus) {
    if (Owner(cpu) != pod) continue;
    const int core = shape_->core_of[static_cast<size_t>(cpu)];
    const int numa = shape_->numa_of[static_cast<size_t>(cpu)];
    const bool was_shared = CoreShared(core);
    fragmented_ -= FragmentOf(numa);
    owner_[static_cast<size_t>(cpu)] = -1;
    ++free_per_numa_[static_cast<size_t>(numa)];
    --held_;
    fragmented_ += FragmentOf(numa);
    shared_cores_ += (CoreShared(core) ? 1 : 0) - (was_shared ? 1 : 0);
  }
}

}  // namespace huygens::sim
