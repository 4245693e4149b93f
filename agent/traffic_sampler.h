// TrafficSampler: the agent's observed-affinity step. Every sample interval it reads the TCP
// connections of each local pod's network namespace, feeds them to a TrafficMeter and decides
// what the huygens.io/pod-traffic annotation says (docs/agent.md, "Observed affinity").
//
// Which pods: this node's pods in phase Running with at least one pod IP, except hostNetwork
// pods (they share the node's namespace and addresses). A pod's namespace is that of one of its
// running containers (every container of a pod shares the sandbox's namespace): the runtime's
// Pid (CRI ContainerStatus verbose info "pid", cached per container id) gives
// /proc/<pid>/ns/net. A pod whose pid or namespace cannot be read is left out of that round
// (TrafficMeter: its next read is a baseline) and named in the report.
// What is published: the meter's summary (the top `top_pairs` pairs), replaced only when
// PodTrafficChanged says so with a threshold of 20 % (kTrafficMinChange): a different pair
// set, or a rate that moved by 20 % or more. The publisher's nrtMinInterval limits the writes
// further.
//
// Thread-safety: not thread-safe; the agent's loop calls it.
#ifndef HUYGENS_AGENT_TRAFFIC_SAMPLER_H_
#define HUYGENS_AGENT_TRAFFIC_SAMPLER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/netns_tcp_reader.h"
#include "agent/pod.h"
#include "agent/traffic_meter.h"
#include "base/clock.h"
#include "cri/runtime.h"
#include "topology/pod_traffic.h"

namespace huygens::agent {

// A published rate is replaced when it moves by this share of itself or more.
inline constexpr double kTrafficMinChange = 0.2;

// What one Sample call did.
struct TrafficSampleReport {
  int pods_read = 0;                  // namespaces read
  std::vector<std::string> failures;  // "<namespace>/<name>: <reason>", or "runtime: <reason>"
  bool changed = false;               // Annotation() changed
};

class TrafficSampler {
 public:
  // `reader`, `runtime` and `clock` must outlive the sampler. REQUIRES: config.enabled,
  // config.top_pairs >= 1, config.window >= config.sample_interval.
  TrafficSampler(TrafficConfig config, TcpConnectionReader* reader,
                 cri::ContainerRuntime* runtime, Clock* clock);

  // When the next Sample is due: now for the first, then one sample interval after the last.
  Clock::TimePoint NextSampleAt() const;

  // One round over `pods` (this node's pods) at the clock's now. A runtime that cannot list
  // its containers makes a round with no namespace read (reported as "runtime: ..."). When the
  // pods could not be listed (`pods` an error) there is no round (with no pods every pair would
  // look gone): reported as "pods: ...", and the next sample is one interval later all the same.
  TrafficSampleReport Sample(const absl::StatusOr<std::vector<NodePod>>& pods);

  // The annotation's value (EncodePodTraffic) to publish; nullopt before the first summary
  // (one sample interval after the first round).
  std::optional<std::string> Annotation() const;

 private:
  const TrafficConfig config_;
  TcpConnectionReader* const reader_;
  cri::ContainerRuntime* const runtime_;
  Clock* const clock_;
  TrafficMeter meter_;
  std::map<std::string, int64_t> pids_;  // container id -> pid
  std::optional<Clock::TimePoint> last_sample_;
  std::optional<PodTraffic> published_;
};

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_TRAFFIC_SAMPLER_H_
