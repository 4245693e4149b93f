#include "sim/example.h"

#include <cmath>
#include <string>

#include "fmt/format.h"
#include "sim/report.h"

namespace huygens::sim {

const char* ExampleClusterYaml() {
  return R"yaml(# Built-in example cluster: real server shapes, each with the kubelet topology policy an
# operator would typically run on it.
nodeGroups:
  - name: genoa-nps4
    count: 6
    topology: {preset: epyc-9654-2s-nps4}
    systemCpus: "0,192"
    topologyPolicy: single-numa-node
  - name: genoa-nps1
    count: 6
    topology: {preset: epyc-9654-2s-nps1}
    systemCpuCount: 2
    topologyPolicy: restricted
  - name: sapphire-rapids
    count: 8
    topology: {preset: xeon-8480-2s}
    systemCpus: "0,112"
    topologyPolicy: single-numa-node
  - name: cascade-lake-snc2
    count: 10
    topology: {preset: xeon-6230-2s-snc2}
    systemCpus: "0,40"
    topologyPolicy: best-effort
  - name: kunpeng
    count: 8
    topology: {preset: kunpeng-920-2s}
    systemCpuCount: 2
    topologyPolicy: single-numa-node
    numaStrategy: spread
)yaml";
}

const char* ExampleWorkloadYaml() {
  return R"yaml(# Built-in example workload: pod CPU requests follow the histogram of the Alibaba
# openb trace (see shared/fixtures/traces/README.md): latency-sensitive pods rounded up to
# whole CPUs and run exclusively (Guaranteed), best-effort pods shared (Burstable).
# About 10 pods/s arrive for 300 s; each lives 75 s on average (exponential).
seed: 7
pods:
  - name: ls-4
    count: 496
    arrivalsPerSecond: 1.6546
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 4, memory: 8Gi}
        limits: {cpu: 4, memory: 8Gi}
  - name: be-3152m
    count: 372
    arrivalsPerSecond: 1.2410
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 3152m, memory: 16Gi}
  - name: ls-5
    count: 59
    arrivalsPerSecond: 0.1965
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 5, memory: 16Gi}
        limits: {cpu: 5, memory: 16Gi}
  - name: ls-6
    count: 62
    arrivalsPerSecond: 0.2068
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 6, memory: 12Gi}
        limits: {cpu: 6, memory: 12Gi}
  - name: ls-8
    count: 320
    arrivalsPerSecond: 1.0651
    lifetime: {distribution: exponential, mean: 75s}
    affinityGroup: cache-tier
    containers:
      - name: app
        requests: {cpu: 8, memory: 32Gi}
        limits: {cpu: 8, memory: 32Gi}
  - name: ls-10
    count: 78
    arrivalsPerSecond: 0.2585
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 10, memory: 32Gi}
        limits: {cpu: 10, memory: 32Gi}
  - name: ls-12
    count: 636
    arrivalsPerSecond: 2.1200
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 12, memory: 40Gi}
        limits: {cpu: 12, memory: 40Gi}
      - name: proxy
        requests: {cpu: 1, memory: 1Gi}
        limits: {cpu: 1, memory: 1Gi}
  - name: be-11300m
    count: 372
    arrivalsPerSecond: 1.2410
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 11300m, memory: 40Gi}
  - name: ls-13
    count: 140
    arrivalsPerSecond: 0.4654
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 13, memory: 40Gi}
        limits: {cpu: 13, memory: 40Gi}
  - name: ls-16
    count: 217
    arrivalsPerSecond: 0.7239
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 16, memory: 48Gi}
        limits: {cpu: 16, memory: 48Gi}
  - name: ls-19
    count: 96
    arrivalsPerSecond: 0.3206
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 19, memory: 56Gi}
        limits: {cpu: 19, memory: 56Gi}
  - name: ls-25
    count: 31
    arrivalsPerSecond: 0.1034
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 25, memory: 64Gi}
        limits: {cpu: 25, memory: 64Gi}
  - name: ls-32
    count: 112
    arrivalsPerSecond: 0.3723
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 32, memory: 96Gi}
        limits: {cpu: 32, memory: 96Gi}
  - name: ls-64
    count: 9
    arrivalsPerSecond: 0.0310
    lifetime: {distribution: exponential, mean: 75s}
    containers:
      - name: app
        requests: {cpu: 64, memory: 128Gi}
        limits: {cpu: 64, memory: 128Gi}
)yaml";
}

absl::StatusOr<ClusterSpec> ExampleCluster() {
  return ParseClusterSpec(ExampleClusterYaml(), "<example cluster>");
}

absl::StatusOr<WorkloadSpec> ExampleWorkload() {
  return ParseWorkloadSpec(ExampleWorkloadYaml(), "<example workload>");
}

absl::StatusOr<ClusterSpec> MixedShapesCluster(int nodes) {
  const std::vector<std::string> presets = PresetNames();
  std::string yaml = "nodeGroups:\n";
  const int n = static_cast<int>(presets.size());
  for (int i = 0; i < n; ++i) {
    const int count = nodes / n + (i < nodes % n ? 1 : 0);
    yaml += fmt::format(
        "  - {{name: {}, count: {}, topology: {{preset: {}}}, systemCpuCount: 2, "
        "topologyPolicy: single-numa-node}}\n",
        presets[static_cast<size_t>(i)], count, presets[static_cast<size_t>(i)]);
  }
  return ParseClusterSpec(yaml, "<benchmark cluster>");
}

absl::StatusOr<WorkloadSpec> ScaledExampleWorkload(int pods, int64_t cluster_cpus,
                                                   double target_utilisation) {
  auto spec = ExampleWorkload();
  if (!spec.ok()) return spec.status();
  int total = 0;
  double cpu_weighted = 0;  // sum over templates of count x CPUs requested
  double lifetime_s = 0;
  for (const PodTemplate& t : spec->templates) {
    total += t.count;
    int64_t milli = 0;
    for (const ContainerSpec& c : t.pod.spec.containers) milli += c.cpu_request_milli;
    cpu_weighted += static_cast<double>(t.count) * static_cast<double>(milli) / 1000.0;
    lifetime_s = static_cast<double>(t.lifetime.a_us) / 1e6;
  }
  const double mean_cpus = cpu_weighted / total;
  // Little's law: pods running = rate x lifetime; CPUs requested = pods running x mean CPUs.
  const double rate =
      target_utilisation * static_cast<double>(cluster_cpus) / (mean_cpus * lifetime_s);
  for (PodTemplate& t : spec->templates) {
    const double share = static_cast<double>(t.count) / total;
    t.count = static_cast<int>(std::lround(share * pods));
    t.arrivals_per_second = share * rate;
  }
  return spec;
}

}  // namespace huygens::sim
