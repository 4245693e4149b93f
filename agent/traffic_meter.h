// TrafficMeter: which pods of this node talk to each other over TCP, and how much: the observed
// affinity the agent publishes (topology/pod_traffic.h). Pure: the connections of each pod's
// network namespace and the time are handed in (agent/netns_tcp_reader.h reads them).
//
// Matching (one sampling round):
//   - A pod owns its pod IPs (status.podIPs). An IP that two pods claim is ignored.
//   - A socket in pod P's namespace whose remote address is a pod IP of another pod Q connects P
//     and Q. Loopback sockets (127.0.0.0/8, ::1) never leave P's namespace: the same pod,
//     ignored; so is a socket to P's own IP and one to an address no local pod owns (another
//     node, the outside).
//   - Both ends of a connection between two local pods show in their namespaces, with the
//     endpoints reversed (P's local = Q's remote): one connection, counted once, from the side
//     that saw the larger increase. Behind a Service (DNAT) only the server's side names the
//     client's pod IP; that side alone counts the connection.
// Counting: a socket's traffic is tcpi_bytes_acked + tcpi_bytes_received (both directions). A
// socket is known by (pod, local, remote) and its inode; its increase in a round is its counters
// minus those of the last round. A new socket (unknown, or another inode on the same address
// pair) counts in full when its pod's namespace was read in the previous round too (it was
// created since then), else only from now on (its first counters are a baseline: the socket
// may be older than the pod's first read). Counters that went down count as a new socket's.
// Increases are never negative. Connections opened and closed between two rounds are not seen.
// Rates: each round adds one interval (previous round's time, this round's] with the bytes of
// every pair; the rate of a pair is its bytes over the kept intervals divided by their span. The
// oldest interval is dropped while the others still span the window. Pods that are gone (not in
// the latest round's pod list) leave the summary at once; their sockets are forgotten, as are
// those of a pod whose namespace could not be read (the next read is a baseline).
//
// Thread-safety: not thread-safe; one owner calls it.
#ifndef HUYGENS_AGENT_TRAFFIC_METER_H_
#define HUYGENS_AGENT_TRAFFIC_METER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/tcp_connection.h"
#include "base/clock.h"
#include "topology/pod_traffic.h"

namespace huygens::agent {

// A pod of this node whose network namespace is sampled (hostNetwork pods are not: they share
// the node's namespace and addresses).
struct TrafficPod {
  std::string uid;
  std::string name;             // "<namespace>/<name>"
  std::vector<IpAddress> ips;   // status.podIPs
};

struct TrafficMeterOptions {
  // Rates are averaged over at least this span (once there are enough rounds). Default 30 s.
  std::chrono::milliseconds window{30000};
};

class TrafficMeter {
 public:
  explicit TrafficMeter(TrafficMeterOptions options = {});

  // One sampling round at `now`: `pods` are the node's pods, `samples` the connections read
  // from their namespaces by pod uid; a pod without an entry could not be read this round.
  // Samples of uids not in `pods` are ignored. A round at or before the previous one adds no
  // interval (the counters are still taken as the new baseline).
  void Observe(Clock::TimePoint now, const std::vector<TrafficPod>& pods,
               const std::map<std::string, std::vector<TcpConnection>>& samples);

  // The `top_k` pairs of current pods with the highest rates, in bytes per second rounded to
  // an integer (pairs whose rate rounds to 0 are left out), in canonical order
  // (CanonicalPodTraffic); window_seconds = the span of the kept intervals, rounded, at least
  // 1. nullopt before the second round (no interval yet).
  std::optional<PodTraffic> Summary(size_t top_k) const;

 private:
  using SocketKey = std::tuple<std::string, Endpoint, Endpoint>;  // pod uid, local, remote
  struct SocketState {
    uint32_t inode = 0;
    uint64_t counter = 0;
  };
  using PodPair = std::pair<std::string, std::string>;  // pod names, first < second
  struct Interval {
    Clock::TimePoint start, end;
    std::map<PodPair, uint64_t> bytes;
  };

  const TrafficMeterOptions options_;
  std::map<SocketKey, SocketState> sockets_;
  std::set<std::string> sampled_;       // pods whose namespace the last round read
  std::set<std::string> current_pods_;  // names of the last round's pods
  std::optional<Clock::TimePoint> last_round_;
  std::deque<Interval> intervals_;
};

// Whether `fresh` is worth writing over `published`: true when the two name different pairs,
// or some pair's rate moved by `threshold` of its published rate or more (0.2: 20%; from or to
// 0 always counts). The windows are not compared.
bool PodTrafficChanged(const PodTraffic& published, const PodTraffic& fresh, double threshold);

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_TRAFFIC_METER_H_
