// Publisher: writes what the node offers to the API server: its NodeResourceTopology object and,
// the extended resource of its mode on the Node's status (huygens.io/isolated-cpu or
// huygens.io/exclusive).
//
// What it publishes (docs/agent.md, "What it publishes"):
//   - the NRT object of topology/nrt.h (BuildNrt) for this node, with `available` reflecting the
//     exclusive CPUs held now (Huygens allocations and kubelet-bound CPUs alike), memory and
//     hugepages per NUMA node net of kubelet's reservedMemory (allocatable) and of the memory in
//     use (available; NrtMemory, KubeletMemoryReader), the NUMA-affine devices per zone as
//     kubelet's pod resources API reports them (PodResourcesReader), the pools in
//     the huygens.io/pools annotation, and per-NUMA capacity factors as the zone attribute
//     `huygens.io/capacity-factor` (decimal text in 0..1, e.g. "0.75"; absent = 1), and the
//     observed affinity in the huygens.io/pod-traffic annotation when it is given, the agent's
//     heartbeat in huygens.io/agent-heartbeat (PublisherOptions::heartbeat_interval); owned by the
//     Node (metadata.ownerReferences: v1 Node, its name and uid, read from the API server once),
//     so the garbage collector deletes it with the Node;
//   - in isolated mode, Node status.capacity and status.allocatable
//     `huygens.io/isolated-cpu` = the number of CPUs in the user pool; in allocatable mode
//     `huygens.io/exclusive` = kExclusiveResourceCapacity (the opt-in of extender mode).
//
// Write discipline: an object is written only when its content differs from what the server
// holds (the first call reads the server's copy, so a restarted agent that has nothing new to
// say writes only its heartbeat), the heartbeat making a change once per heartbeat_interval,
// and the NRT at most once per `min_interval` on the injected clock: a
// change inside the interval is kept pending and written by the first Publish call after it.
// Other metadata on the NRT object (labels, foreign annotations, owner references other than a
// Node's) is kept; a Node owner reference that is not this Node's (none, written by an older
// agent; an old uid, the Node was registered again) is replaced, which is itself a change.
//
// Thread-safety: not thread-safe; one owner calls it.
#ifndef HUYGENS_AGENT_PUBLISHER_H_
#define HUYGENS_AGENT_PUBLISHER_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "alloc/pod.h"
#include "base/extender_opt_in.h"
#include "base/wire_names.h"
#include "cpuset/cpuset.h"
#include "kube/client.h"
#include "base/clock.h"
#include "node/node_state.h"
#include "nlohmann/json.hpp"
#include "topology/nrt.h"
#include "topology/topology.h"

namespace huygens::agent {

// The zone attribute that carries a NUMA node's capacity factor (topology/nrt.h); the scheduler
// reads it into NodeConfig::capacity (NUMA id -> factor).
using ::huygens::kCapacityFactorAttribute;

struct PublisherOptions {
  std::string node_name;                          // required
  std::shared_ptr<const CpuTopology> topology;    // required
  CpuSet system_cpus;                             // the system pool; default none
  NodeMode mode = NodeMode::kAllocatable;
  TopologyPolicy policy = TopologyPolicy::kSingleNumaNode;
  TopologyScope scope = TopologyScope::kContainer;
  // kubelet's memory manager policy as the NRT attribute memoryManagerPolicy ("None" |
  // "Static"); "" writes none. Default "".
  std::string memory_manager_policy;
  // kubelet's reservedMemory (NUMA id -> resource -> bytes), fitted to the machine
  // (FitReservedMemory): allocatable = capacity - this. Default none.
  NumaMemory memory_reserved;
  // At most one NRT write per interval. Default 10 s.
  std::chrono::milliseconds min_interval{10000};
  // The heartbeat (huygens.io/agent-heartbeat, the wall time as metav1.MicroTime) is renewed
  // by the first Publish call at least this long after the last one written, which therefore
  // writes even when nothing else changed; the scheduler stops placing exclusive pods on a
  // node whose heartbeat stops (scheduler/config.h agent_heartbeat_timeout). 0: none.
  // Default 60 s.
  std::chrono::milliseconds heartbeat_interval{60000};
};

// What changes between two publications.
struct NodePublication {
  CpuSet exclusive;                     // CPUs held exclusively now
  std::map<int, double> capacity;       // NUMA id -> factor in [0, 1]; absent = 1
  // Memory in use per NUMA id and resource, bytes: available = allocatable - this. Every entry
  // names a NUMA node and resource the machine has. Default none.
  NumaMemory memory_used;
  // NUMA-affine devices per NUMA id and resource (NrtInput::devices; PodResourcesReader).
  // Default none.
  std::map<int, std::map<std::string, NrtDeviceFigures>> devices;
  // The huygens.io/pod-traffic annotation (EncodePodTraffic, topology/pod_traffic.h): a value
  // to write; "" = none (an existing one is removed); nullopt (default) = whatever the server
  // holds is left as it is and not compared (nothing to say yet).
  std::optional<std::string> pod_traffic;
};

enum class PublishResult {
  kWritten,    // the object was created or updated
  kUnchanged,  // the server already holds this content
  kDeferred,   // changed, but inside min_interval: pending
};
const char* ToString(PublishResult r);

class Publisher {
 public:
  // `client` and `clock` must outlive the publisher.
  Publisher(kube::Client* client, Clock* clock, PublisherOptions options);

  // The NRT object for `publication` (BuildNrt). Errors: BuildNrt's InvalidArgument (e.g. an
  // exclusive CPU outside the user pool, memory for a NUMA node the machine lacks).
  absl::StatusOr<nlohmann::json> BuildObject(const NodePublication& publication) const;

  // Publishes the NRT for `publication` under the write discipline above. The first call that
  // gets this far reads the Node for its uid (the owner reference); nothing is written before
  // it is known. Errors: the BuildObject error; the Node's read error (NotFound when the Node
  // does not exist) naming the Node; or the API error of the NRT's read or write. The next
  // call tries again.
  absl::StatusOr<PublishResult> Publish(const NodePublication& publication);

  // When a deferred change becomes writable; nullopt when nothing is pending.
  std::optional<Clock::TimePoint> PendingUntil() const;

  // Sets status.capacity and status.allocatable of each extended resource in `resources` (name
  // -> count) on the Node, in one patch of the status subresource, when the Node does not
  // already say so (the way Kubernetes documents advertising an extended resource of a node).
  // Isolated mode: huygens.io/isolated-cpu = the user pool's size; allocatable mode:
  // huygens.io/exclusive = kExclusiveResourceCapacity. Returns true when it patched.
  // Errors: the API error (NotFound when the Node does not exist).
  absl::StatusOr<bool> PublishExtendedResources(const std::map<std::string, int>& resources);

 private:
  kube::Client* const client_;
  Clock* const clock_;
  const PublisherOptions options_;
  std::optional<std::string> node_uid_;         // the Node's metadata.uid, once read
  std::optional<nlohmann::json> last_written_;  // the content the server holds, once known
  std::optional<Clock::TimePoint> last_write_time_;
  std::optional<Clock::TimePoint> last_beat_time_;  // when the heartbeat last written was
  std::string last_beat_;                           // its value; "" before the first

  std::optional<Clock::TimePoint> pending_until_;
  std::optional<std::map<std::string, int>> extended_published_;
};

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_PUBLISHER_H_
