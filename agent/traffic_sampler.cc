#include "agent/traffic_sampler.h"

#include <utility>

#include "base/status.h"
#include "fmt/format.h"

namespace huygens::agent {

TrafficSampler::TrafficSampler(TrafficConfig config, TcpConnectionReader* reader,
                               cri::ContainerRuntime* runtime, Clock* clock)
    : config_(config),
      reader_(reader),
      runtime_(runtime),
      clock_(clock),
      meter_({.window = config.window}) {}

Clock::TimePoint TrafficSampler::NextSampleAt() const {
  return last_sample_.has_value() ? *last_sample_ + config_.sample_interval
                                  : Clock::TimePoint::min();
}

TrafficSampleReport TrafficSampler::Sample(const absl::StatusOr<std::vector<NodePod>>& pods) {
  TrafficSampleReport report;
  const Clock::TimePoint now = clock_->Now();
  last_sample_ = now;
  if (!pods.ok()) {
    report.failures.push_back(fmt::format("pods: {}", Msg(pods.status())));
    return report;
  }
  std::map<std::string, std::vector<const cri::ContainerInfo*>> running;  // pod uid -> containers
  absl::StatusOr<std::vector<cri::ContainerInfo>> containers = runtime_->ListContainers();
  const bool runtime_ok = containers.ok();
  if (!runtime_ok) {
    report.failures.push_back(fmt::format("runtime: {}", Msg(containers.status())));
    containers = std::vector<cri::ContainerInfo>{};
  }
  std::map<std::string, int64_t> pids;
  for (const cri::ContainerInfo& c : *containers) {
    if (c.state != cri::ContainerState::kRunning || c.pod_uid.empty()) continue;
    running[c.pod_uid].push_back(&c);
    if (auto known = pids_.find(c.id); known != pids_.end()) pids.insert(*known);
  }
  std::vector<TrafficPod> traffic_pods;
  std::map<std::string, std::vector<TcpConnection>> samples;
  for (const NodePod& pod : *pods) {
    if (pod.host_network || pod.phase != "Running") continue;
    TrafficPod tp{pod.spec.uid, fmt::format("{}/{}", pod.spec.namespace_name, pod.spec.name), {}};
    for (const std::string& ip : pod.pod_ips) {
      if (absl::StatusOr<IpAddress> parsed = ParseIpAddress(ip); parsed.ok()) {
        tp.ips.push_back(*parsed);
      }
    }
    if (tp.ips.empty()) continue;
    traffic_pods.push_back(tp);
    std::optional<int64_t> pid;
    for (const cri::ContainerInfo* c : running[tp.uid]) {
      if (auto known = pids.find(c->id); known != pids.end()) {
        pid = known->second;
      } else if ((pid = runtime_->Pid(*c)).has_value()) {
        pids[c->id] = *pid;
      }
      if (pid.has_value()) break;
    }
    if (!pid.has_value()) {
      if (!runtime_ok) continue;  // reported once above
      report.failures.push_back(fmt::format("{}: no running container with a known pid", tp.name));
      continue;
    }
    absl::StatusOr<std::vector<TcpConnection>> conns =
        reader_->Read(fmt::format("/proc/{}/ns/net", *pid));
    if (!conns.ok()) {
      report.failures.push_back(fmt::format("{}: {}", tp.name, Msg(conns.status())));
      continue;
    }
    ++report.pods_read;
    samples[tp.uid] = *std::move(conns);
  }
  pids_ = std::move(pids);
  meter_.Observe(now, traffic_pods, samples);
  std::optional<PodTraffic> summary = meter_.Summary(static_cast<size_t>(config_.top_pairs));
  if (summary.has_value() &&
      (!published_.has_value() || PodTrafficChanged(*published_, *summary, kTrafficMinChange))) {
    published_ = std::move(summary);
    report.changed = true;
  }
  return report;
}

std::optional<std::string> TrafficSampler::Annotation() const {
  if (!published_.has_value()) return std::nullopt;
  return EncodePodTraffic(*published_);
}

}  // namespace huygens::agent
