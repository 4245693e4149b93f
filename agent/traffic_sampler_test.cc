#include "agent/traffic_sampler.h"

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "agent/testing/fake_tcp_reader.h"
#include "base/testing/fake_clock.h"
#include "cri/testing/fake_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using std::chrono::seconds;

// Counts the Pid calls of a FakeRuntime.
class CountingRuntime : public cri::ContainerRuntime {
 public:
  explicit CountingRuntime(cri::testing::FakeRuntime* inner) : inner_(inner) {}
  std::string Name() const override { return "counting"; }
  absl::StatusOr<std::vector<cri::ContainerInfo>> ListContainers() override {
    return inner_->ListContainers();
  }
  absl::Status UpdateCpuset(const cri::ContainerInfo& c, const CpuSet& cpus,
                            const CpuSet& mems) override {
    return inner_->UpdateCpuset(c, cpus, mems);
  }
  absl::StatusOr<cri::CpusetResources> ReadCpuset(const cri::ContainerInfo& c) override {
    return inner_->ReadCpuset(c);
  }
  std::optional<int64_t> Pid(const cri::ContainerInfo& c) override {
    ++pid_calls;
    return inner_->Pid(c);
  }
  int pid_calls = 0;

 private:
  cri::testing::FakeRuntime* inner_;
};

NodePod Pod(const std::string& name, std::vector<std::string> ips, std::string phase = "Running",
            bool host_network = false) {
  NodePod pod;
  pod.spec.uid = "uid-" + name;
  pod.spec.namespace_name = "shop";
  pod.spec.name = name;
  pod.phase = std::move(phase);
  pod.pod_ips = std::move(ips);
  pod.host_network = host_network;
  return pod;
}

TcpConnection Conn(const std::string& local_ip, uint16_t local_port, const std::string& remote_ip,
                   uint16_t remote_port, uint64_t bytes) {
  return {{*ParseIpAddress(local_ip), local_port}, {*ParseIpAddress(remote_ip), remote_port},
          bytes, 0, 7};
}

class TrafficSamplerTest : public ::testing::Test {
 protected:
  // A running container for `pod`; returns its namespace path.
  std::string Run(const NodePod& pod) {
    const cri::ContainerInfo c =
        runtime_.AddPodContainer(pod.spec.uid, pod.spec.namespace_name, pod.spec.name, "app");
    return "/proc/" + std::to_string(*runtime_.Pid(c)) + "/ns/net";
  }
  TrafficSampler Sampler(int top_pairs = 32) {
    return TrafficSampler({.sample_interval = seconds(10), .window = seconds(30),
                           .top_pairs = top_pairs},
                          &reader_, &counting_, &clock_);
  }

  huygens::testing::FakeClock clock_;
  cri::testing::FakeRuntime runtime_{CpuSet{0, 1}, CpuSet{0}};
  CountingRuntime counting_{&runtime_};
  testing::FakeTcpReader reader_;
};

TEST_F(TrafficSamplerTest, PodsThatTalkArePublishedAfterOneInterval) {
  const NodePod web = Pod("web", {"10.0.0.1"}), db = Pod("db", {"10.0.0.2", "fd00::2"});
  const NodePod host = Pod("host", {"192.168.0.5"}, "Running", /*host_network=*/true);
  const NodePod pending = Pod("pending", {}, "Pending");
  const std::string web_ns = Run(web), db_ns = Run(db);
  Run(host);
  TrafficSampler sampler = Sampler();
  EXPECT_LE(sampler.NextSampleAt(), clock_.Now());
  reader_.Set(web_ns, {Conn("10.0.0.1", 4000, "10.0.0.2", 5432, 1000)});
  reader_.Set(db_ns, {});
  TrafficSampleReport first = sampler.Sample(std::vector<NodePod>{web, db, host, pending});
  EXPECT_EQ(first.pods_read, 2);
  EXPECT_TRUE(first.failures.empty());
  EXPECT_FALSE(first.changed);
  EXPECT_EQ(sampler.Annotation(), std::nullopt);
  EXPECT_THAT(reader_.Reads(), ElementsAre(web_ns, db_ns));  // not the hostNetwork pod's
  EXPECT_EQ(sampler.NextSampleAt(), clock_.Now() + seconds(10));

  clock_.Advance(seconds(10));
  reader_.Set(web_ns, {Conn("10.0.0.1", 4000, "10.0.0.2", 5432, 51000)});
  TrafficSampleReport second = sampler.Sample(std::vector<NodePod>{web, db, host, pending});
  EXPECT_TRUE(second.changed);
  EXPECT_EQ(sampler.Annotation(),
            R"({"version":1,"windowSeconds":10,"pairs":[)"
            R"({"a":"shop/db","b":"shop/web","bytesPerSecond":5000}]})");
  EXPECT_EQ(counting_.pid_calls, 2) << "pids are asked once per container";
}

TEST_F(TrafficSamplerTest, ASmallRateChangeKeepsThePublishedSummaryAndALargeOneReplacesIt) {
  const NodePod web = Pod("web", {"10.0.0.1"}), db = Pod("db", {"10.0.0.2"});
  const std::string web_ns = Run(web);
  Run(db);
  TrafficSampler sampler = Sampler();
  uint64_t bytes = 0;
  const auto round = [&](uint64_t per_second) {
    bytes += per_second * 10;
    reader_.Set(web_ns, {Conn("10.0.0.1", 4000, "10.0.0.2", 5432, bytes)});
    clock_.Advance(seconds(10));
    return sampler.Sample(std::vector<NodePod>{web, db});
  };
  round(0);
  EXPECT_TRUE(round(1000).changed);
  const std::optional<std::string> published = sampler.Annotation();
  // Averaged over the window: 1000, then (1000+1100)/2 = 1050: under 20 %.
  EXPECT_FALSE(round(1100).changed);
  EXPECT_EQ(sampler.Annotation(), published);
  // (1000+1100+4000)/3 = 2033: over 20 %.
  EXPECT_TRUE(round(4000).changed);
  EXPECT_THAT(*sampler.Annotation(), HasSubstr(R"("bytesPerSecond":2033)"));
}

TEST_F(TrafficSamplerTest, APodWhoseNamespaceCannotBeReadIsReportedAndLeftOut) {
  const NodePod web = Pod("web", {"10.0.0.1"}), db = Pod("db", {"10.0.0.2"});
  const NodePod lost = Pod("lost", {"10.0.0.3"});  // no container in the runtime
  Run(web);  // no namespace entry: the read fails
  const std::string db_ns = Run(db);
  reader_.Set(db_ns, {});
  TrafficSampler sampler = Sampler();
  TrafficSampleReport report = sampler.Sample(std::vector<NodePod>{web, db, lost});
  EXPECT_EQ(report.pods_read, 1);
  EXPECT_THAT(report.failures,
              ElementsAre("shop/web: setns: Operation not permitted",
                          "shop/lost: no running container with a known pid"));
}

TEST_F(TrafficSamplerTest, ARuntimeThatIsDownIsReportedOnceAndNothingIsRead) {
  const NodePod web = Pod("web", {"10.0.0.1"});
  Run(web);
  runtime_.SetDown(true);
  TrafficSampler sampler = Sampler();
  TrafficSampleReport report = sampler.Sample(std::vector<NodePod>{web});
  EXPECT_EQ(report.pods_read, 0);
  ASSERT_EQ(report.failures.size(), 1u);
  EXPECT_THAT(report.failures[0], HasSubstr("runtime: "));
  EXPECT_TRUE(reader_.Reads().empty());
}

TEST_F(TrafficSamplerTest, PodsThatCannotBeListedMakeNoRoundAndKeepThePublishedSummary) {
  const NodePod web = Pod("web", {"10.0.0.1"}), db = Pod("db", {"10.0.0.2"});
  const std::string web_ns = Run(web);
  Run(db);
  TrafficSampler sampler = Sampler();
  reader_.Set(web_ns, {Conn("10.0.0.1", 4000, "10.0.0.2", 5432, 0)});
  sampler.Sample(std::vector<NodePod>{web, db});
  clock_.Advance(seconds(10));
  reader_.Set(web_ns, {Conn("10.0.0.1", 4000, "10.0.0.2", 5432, 1000)});
  sampler.Sample(std::vector<NodePod>{web, db});
  const std::optional<std::string> published = sampler.Annotation();
  ASSERT_TRUE(published.has_value());
  clock_.Advance(seconds(10));
  const size_t reads = reader_.Reads().size();
  TrafficSampleReport report = sampler.Sample(absl::UnavailableError("apiserver down"));
  EXPECT_THAT(report.failures, ElementsAre("pods: apiserver down"));
  EXPECT_FALSE(report.changed);
  EXPECT_EQ(sampler.Annotation(), published);
  EXPECT_EQ(reader_.Reads().size(), reads);
  EXPECT_EQ(sampler.NextSampleAt(), clock_.Now() + seconds(10));
}

TEST_F(TrafficSamplerTest, OnlyTheTopPairsArePublished) {
  const NodePod a = Pod("a", {"10.0.0.1"}), b = Pod("b", {"10.0.0.2"}), c = Pod("c", {"10.0.0.3"});
  const std::string a_ns = Run(a);
  Run(b);
  Run(c);
  TrafficSampler sampler = Sampler(/*top_pairs=*/1);
  reader_.Set(a_ns, {Conn("10.0.0.1", 1, "10.0.0.2", 80, 0),
                              Conn("10.0.0.1", 2, "10.0.0.3", 80, 0)});
  sampler.Sample(std::vector<NodePod>{a, b, c});
  clock_.Advance(seconds(10));
  reader_.Set(a_ns, {Conn("10.0.0.1", 1, "10.0.0.2", 80, 100),
                              Conn("10.0.0.1", 2, "10.0.0.3", 80, 900)});
  sampler.Sample(std::vector<NodePod>{a, b, c});
  EXPECT_EQ(sampler.Annotation(),
            R"({"version":1,"windowSeconds":10,"pairs":[)"
            R"({"a":"shop/a","b":"shop/c","bytesPerSecond":90}]})");
}

}  // namespace
}  // namespace huygens::agent
