// Agent: the node agent's loop. Each pass reads the pods of this node, kubelet's CPU manager
// checkpoint and the capacity source, runs the Reconciler, reads the memory in use
// (KubeletMemoryReader) and the NUMA-affine devices (PodResourcesReader), then runs the
// Publisher, and records metrics. Run() repeats passes on
// pod events (watch mode), every resync period, and when a
// deferred NRT write becomes due, until asked to stop. Between passes, Run() samples the pods'
// TCP traffic every traffic.sampleInterval (TrafficSampler) and publishes the NRT again, with
// the pass's content, when the huygens.io/pod-traffic summary changed.
//
// Handled (logged, counted, next pass retries): API errors, a runtime that is down, an
// unreadable kubelet checkpoint or capacity source (the last good capacity factors are kept),
// NRT write failures. Fatal (Create fails): a configuration that does not fit the machine
// (system CPUs unknown or offline, capacity factors for NUMA nodes that do not exist are only
// warned about), an unreadable local checkpoint.
//
// Thread-safety: RunOnce and Run from one thread; Healthy() from any thread (the HTTP server).
#ifndef HUYGENS_AGENT_AGENT_H_
#define HUYGENS_AGENT_AGENT_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/config.h"
#include "agent/kubelet_config.h"
#include "agent/kubelet_memory.h"
#include "agent/pod_resources.h"
#include "agent/publisher.h"
#include "agent/netns_tcp_reader.h"
#include "agent/reconciler.h"
#include "agent/traffic_sampler.h"
#include "cri/runtime.h"
#include "kube/client.h"
#include "base/clock.h"
#include "kube/informer.h"
#include "kube/rest_client.h"
#include "serving/http_server.h"
#include "topology/topology.h"

namespace huygens::agent {

// What the agent runs on; everything is owned by the caller and must outlive the agent.
struct AgentDeps {
  kube::Client* client = nullptr;                  // required
  cri::ContainerRuntime* runtime = nullptr;        // required
  Clock* clock = nullptr;                    // required
  std::shared_ptr<const CpuTopology> topology;     // required (discovered by the caller)
  serving::MetricsRegistry* metrics = nullptr;        // optional: families are registered here
  // Reads pods' TCP connections (SockDiagReader in the binary). Optional: without it, traffic
  // is not sampled and the huygens.io/pod-traffic annotation is left as it is; with
  // traffic.enabled false it is removed either way.
  TcpConnectionReader* traffic_reader = nullptr;
};

class Agent {
 public:
  // `system_cpus` is the resolved system pool (ResolveSystemCpus); `memory` kubelet's memory
  // manager settings (KubeletConfig::memory; default: policy None, no reservations), whose
  // reservations the machine lacks are logged and left out (FitReservedMemory). Errors: the
  // Reconciler's (bad system CPUs, unreadable checkpoint); InvalidArgument for a kubelet pod
  // URL that does not parse.
  static absl::StatusOr<std::unique_ptr<Agent>> Create(AgentConfig config, CpuSet system_cpus,
                                                       AgentDeps deps,
                                                       KubeletMemorySettings memory = {});
  ~Agent();

  // One pass (see the file comment). Returns the reconcile report; errors only for a pod list
  // that could not be read (nothing else was done then).
  absl::StatusOr<ReconcileReport> RunOnce();

  // Passes until `stop` becomes true (checked at least every 200 ms): starts the pod informer
  // in watch mode and runs a pass after its first sync, on every pod change, every resync
  // period and when a deferred NRT write is due.
  void Run(const std::atomic<bool>& stop);

  // OK while passes keep running (the last one finished within three resync periods), else
  // the reason. For /healthz: a stuck loop is worth a restart.
  absl::Status Healthy() const;
  // OK once a pass has run and could list the runtime's containers, else the reason. For
  // /readyz: a runtime that is down is reported, not cured by restarting the agent.
  absl::Status Ready() const;
  // OK unless Run() watches pods and the pod informer is not ready (kube::Informer::Ready: not
  // listed yet, or heard nothing from the API server for longer than RestConfig::
  // watch_idle_timeout + kube::kStaleMargin), else its reason. For /readyz: a stale watch is
  // reported, not cured by restarting the agent.
  absl::Status PodInformerReady() const;

 private:
  struct Metrics;
  Agent(AgentConfig config, AgentDeps deps, std::unique_ptr<Reconciler> reconciler,
        std::unique_ptr<Publisher> publisher, std::unique_ptr<KubeletMemoryReader> memory,
        std::unique_ptr<PodResourcesReader> devices);
  absl::StatusOr<std::vector<nlohmann::json>> ListPods();
  std::optional<KubeletCpuCheckpoint> ReadKubeletCheckpoint(std::vector<std::string>& warnings);
  std::map<int, double> ReadCapacity(std::vector<std::string>& warnings);
  // Adds to `used` (NUMA id -> resource name -> bytes in use) the memory and hugepages that
  // Huygens' Guaranteed pods hold on this node (ReconcileReport::memory_held: their requests on
  // their containers' mems, by the memory manager's rules), unless `from_checkpoint`: kubelet's
  // Static memory manager then counts every Guaranteed pod already, Huygens' included. The
  // entries name the machine's own NUMA nodes and page sizes (they come from its topology).
  void AddHuygensMemoryUsed(const ReconcileReport& report, bool from_checkpoint,
                            NumaMemory& used) const;
  // Publishes the NRT for `publication` (Publisher::Publish), logging and counting the outcome;
  // a failure is added to `warnings`.
  void PublishNrt(const NodePublication& publication, std::vector<std::string>& warnings);
  // The pod-traffic annotation for a publication: "" when traffic.enabled is false, else the
  // sampler's (nullopt without a sampler or before its first summary).
  std::optional<std::string> PodTrafficAnnotation() const;
  // One TrafficSampler round over the listed pods; when the summary changed and a pass has
  // published before, publishes that pass's content with the new summary.
  void SampleTraffic();
  void Record(const ReconcileReport& report) ABSL_LOCKS_EXCLUDED(mu_);
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);

  const AgentConfig config_;
  const AgentDeps deps_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<Publisher> publisher_;
  std::unique_ptr<KubeletMemoryReader> memory_;
  std::unique_ptr<PodResourcesReader> devices_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<kube::RestClient> kubelet_;  // pod source kKubelet
  std::string kubelet_path_;
  std::unique_ptr<kube::Informer> informer_;    // pod source kWatch; started by Run()
  std::atomic<bool> watching_{false};           // Run() has started informer_
  std::map<int, double> capacity_;              // last good capacity factors
  std::unique_ptr<TrafficSampler> traffic_;     // with traffic.enabled and a traffic reader
  std::optional<NodePublication> last_publication_;  // of the last pass
  std::vector<std::string> traffic_failures_;   // of the last sample, logged when they change

  // Guards what the informer's thread, the HTTP probes and Run's thread share.
  mutable absl::Mutex mu_;
  absl::CondVar wake_;  // dirty_ was set
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<Clock::TimePoint> last_pass_ ABSL_GUARDED_BY(mu_);
  bool last_runtime_ok_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_AGENT_H_
