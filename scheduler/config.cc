#include "scheduler/config.h"

#include <cerrno>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "fmt/format.h"
#include "base/config_kind.h"
#include "base/yaml_reader.h"
#include "base/status.h"

namespace huygens::scheduler {

namespace {


absl::StatusOr<std::chrono::milliseconds> Millis(const YamlReader& r, const YAML::Node& node,
                                                 const std::string& field) {
  int64_t micros = 0;
  HUYGENS_ASSIGN_OR_RETURN(micros, r.Duration(node, field));
  if (micros <= 0) return r.Error(node, field, "must be positive");
  return std::chrono::milliseconds(micros / 1000);
}

absl::StatusOr<ProfileConfig> ParseProfile(const YamlReader& r, const YAML::Node& node,
                                           const std::string& field,
                                           const std::string& default_name) {
  HUYGENS_RETURN_IF_ERROR(r.CheckMap(node, field,
                                     {"schedulerName", "pluginWeights", "percentageOfNodesToScore",
                                      "defaultTopologyPolicy", "defaultBindPolicy"}));
  ProfileConfig p;
  p.profile = sched::HuygensProfile();
  p.scheduler_name = default_name;
  if (auto v = node["schedulerName"]) {
    HUYGENS_ASSIGN_OR_RETURN(p.scheduler_name, r.String(v, field + ".schedulerName"));
    if (p.scheduler_name.empty()) return r.Error(v, field + ".schedulerName", "must not be empty");
  }
  p.profile.scheduler_name = p.scheduler_name;
  if (auto v = node["pluginWeights"]) {
    std::string wfield = field + ".pluginWeights";
    if (!v.IsMap()) return r.Error(v, wfield, "expected a map of score plugin name to weight");
    for (const auto& kv : v) {
      std::string name = kv.first.Scalar();
      std::string f = wfield + "." + name;
      int64_t weight = 0;
      HUYGENS_ASSIGN_OR_RETURN(weight, r.Int(kv.second, f, 0, 100));
      auto it = std::find_if(p.profile.scores.begin(), p.profile.scores.end(),
                             [&](const sched::WeightedPlugin& w) { return w.name == name; });
      const bool optional = std::find(std::begin(sched::kOptionalScorePlugins), std::end(sched::kOptionalScorePlugins),
                                      name) != std::end(sched::kOptionalScorePlugins);
      if (it == p.profile.scores.end() && optional) {
        if (weight > 0) p.profile.scores.push_back({name, weight});
        continue;
      }
      if (it == p.profile.scores.end()) {
        std::string known;
        for (const auto& w : p.profile.scores) known += (known.empty() ? "" : ", ") + w.name;
        for (const char* o : sched::kOptionalScorePlugins) known += fmt::format(", {}", o);
        return r.Error(kv.first, f, fmt::format("unknown score plugin (known: {})", known));
      }
      if (weight == 0) {
        p.profile.scores.erase(it);
      } else {
        it->weight = weight;
      }
    }
  }
  if (auto v = node["percentageOfNodesToScore"]) {
    int64_t pct = 0;
    HUYGENS_ASSIGN_OR_RETURN(pct, r.Int(v, field + ".percentageOfNodesToScore", 0, 100));
    p.profile.percentage_of_nodes_to_score = static_cast<int>(pct);
  }
  if (auto v = node["defaultTopologyPolicy"]) {
    std::string s;
    HUYGENS_ASSIGN_OR_RETURN(s, r.String(v, field + ".defaultTopologyPolicy"));
    p.default_topology_policy = ParseTopologyPolicy(s);
    if (!p.default_topology_policy) {
      return r.Error(v, field + ".defaultTopologyPolicy",
                     fmt::format("{:?} is not one of none, best-effort, restricted, "
                                 "single-numa-node",
                                 s));
    }
  }
  if (auto v = node["defaultBindPolicy"]) {
    std::string s;
    HUYGENS_ASSIGN_OR_RETURN(s, r.String(v, field + ".defaultBindPolicy"));
    p.default_bind_policy = ParseBindPolicy(s);
    if (!p.default_bind_policy) {
      return r.Error(v, field + ".defaultBindPolicy",
                     fmt::format("{:?} is not one of packed, full-cores, spread-cores", s));
    }
  }
  return p;
}

absl::Status ParseLeaderElection(const YamlReader& r, const YAML::Node& node,
                                 LeaderElectionSettings& le) {
  const std::string field = "leaderElection";
  HUYGENS_RETURN_IF_ERROR(r.CheckMap(node, field,
                                     {"leaderElect", "resourceName", "resourceNamespace",
                                      "leaseDuration", "renewDeadline", "retryPeriod"}));
  if (auto v = node["leaderElect"]) {
    HUYGENS_ASSIGN_OR_RETURN(le.leader_elect, r.Bool(v, field + ".leaderElect"));
  }
  if (auto v = node["resourceName"]) {
    HUYGENS_ASSIGN_OR_RETURN(le.resource_name, r.String(v, field + ".resourceName"));
  }
  if (auto v = node["resourceNamespace"]) {
    HUYGENS_ASSIGN_OR_RETURN(le.resource_namespace, r.String(v, field + ".resourceNamespace"));
  }
  if (auto v = node["leaseDuration"]) {
    HUYGENS_ASSIGN_OR_RETURN(le.lease_duration, Millis(r, v, field + ".leaseDuration"));
  }
  if (auto v = node["renewDeadline"]) {
    HUYGENS_ASSIGN_OR_RETURN(le.renew_deadline, Millis(r, v, field + ".renewDeadline"));
  }
  if (auto v = node["retryPeriod"]) {
    HUYGENS_ASSIGN_OR_RETURN(le.retry_period, Millis(r, v, field + ".retryPeriod"));
  }
  if (le.resource_name.empty() || le.resource_namespace.empty()) {
    return r.Error(node, field, "resourceName and resourceNamespace must not be empty");
  }
  if (le.renew_deadline + le.retry_period >= le.lease_duration) {
    return r.Error(node, field,
                   "renewDeadline + retryPeriod must be shorter than leaseDuration (else a "
                   "leader that cannot renew may still act when another takes over)");
  }
  return absl::OkStatus();
}

}  // namespace

const char kSchedulerConfigReference[] = R"(apiVersion: huygens.io/v1alpha1  # optional; when present, exactly this
kind: SchedulerConfiguration     # optional; when present, exactly this
schedulerName: huygens-scheduler # pods with this spec.schedulerName are scheduled (no profiles)
profiles:                        # default: one profile named schedulerName; one per name
- schedulerName: huygens-scheduler   # default: the top-level schedulerName
  # Score plugin weights 0-100 (0 removes the plugin); these are the defaults. A weight for
  # NodeResourcesBalancedAllocation adds it (kube-scheduler's default profile has it at 1; with
  # it, raise NumaScore to 16 so that NumaScore's tiers still decide first).
  pluginWeights: {NodeResourcesFit: 1, NodeAffinity: 2, TaintToleration: 3, PodTopologySpread: 2, InterPodAffinity: 2, ImageLocality: 1, NumaScore: 12, SmtScore: 1}
  percentageOfNodesToScore: 0    # kube-scheduler's: nodes scored per pod, in %; 0 = adaptive
  defaultTopologyPolicy: single-numa-node  # pods without huygens.io/topology-policy; default: the node's
  defaultBindPolicy: full-cores  # pods without huygens.io/bind-policy (packed, full-cores,
                                 # spread-cores); default: the node's
numaStrategy: most-allocated     # NUMA node choice: most-allocated (pack), least-allocated, nearest
systemPoolNamespaces: [kube-system]  # pods here run in the system pool, never exclusive
leaderElection:                  # kube-scheduler's names and defaults
  leaderElect: true              # false: a single instance schedules without a Lease
  resourceName: huygens-scheduler   # the Lease
  resourceNamespace: kube-system
  leaseDuration: 15s
  renewDeadline: 10s             # renewDeadline + retryPeriod must be below leaseDuration
  retryPeriod: 2s
clientConnection: {qps: 50, burst: 100}  # client-side rate limit of API requests
metricsAddress: 0.0.0.0:10251    # /metrics, /healthz, /readyz (--metrics-address overrides;
                                 # --bind-address replaces the host)
extender:                        # kube-scheduler's HTTP extender protocol instead of a queue
  enabled: false
  address: 0.0.0.0:8888          # (--bind-address replaces the host)
  maxRequestBytes: 4Mi           # larger request bodies get 413 (64Ki to 1Gi); with
                                 # nodeCacheCapable: false allow some 20Ki per node
  # tls:                           # HTTPS, and only kube-scheduler's client certificate; default none
  #   certFile: /etc/huygens/tls/tls.crt        # the extender's certificate (PEM)
  #   keyFile: /etc/huygens/tls/tls.key         # its key
  #   clientCAFile: /etc/huygens/tls/ca.crt     # the CA of accepted client certificates
  #   allowedClientNames: [system:kube-scheduler]  # their common names; default any
rebalancer:                      # moves running pods' CPUs (standalone mode, while leading)
  enabled: true                  # groups: huygens.io/affinity-group; opt out: huygens.io/rebalance "false"
  interval: 30s                  # each node is planned once per interval
  maxMovesPerNode: 1             # pods moved per node per interval
  balance: false                 # also even the exclusive load over each node's NUMA nodes
  observedMinBytesPerSecond: 1000000  # pods talking this much (huygens.io/pod-traffic) form a group; 0: off
agentHeartbeatTimeout: 3m        # a node whose agent's heartbeat stopped this long ago takes no
                                 # exclusive pods until it beats again; 0: never judged
)";

absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml,
                                                     const std::string& file_name) {
  YamlReader r(file_name);
  YAML::Node root;
  HUYGENS_ASSIGN_OR_RETURN(root, r.Load(yaml));
  SchedulerConfig c;
  if (!root || root.IsNull()) return c;
  HUYGENS_RETURN_IF_ERROR(r.CheckMap(root, "(top level)",
                                     {"apiVersion", "kind", "schedulerName", "profiles",
                                      "numaStrategy", "systemPoolNamespaces", "leaderElection",
                                      "clientConnection", "metricsAddress", "extender",
                                      "rebalancer", "agentHeartbeatTimeout"}));
  if (auto problem = CheckConfigKind(root, kSchedulerConfigurationKind)) {
    return r.Error(root[problem->field], problem->field, problem->message);
  }
  if (auto v = root["schedulerName"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.scheduler_name, r.String(v, "schedulerName"));
    if (c.scheduler_name.empty()) return r.Error(v, "schedulerName", "must not be empty");
  }
  if (auto v = root["profiles"]) {
    HUYGENS_RETURN_IF_ERROR(r.CheckSequence(v, "profiles"));
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string field = fmt::format("profiles[{}]", i);
      ProfileConfig p;
      HUYGENS_ASSIGN_OR_RETURN(p, ParseProfile(r, v[i], field, c.scheduler_name));
      for (const ProfileConfig& other : c.profiles) {
        if (other.scheduler_name == p.scheduler_name) {
          return r.Error(v[i], field + ".schedulerName",
                         fmt::format("{:?} is used by two profiles", p.scheduler_name));
        }
      }
      c.profiles.push_back(std::move(p));
    }
  }
  if (auto v = root["numaStrategy"]) {
    std::string s;
    HUYGENS_ASSIGN_OR_RETURN(s, r.String(v, "numaStrategy"));
    auto strategy = ParseNumaStrategy(s);
    if (!strategy) {
      return r.Error(v, "numaStrategy",
                     fmt::format("{:?} is not one of most-allocated, least-allocated, nearest", s));
    }
    c.numa_strategy = *strategy;
  }
  if (auto v = root["systemPoolNamespaces"]) {
    HUYGENS_RETURN_IF_ERROR(r.CheckSequence(v, "systemPoolNamespaces"));
    c.system_pool_namespaces.clear();
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string ns;
      HUYGENS_ASSIGN_OR_RETURN(ns, r.String(v[i], fmt::format("systemPoolNamespaces[{}]", i)));
      c.system_pool_namespaces.push_back(std::move(ns));
    }
  }
  if (auto v = root["leaderElection"]) {
    HUYGENS_RETURN_IF_ERROR(ParseLeaderElection(r, v, c.leader_election));
  }
  if (auto v = root["clientConnection"]) {
    HUYGENS_RETURN_IF_ERROR(r.CheckMap(v, "clientConnection", {"qps", "burst"}));
    if (auto q = v["qps"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.qps, r.Number(q, "clientConnection.qps", 0));
  }
    if (auto b = v["burst"]) {
      int64_t burst = 0;
      HUYGENS_ASSIGN_OR_RETURN(burst, r.Int(b, "clientConnection.burst", 1, 100000));
      c.burst = static_cast<int>(burst);
    }
  }
  if (auto v = root["metricsAddress"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.metrics_address, r.String(v, "metricsAddress"));
  }
  if (auto v = root["agentHeartbeatTimeout"]) {
    int64_t micros = 0;
    HUYGENS_ASSIGN_OR_RETURN(micros, r.Duration(v, "agentHeartbeatTimeout"));
    if (micros < 0) return r.Error(v, "agentHeartbeatTimeout", "must not be negative");
    c.agent_heartbeat_timeout = std::chrono::milliseconds(micros / 1000);
  }
  if (auto v = root["rebalancer"]) {
    HUYGENS_RETURN_IF_ERROR(
        r.CheckMap(v, "rebalancer", {"enabled", "interval", "maxMovesPerNode", "balance",
                                     "observedMinBytesPerSecond"}));
    if (auto e = v["enabled"]) {
      HUYGENS_ASSIGN_OR_RETURN(c.rebalancer.enabled, r.Bool(e, "rebalancer.enabled"));
    }
    if (auto i = v["interval"]) {
      HUYGENS_ASSIGN_OR_RETURN(c.rebalancer.interval, Millis(r, i, "rebalancer.interval"));
    }
    if (auto m = v["maxMovesPerNode"]) {
      int64_t moves = 0;
      HUYGENS_ASSIGN_OR_RETURN(moves, r.Int(m, "rebalancer.maxMovesPerNode", 1, 64));
      c.rebalancer.max_moves_per_node = static_cast<int>(moves);
    }
    if (auto b = v["balance"]) {
      HUYGENS_ASSIGN_OR_RETURN(c.rebalancer.balance, r.Bool(b, "rebalancer.balance"));
    }
    if (auto o = v["observedMinBytesPerSecond"]) {
      HUYGENS_ASSIGN_OR_RETURN(c.rebalancer.observed_min_bytes_per_second,
                               r.Int(o, "rebalancer.observedMinBytesPerSecond", 0,
                                     int64_t{1} << 50));
    }
  }
  if (auto v = root["extender"]) {
    HUYGENS_RETURN_IF_ERROR(r.CheckMap(v, "extender", {"enabled", "address", "maxRequestBytes", "tls"}));
    if (auto e = v["enabled"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.extender_enabled, r.Bool(e, "extender.enabled"));
  }
    if (auto a = v["address"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.extender_address, r.String(a, "extender.address"));
  }
    if (auto m = v["maxRequestBytes"]) {
      int64_t bytes = 0;
      HUYGENS_ASSIGN_OR_RETURN(bytes, r.Memory(m, "extender.maxRequestBytes"));
      if (bytes < 64 * 1024 || bytes > (int64_t{1} << 30)) {
        return r.Error(m, "extender.maxRequestBytes", "must be from 64Ki to 1Gi");
      }
      c.extender_max_request_bytes = static_cast<std::size_t>(bytes);
    }
    if (auto t = v["tls"]) {
      HUYGENS_RETURN_IF_ERROR(
          r.CheckMap(t, "extender.tls", {"certFile", "keyFile", "clientCAFile", "allowedClientNames"}));
      serving::TlsOptions tls;
      for (auto [key, out] : {std::pair{"certFile", &tls.cert_file}, std::pair{"keyFile", &tls.key_file},
                              std::pair{"clientCAFile", &tls.client_ca_file}}) {
        if (auto f = t[key]) {
          HUYGENS_ASSIGN_OR_RETURN(*out, r.String(f, fmt::format("extender.tls.{}", key)));
        }
      }
      if (tls.cert_file.empty() || tls.key_file.empty()) {
        return r.Error(t, "extender.tls", "certFile and keyFile are both required");
      }
      if (auto names = t["allowedClientNames"]) {
        HUYGENS_RETURN_IF_ERROR(r.CheckSequence(names, "extender.tls.allowedClientNames"));
        if (tls.client_ca_file.empty()) {
          return r.Error(names, "extender.tls.allowedClientNames", "needs clientCAFile (names of verified clients)");
        }
        for (std::size_t i = 0; i < names.size(); ++i) {
          std::string name;
          HUYGENS_ASSIGN_OR_RETURN(name, r.String(names[i], fmt::format("extender.tls.allowedClientNames[{}]", i)));
          tls.allowed_client_names.push_back(std::move(name));
        }
      }
      c.extender_tls = std::move(tls);
    }
  }
  return c;
}

absl::StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::ErrnoToStatus(
        errno, fmt::format("{}: cannot open the configuration file", path));
  std::stringstream text;
  text << in.rdbuf();
  return ParseSchedulerConfig(text.str(), path);
}

std::vector<ProfileConfig> EffectiveProfiles(const SchedulerConfig& config) {
  std::vector<ProfileConfig> out = config.profiles;
  if (out.empty()) {
    ProfileConfig p;
    p.scheduler_name = config.scheduler_name;
    p.profile = sched::HuygensProfile();
    p.profile.scheduler_name = config.scheduler_name;
    out.push_back(std::move(p));
  }
  // As an extender, kube-scheduler's own plugins judge what UnsupportedFeatures refuses.
  if (config.extender_enabled) {
    for (ProfileConfig& p : out) p.profile.pre_filters.clear();
  }
  return out;
}

}  // namespace huygens::scheduler
