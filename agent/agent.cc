#include "agent/agent.h"

#include <utility>

#include "agent/capacity.h"
#include "agent/read_file.h"
#include "base/status.h"
#include "fmt/format.h"
#include "kube/resource.h"
#include "serving/build_info.h"
#include "spdlog/spdlog.h"

namespace huygens::agent {
namespace {

}  // namespace

struct Agent::Metrics {
  explicit Metrics(serving::MetricsRegistry& r)
      : passes(r.AddCounter("huygens_agent_reconcile_passes_total",
                            "Reconcile passes run by the agent.")),
        applied(r.AddCounter("huygens_agent_containers_applied_total",
                             "Container cpusets written (all causes).")),
        drift(r.AddCounter("huygens_agent_drift_corrections_total",
                           "Container cpusets changed by someone else and set back.")),
        restarts(r.AddCounter("huygens_agent_restarts_reapplied_total",
                              "Restarted containers whose cpuset was set again.")),
        update_failures(r.AddCounter("huygens_agent_update_failures_total",
                                     "Failed runtime cpuset reads or writes.")),
        conflicts(r.AddCounter("huygens_agent_conflicts_total",
                               "Pods whose allocation-status changed to conflict.")),
        pods(r.AddGauge("huygens_agent_pods",
                        "Pods with a Huygens allocation or kubelet-bound CPUs, by state.",
                        {"state"})),
        runtime_up(r.AddGauge("huygens_agent_runtime_up",
                              "1 when the last pass could list the runtime's containers.")),
        nrt_writes(r.AddCounter("huygens_agent_nrt_writes_total",
                                "NodeResourceTopology creates and updates.")),
        traffic_samples(r.AddCounter("huygens_agent_traffic_samples_total",
                                     "Rounds of sampling the pods' TCP traffic.")),
        errors(r.AddCounter("huygens_agent_errors_total",
                            "Pass steps that failed, by step.", {"step"})),
        latency(r.AddHistogram("huygens_agent_apply_latency_seconds",
                               "Time of one runtime cpuset update.", {},
                               serving::LatencyBuckets())) {
    serving::AddBuildInfo(r);
  }
  serving::CounterFamily& passes;
  serving::CounterFamily& applied;
  serving::CounterFamily& drift;
  serving::CounterFamily& restarts;
  serving::CounterFamily& update_failures;
  serving::CounterFamily& conflicts;
  serving::GaugeFamily& pods;
  serving::GaugeFamily& runtime_up;
  serving::CounterFamily& nrt_writes;
  serving::CounterFamily& traffic_samples;
  serving::CounterFamily& errors;
  serving::HistogramFamily& latency;
};

absl::StatusOr<std::unique_ptr<Agent>> Agent::Create(AgentConfig config, CpuSet system_cpus,
                                                     AgentDeps deps,
                                                     KubeletMemorySettings memory) {
  std::vector<std::string> left_out;
  NumaMemory reserved = FitReservedMemory(memory.reserved, *deps.topology, left_out);
  // The reconciler accounts Huygens' pods' memory by the memory manager's rules on their mems
  // (None: Huygens placed it); AddHuygensMemoryUsed publishes it when kubelet's checkpoint does
  // not already count it.
  auto reconciler = Reconciler::Create({.node_name = config.node_name,
                                        .topology = deps.topology,
                                        .system_cpus = system_cpus,
                                        .mode = config.mode,
                                        .system_namespaces = config.system_namespaces,
                                        .cpu_policy_none_namespaces = config.cpu_policy_none_namespaces,
                                        .checkpoint_path = config.checkpoint_path,
                                        .memory_manager = MemoryManagerConfig{
                                            .static_policy = false,
                                            .reserved_memory = reserved}},
                                       deps.runtime, deps.client, deps.clock);
  if (!reconciler.ok()) return reconciler.status();
  for (const std::string& line : left_out) {
    spdlog::warn("kubelet config {}: {}", config.kubelet_config_path, line);
  }
  auto memory_reader = std::make_unique<KubeletMemoryReader>(
      KubeletMemoryOptions{.topology = deps.topology,
                           .policy = memory.policy,
                           .reserved = reserved,
                           .checkpoint_path = config.kubelet_memory_checkpoint_path});
  auto devices = std::make_unique<PodResourcesReader>(PodResourcesOptions{
      .topology = deps.topology, .socket = config.pod_resources_socket});
  auto publisher = std::make_unique<Publisher>(
      deps.client, deps.clock,
      PublisherOptions{.node_name = config.node_name,
                       .topology = deps.topology,
                       .system_cpus = system_cpus,
                       .mode = config.mode,
                       .policy = config.topology_policy,
                       .scope = config.topology_scope,
                       .memory_manager_policy = memory.policy == KubeletMemoryPolicy::kStatic
                                                    ? "Static"
                                                    : "None",
                       .memory_reserved = std::move(reserved),
                       .min_interval = config.nrt_min_interval});
  std::unique_ptr<Agent> agent(
      new Agent(std::move(config), deps, std::move(*reconciler), std::move(publisher),
                std::move(memory_reader), std::move(devices)));
  if (agent->config_.traffic.enabled && deps.traffic_reader != nullptr) {
    agent->traffic_ = std::make_unique<TrafficSampler>(agent->config_.traffic,
                                                       deps.traffic_reader, deps.runtime,
                                                       deps.clock);
  }
  if (agent->config_.pod_source == PodSourceKind::kKubelet) {
    const std::string& url = agent->config_.kubelet_pods_url;
    const std::size_t scheme = url.find("://");
    const std::size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    kube::RestConfig rest;
    rest.server = url.substr(0, slash);
    rest.qps = 0;
    rest.insecure_skip_tls_verify = true;  // kubelet's serving certificate is self-signed
    auto client = kube::RestClient::Create(rest, deps.clock);
    if (!client.ok()) return client.status();
    agent->kubelet_ = std::move(*client);
    agent->kubelet_path_ = slash == std::string::npos ? "/pods" : url.substr(slash);
  }
  return agent;
}

Agent::Agent(AgentConfig config, AgentDeps deps, std::unique_ptr<Reconciler> reconciler,
             std::unique_ptr<Publisher> publisher, std::unique_ptr<KubeletMemoryReader> memory,
             std::unique_ptr<PodResourcesReader> devices)
    : config_(std::move(config)),
      deps_(std::move(deps)),
      reconciler_(std::move(reconciler)),
      publisher_(std::move(publisher)),
      memory_(std::move(memory)),
      devices_(std::move(devices)) {
  if (deps_.metrics != nullptr) metrics_ = std::make_unique<Metrics>(*deps_.metrics);
  if (config_.pod_source == PodSourceKind::kWatch) {
    const auto changed = [this](const nlohmann::json&) { Wake(); };
    informer_ = std::make_unique<kube::Informer>(
        deps_.client, kube::Pods(),
        kube::InformerOptions{.field_selector = "spec.nodeName=" + config_.node_name},
        kube::InformerHandlers{
            .on_add = changed,
            .on_update = [this](const nlohmann::json&, const nlohmann::json&) { Wake(); },
            .on_delete = changed},
        deps_.clock);
  }
}

Agent::~Agent() {
  if (informer_) informer_->Stop();
}

absl::StatusOr<std::vector<nlohmann::json>> Agent::ListPods() {
  if (config_.pod_source == PodSourceKind::kKubelet) {
    absl::StatusOr<nlohmann::json> list = kubelet_->Send({.path = kubelet_path_});
    if (!list.ok()) return list.status();
    if (!list->is_object() || !list->contains("items") || !(*list)["items"].is_array()) {
      return absl::InvalidArgumentError(
          fmt::format("kubelet {}: not a PodList (no items array)", config_.kubelet_pods_url));
    }
    return (*list)["items"].get<std::vector<nlohmann::json>>();
  }
  if (informer_ && informer_->HasSynced()) return informer_->List();
  absl::StatusOr<kube::ObjectList> list = deps_.client->List(
      kube::Pods(), "", {.field_selector = "spec.nodeName=" + config_.node_name});
  if (!list.ok()) return list.status();
  return std::move(list->items);
}

std::optional<KubeletCpuCheckpoint> Agent::ReadKubeletCheckpoint(
    std::vector<std::string>& warnings) {
  if (config_.kubelet_checkpoint_path.empty()) return std::nullopt;
  absl::StatusOr<std::string> text = ReadTextFile(config_.kubelet_checkpoint_path);
  if (!text.ok()) {
    // No file: kubelet runs without the static policy (the normal Huygens setup).
    if (text.status().code() != absl::StatusCode::kNotFound) warnings.push_back(Msg(text.status()));
    return std::nullopt;
  }
  absl::StatusOr<KubeletCpuCheckpoint> cp = ParseKubeletCpuCheckpoint(*text);
  if (!cp.ok()) {
    warnings.push_back(fmt::format("{}: {}", config_.kubelet_checkpoint_path, Msg(cp.status())));
    return std::nullopt;
  }
  if (!cp->checksum_ok) {
    warnings.push_back(fmt::format("{}: checksum mismatch; kubelet would reject the file, so it "
                                   "is ignored",
                                   config_.kubelet_checkpoint_path));
    return std::nullopt;
  }
  return *std::move(cp);
}

std::map<int, double> Agent::ReadCapacity(std::vector<std::string>& warnings) {
  if (config_.capacity.Empty()) return {};
  absl::StatusOr<std::map<int, double>> factors =
      ReadCapacityFactors(config_.capacity, config_.runtime.timeout);
  if (!factors.ok()) {
    warnings.push_back(fmt::format("capacity factors: {} (keeping the last good ones)",
                                   Msg(factors.status())));
    if (metrics_) metrics_->errors.Inc({"capacity"});
    return capacity_;
  }
  std::map<int, double> known;
  for (const auto& [numa, factor] : *factors) {
    if (deps_.topology->HasNumaNode(numa)) {
      known[numa] = factor;
    } else {
      warnings.push_back(fmt::format("capacity factors: NUMA node {} does not exist; ignored", numa));
    }
  }
  capacity_ = known;
  return known;
}

void Agent::AddHuygensMemoryUsed(const ReconcileReport& report, bool from_checkpoint,
                                 NumaMemory& used) const {
  if (from_checkpoint) return;  // kubelet's Static policy already counts every Guaranteed pod
  for (const auto& [numa, resources] : report.memory_held) {
    for (const auto& [resource, bytes] : resources) used[numa][resource] += bytes;
  }
}

absl::StatusOr<ReconcileReport> Agent::RunOnce() {
  absl::StatusOr<std::vector<nlohmann::json>> pods = ListPods();
  if (!pods.ok()) {
    spdlog::error("cannot list the pods of node {}: {}", config_.node_name, Msg(pods.status()));
    if (metrics_) metrics_->errors.Inc({"pods"});
    return pods.status();
  }
  std::vector<std::string> warnings;
  ReconcileInput input{.pods = std::move(*pods), .kubelet = ReadKubeletCheckpoint(warnings)};
  ReconcileReport report = reconciler_->Reconcile(input);
  const std::map<int, double> capacity = ReadCapacity(warnings);
  KubeletMemoryUse memory = memory_->Read();  // logs its reason once per change
  AddHuygensMemoryUsed(report, memory.from_checkpoint, memory.used);
  DeviceUse devices = devices_->Read();  // logs its reason once per change
  last_publication_ = NodePublication{.exclusive = report.exclusive,
                                      .capacity = capacity,
                                      .memory_used = std::move(memory.used),
                                      .devices = std::move(devices.devices),
                                      .pod_traffic = PodTrafficAnnotation()};
  PublishNrt(*last_publication_, warnings);
  // The extended resource of the node's mode: what pods request to go through Huygens.
  const std::map<std::string, int> extended =
      config_.mode == NodeMode::kIsolated
          ? std::map<std::string, int>{{kIsolatedCpuResource, reconciler_->EmptyNode().UserPool().Size()}}
          : std::map<std::string, int>{{kExclusiveResource, kExclusiveResourceCapacity}};
  absl::StatusOr<bool> patched = publisher_->PublishExtendedResources(extended);
  const std::string name = extended.begin()->first;
  if (!patched.ok()) {
    warnings.push_back(fmt::format("node {}: cannot publish {}: {}", config_.node_name, name, Msg(patched.status())));
    if (metrics_) metrics_->errors.Inc({"node"});
  } else if (*patched) {
    spdlog::info("node {}: {} = {}", config_.node_name, name, extended.begin()->second);
  }
  report.warnings.insert(report.warnings.end(), warnings.begin(), warnings.end());
  for (const std::string& w : report.warnings) spdlog::warn("{}", w);
  Record(report);
  return report;
}

void Agent::PublishNrt(const NodePublication& publication, std::vector<std::string>& warnings) {
  absl::StatusOr<PublishResult> published = publisher_->Publish(publication);
  if (!published.ok()) {
    warnings.push_back(fmt::format("NodeResourceTopology {}: {}", config_.node_name,
                                   Msg(published.status())));
    if (metrics_) metrics_->errors.Inc({"nrt"});
  } else if (*published == PublishResult::kWritten) {
    spdlog::info("NodeResourceTopology {}: written (exclusive cpus {:?})", config_.node_name,
                 publication.exclusive.ToString());
    if (metrics_) metrics_->nrt_writes.Inc();
  }
}

std::optional<std::string> Agent::PodTrafficAnnotation() const {
  if (!config_.traffic.enabled) return "";
  if (!traffic_) return std::nullopt;
  return traffic_->Annotation();
}

void Agent::SampleTraffic() {
  absl::StatusOr<std::vector<nlohmann::json>> objects = ListPods();
  absl::StatusOr<std::vector<NodePod>> pods = std::vector<NodePod>{};
  if (!objects.ok()) {
    pods = objects.status();
  } else {
    for (const nlohmann::json& object : *objects) {
      absl::StatusOr<NodePod> pod = kube::DecodePod(object);
      if (pod.ok() && pod->node_name == config_.node_name) pods->push_back(*std::move(pod));
    }
  }
  TrafficSampleReport report = traffic_->Sample(pods);
  if (report.failures != traffic_failures_) {
    for (const std::string& f : report.failures) spdlog::warn("traffic sample: {}", f);
    traffic_failures_ = report.failures;
  }
  if (metrics_) {
    metrics_->traffic_samples.Inc();
    if (!report.failures.empty()) metrics_->errors.Inc({"traffic"});
  }
  if (!report.changed || !last_publication_.has_value()) return;
  spdlog::info("pod traffic of node {}: {}", config_.node_name, *traffic_->Annotation());
  last_publication_->pod_traffic = traffic_->Annotation();
  std::vector<std::string> warnings;
  PublishNrt(*last_publication_, warnings);
  for (const std::string& w : warnings) spdlog::warn("{}", w);
}

void Agent::Record(const ReconcileReport& report) {
  {
    absl::MutexLock lock(&mu_);
    last_pass_ = deps_.clock->Now();
    last_runtime_ok_ = report.runtime_ok;
  }
  if (!metrics_) return;
  metrics_->passes.Inc();
  metrics_->applied.Inc({}, report.containers_applied);
  metrics_->drift.Inc({}, report.drift_corrections);
  metrics_->restarts.Inc({}, report.restarts_reapplied);
  metrics_->update_failures.Inc({}, report.update_failures);
  for (double s : report.apply_latency_seconds) metrics_->latency.Observe({}, s);
  metrics_->runtime_up.Set({}, report.runtime_ok ? 1 : 0);
  std::map<std::string, int> by_state;
  for (AllocationState s : {AllocationState::kApplied, AllocationState::kPending,
                            AllocationState::kConflict, AllocationState::kFailed}) {
    by_state[ToString(s)] = 0;
  }
  for (const PodOutcome& p : report.pods) {
    ++by_state[ToString(p.status.state)];
    if (p.patched && p.status.state == AllocationState::kConflict) metrics_->conflicts.Inc();
  }
  for (const auto& [state, n] : by_state) metrics_->pods.Set({state}, n);
}

void Agent::Wake() {
  absl::MutexLock lock(&mu_);
  dirty_ = true;
  wake_.SignalAll();
}

void Agent::Run(const std::atomic<bool>& stop) {
  if (informer_) {
    informer_->Start();
    watching_ = true;
  }
  std::optional<Clock::TimePoint> next_resync;
  while (!stop.load()) {
    const Clock::TimePoint now = deps_.clock->Now();
    bool due = !next_resync.has_value() || now >= *next_resync;
    if (auto pending = publisher_->PendingUntil(); pending.has_value() && now >= *pending) due = true;
    {
      absl::MutexLock lock(&mu_);
      if (dirty_) due = true;
      dirty_ = false;
    }
    const bool synced = !informer_ || informer_->HasSynced();
    if (due && synced) {
      (void)RunOnce();
      next_resync = deps_.clock->Now() + config_.resync_period;
      continue;
    }
    if (traffic_ && synced && now >= traffic_->NextSampleAt()) {
      SampleTraffic();
      continue;
    }
    absl::MutexLock lock(&mu_);
    const absl::Time deadline = absl::Now() + absl::Milliseconds(200);
    while (!dirty_ && !stop.load()) {
      if (wake_.WaitWithDeadline(&mu_, deadline)) break;  // timed out
    }
  }
  watching_ = false;
  if (informer_) informer_->Stop();
}

absl::Status Agent::Healthy() const {
  absl::MutexLock lock(&mu_);
  if (!last_pass_.has_value()) return absl::OkStatus();  // starting up
  if (deps_.clock->Now() - *last_pass_ > 3 * config_.resync_period) {
    return absl::DeadlineExceededError("no reconcile pass for three resync periods");
  }
  return absl::OkStatus();
}

absl::Status Agent::PodInformerReady() const {
  // Only while Run()s: a RunOnce pass lists the pods itself.
  return watching_ ? informer_->Ready() : absl::OkStatus();
}

absl::Status Agent::Ready() const {
  absl::MutexLock lock(&mu_);
  if (!last_pass_.has_value()) return absl::UnavailableError("no reconcile pass yet");
  if (!last_runtime_ok_) return absl::UnavailableError("the container runtime cannot be reached");
  return absl::OkStatus();
}

}  // namespace huygens::agent
