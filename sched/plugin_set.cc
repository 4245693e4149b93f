#include "sched/plugin_set.h"

#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "sched/plugins.h"

namespace huygens::sched {

absl::StatusOr<PluginSet> PluginSet::Create(const Profile& p, ClusterCache* cache) {
  PluginSet set;
  absl::flat_hash_map<std::string, Plugin*> by_name;
  auto get = [&](const std::string& name) -> absl::StatusOr<Plugin*> {
    auto it = by_name.find(name);
    if (it != by_name.end()) return it->second;
    absl::StatusOr<std::unique_ptr<Plugin>> made = NewPlugin(name, p, cache);
    if (!made.ok()) return made.status();
    Plugin* raw = made->get();
    raw->set_slot(static_cast<int>(set.owned.size()));
    set.owned.push_back(*std::move(made));
    by_name.emplace(name, raw);
    if (auto* pf = dynamic_cast<PreFilterPlugin*>(raw)) set.pre_filters.push_back(pf);
    if (auto* pf = dynamic_cast<PostFilterPlugin*>(raw)) set.post_filters.push_back(pf);
    return raw;
  };
  auto wrong_point = [&](const std::string& name, std::string_view point) {
    return absl::InvalidArgumentError(fmt::format("profile {:?}: plugin {:?} has no {} point",
                                                  p.scheduler_name, name, point));
  };
  for (const std::string& name : p.pre_filters) {
    absl::StatusOr<Plugin*> plugin = get(name);
    if (!plugin.ok()) return plugin.status();
    if (dynamic_cast<PreFilterPlugin*>(*plugin) == nullptr) return wrong_point(name, "PreFilter");
  }
  for (const std::string& name : p.filters) {
    absl::StatusOr<Plugin*> plugin = get(name);
    if (!plugin.ok()) return plugin.status();
    auto* f = dynamic_cast<FilterPlugin*>(*plugin);
    if (f == nullptr) return wrong_point(name, "Filter");
    set.filters.push_back(f);
  }
  for (const WeightedPlugin& w : p.scores) {
    absl::StatusOr<Plugin*> plugin = get(w.name);
    if (!plugin.ok()) return plugin.status();
    auto* sp = dynamic_cast<ScorePlugin*>(*plugin);
    if (sp == nullptr) return wrong_point(w.name, "Score");
    if (auto* ps = dynamic_cast<PreScorePlugin*>(*plugin)) set.pre_scores.push_back(ps);
    set.scores.emplace_back(sp, w.weight);
  }
  for (const std::string& name : p.reserves) {
    absl::StatusOr<Plugin*> plugin = get(name);
    if (!plugin.ok()) return plugin.status();
    auto* r = dynamic_cast<ReservePlugin*>(*plugin);
    if (r == nullptr) return wrong_point(name, "Reserve");
    set.reserves.push_back(r);
  }
  return set;
}

std::string PluginSet::ErrorMessage(const Plugin& plugin, const Status& status) {
  return fmt::format("{}: {}", plugin.Name(), status.Message());
}

std::string PluginSet::ErrorMessage(const Plugin& plugin, const NodeInfo& node,
                                    const Status& status) {
  return fmt::format("{} on node {:?}: {}", plugin.Name(), node.node.name, status.Message());
}

}  // namespace huygens::sched
