// PodTraffic: the observed affinity of one node's pods, as the node agent publishes it on the
// node's NodeResourceTopology object in the annotation `huygens.io/pod-traffic`
// (kPodTrafficAnnotation): the pairs of pods of that node that talk to each other over TCP, and
// how much (DESIGN.md, "Contracts on the wire"; docs/agent.md, "Observed affinity").
//
// Wire form (JSON, compact):
//   {"version":1,"windowSeconds":30,
//    "pairs":[{"a":"shop/web-0","b":"shop/db-0","bytesPerSecond":123456}, ...]}
//   - version: 1;
//   - windowSeconds: the span the rates are averaged over, seconds, > 0;
//   - pairs: each an unordered pair of two different pods named "<namespace>/<name>", at most
//     once, with the bytes per second both ways together (an integer >= 0).
// Canonical form (what EncodePodTraffic writes and ParsePodTraffic returns): in each pair
// a < b (as text), pairs ordered by bytesPerSecond descending, then a, then b. A reader accepts
// any order. Unknown fields are errors (a later format has another version).
//
// Thread-safety: plain values; the functions are pure.
#ifndef HUYGENS_TOPOLOGY_POD_TRAFFIC_H_
#define HUYGENS_TOPOLOGY_POD_TRAFFIC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/wire_names.h"

namespace huygens {

struct PodTrafficPair {
  std::string a;  // "<namespace>/<name>"
  std::string b;  // "<namespace>/<name>", != a
  uint64_t bytes_per_second = 0;
  friend bool operator==(const PodTrafficPair&, const PodTrafficPair&) = default;
};

struct PodTraffic {
  int window_seconds = 0;  // > 0
  std::vector<PodTrafficPair> pairs;
  friend bool operator==(const PodTraffic&, const PodTraffic&) = default;
};

// `traffic` in canonical form (see the file comment): a and b of each pair swapped where b < a,
// pairs sorted.
PodTraffic CanonicalPodTraffic(PodTraffic traffic);

// The JSON text of CanonicalPodTraffic(traffic). REQUIRES: window_seconds > 0; pod names of the
// form above, two different ones per pair, no pair twice (what ParsePodTraffic accepts).
std::string EncodePodTraffic(const PodTraffic& traffic);

// Reads the JSON text of the annotation into canonical form; `field` names the annotation in
// errors. Errors: InvalidArgument "<field>.<path>: <problem>", e.g.
// `metadata.annotations["huygens.io/pod-traffic"].pairs[2].bytesPerSecond: expected a
// non-negative integer, got string`: not JSON or not an object, an unknown field, a version other than 1,
// a missing or non-positive windowSeconds, pairs not an array of objects, a pod name not of the
// form "<namespace>/<name>", a pair of one pod with itself, a pair given twice (either order),
// a bytesPerSecond that is not an integer >= 0.
absl::StatusOr<PodTraffic> ParsePodTraffic(std::string_view text, std::string_view field);

}  // namespace huygens

#endif  // HUYGENS_TOPOLOGY_POD_TRAFFIC_H_
