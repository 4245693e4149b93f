// The built-in example of `huygens simulate` (no arguments): an embedded cluster of real server
// shapes and a workload whose CPU-request mix follows the Alibaba openb trace's histogram.
// Both are ordinary spec texts, compiled in, so the example needs no file at run time; they
// are also what docs/simulate.md shows as the starting point for one's own specs.
//
// Thread-safety: returns pointers to immutable static text.
#ifndef HUYGENS_SIM_EXAMPLE_H_
#define HUYGENS_SIM_EXAMPLE_H_

#include "absl/status/statusor.h"
#include "sim/cluster_spec.h"
#include "sim/workload.h"

namespace huygens::sim {

// The cluster spec (YAML, see ParseClusterSpec). Parse it with the file name "<example>".
const char* ExampleClusterYaml();
// The workload spec (YAML, see ParseWorkloadSpec).
const char* ExampleWorkloadYaml();

// The parsed example specs. Errors only if the embedded text is broken (a test guards it).
absl::StatusOr<ClusterSpec> ExampleCluster();
absl::StatusOr<WorkloadSpec> ExampleWorkload();

// The scheduling benchmark's cluster: `nodes` nodes of the five presets in equal shares
// (EPYC 9654 NPS1 and NPS4 with 384 CPUs, Xeon 8480+ with 224, Xeon 6230 SNC2 with 80,
// Kunpeng 920 with 128), 2 system CPUs each, single-numa-node, container scope.
// REQUIRES: nodes >= 1.
absl::StatusOr<ClusterSpec> MixedShapesCluster(int nodes);

// The example workload scaled to `pods` arrivals at a total rate that keeps about
// `target_utilisation` of `cluster_cpus` CPUs requested on average (templates keep their
// shares of the mix and their 75 s mean lifetime). REQUIRES: pods >= 0, cluster_cpus > 0.
absl::StatusOr<WorkloadSpec> ScaledExampleWorkload(int pods, int64_t cluster_cpus,
                                                   double target_utilisation);

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_EXAMPLE_H_
