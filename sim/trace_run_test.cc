// The real trace run (ctest label `trace`): the Alibaba openb pod list over a cluster built from
// the openb node list completes and shows the Huygens-vs-baseline comparison.
#include <string>

#include "gtest/gtest.h"
#include "sim/cluster_spec.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace huygens::sim {
namespace {

TEST(TraceRunTest, TheOpenbTraceRunsOnTheOpenbNodeList) {
  const std::string dir = std::string(HUYGENS_FIXTURES) + "/traces/";
  NodeGroupSpec defaults;  // single-numa-node, 2 system CPUs
  auto cluster = LoadNodeListCsv(dir + "openb_node_list_all_node.csv", defaults);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->TotalNodes(), 1523);
  TraceOptions to;
  to.round_up_exclusive = true;  // LS pods exclusive, so NUMA placement matters
  auto pods = LoadTrace(dir + "openb_pod_list_default.csv", to);
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 8152u);
  SimulationOptions options;
  options.timeline_samples = 100;
  auto report = Simulate(*cluster, *pods, options);
  ASSERT_TRUE(report.ok()) << report.status();
  const RunReport& h = report->huygens;
  const RunReport& b = report->baseline;
  EXPECT_EQ(h.pods, 8152);
  EXPECT_EQ(b.pods, 8152);
  EXPECT_GT(h.exclusive_pods, 1000);
  EXPECT_GT(b.exclusive_pods, 1000);
  // Huygens never puts an exclusive pod across NUMA nodes under single-numa-node, and kubelet
  // never admits one that way either; the difference shows in rejections.
  EXPECT_DOUBLE_EQ(h.single_numa_ratio, 1.0);
  EXPECT_EQ(h.admission_rejected, 0);
  EXPECT_GE(h.scheduled + 0.0, b.scheduled * 0.99);
}

}  // namespace
}  // namespace huygens::sim
