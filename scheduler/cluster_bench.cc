// Side by side on one real kube-apiserver (testbed/cluster.sh): the same 1,000 nodes and the
// same 5,000 pods, scheduled by (i) kube-scheduler with its default profile, (ii)
// huygens-scheduler standalone, (iii) kube-scheduler with the Huygens extender. Each row: pods
// bound per second (first create to last binding), p50/p99 from a pod's creation to its binding
// (both taken on this process's clock: the create call's return and the watch event that shows
// spec.nodeName), the scheduler's peak RSS (VmHWM; for (iii) kube-scheduler's plus the
// extender's), and the share of exclusive pods whose cpuset is NUMA-aligned (one NUMA node).
//
//   testbed/cluster.sh up /tmp/tb --apply deploy/crd
//   HUYGENS_TESTBED_DIR=/tmp/tb build/scheduler/scheduler_cluster_bench --benchmark_counters_tabular=true
//
// Client rate limits are raised as kube-scheduler's own scheduler_perf does (QPS and burst 5000)
// for both schedulers. Without HUYGENS_TESTBED_DIR every row is skipped with the reason.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/process.h"
#include "node/allocation.h"
#include "scheduler/test_cluster.h"
#include "sim/example.h"

namespace huygens::scheduler {
namespace {

using kube::testing::FakeApiServer;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr int kNodes = 1000;
constexpr int kPods = 5000;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The testbed's files: DIR/admin.kubeconfig, DIR/scheduler.kubeconfig, DIR/env (KUBE_BIN).
struct Testbed {
  std::string dir;
  std::string kube_bin;
};

std::optional<Testbed> FindTestbed() {
  Testbed tb{Env("HUYGENS_TESTBED_DIR"), ""};
  if (tb.dir.empty()) return std::nullopt;
  std::ifstream env(tb.dir + "/env");
  for (std::string line; std::getline(env, line);) {
    if (line.rfind("HUYGENS_TESTBED_KUBE_BIN=", 0) == 0) tb.kube_bin = line.substr(line.find('=') + 1);
  }
  if (tb.kube_bin.empty()) return std::nullopt;
  return tb;
}

// Peak resident set of a running process, bytes (VmHWM).
double PeakRss(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) * 1024.0;
  }
  return 0;
}


// The workload: the built-in example's template mix, 5,000 pods, as Pod objects.
std::vector<json> Pods(const std::string& scheduler_name, int64_t cluster_cpus) {
  auto workload = sim::ScaledExampleWorkload(kPods, cluster_cpus, 0.3);
  std::vector<json> out;
  if (!workload.ok()) return out;
  std::vector<sim::PodArrival> arrivals = sim::GenerateArrivals(*workload, 1);
  for (int i = 0; i < kPods && i < static_cast<int>(arrivals.size()); ++i) {
    json pod = testing::PodObject(arrivals[static_cast<std::size_t>(i)].pod, fmt::format("pod-{:04}", i));
    pod["spec"]["schedulerName"] = scheduler_name;
    out.push_back(std::move(pod));
  }
  return out;
}

enum class Mode { kKubeScheduler, kHuygens, kKubeSchedulerWithExtender };

void Run(benchmark::State& state, Mode mode) {
  auto tb = FindTestbed();
  if (!tb) {
    state.SkipWithError("HUYGENS_TESTBED_DIR names no testbed (testbed/cluster.sh up DIR)");
    return;
  }
  for (auto _ : state) {
    state.PauseTiming();
    // The cluster, emptied, with the nodes; a fake in upstream mode is the admin's hands.
    kube::testing::FakeApiServerOptions options;
    options.upstream = kube::testing::UpstreamOptions{tb->dir + "/admin.kubeconfig", ""};
    auto server = FakeApiServer::Start(options);
    if (!server.ok()) {
      state.SkipWithError(std::string(server.status().message()).c_str());
      return;
    }
    auto cluster = sim::MixedShapesCluster(kNodes);
    int64_t cluster_cpus = 0;
    for (const sim::NodeGroupSpec& group : cluster->groups) {
      for (int i = 0; i < group.count; ++i) {
        if (!testing::AddNode(**server, fmt::format("{}-{}", group.name, i), *group.topology)) {
          state.SkipWithError("creating a node failed");
          return;
        }
        cluster_cpus += group.topology->NumCpus();
      }
    }
    const std::string scheduler_name = mode == Mode::kHuygens ? "huygens-scheduler" : "default-scheduler";
    std::vector<json> pods = Pods(scheduler_name, cluster_cpus);

    // The scheduler(s), each on the real apiserver with its own credentials.
    std::string dir = tb->dir;
    std::vector<std::unique_ptr<kube::testing::Process>> schedulers;
    const int extender_port = kube::testing::FreePort();
    std::string config = dir + "/bench-scheduler.yaml";
    if (mode == Mode::kHuygens || mode == Mode::kKubeSchedulerWithExtender) {
      std::ofstream(config) << fmt::format(
          "clientConnection: {{qps: 5000, burst: 5000}}\nleaderElection: {{leaderElect: false}}\n"
          // The template mix has 1-CPU containers, which full-cores (the default) cannot place on
          // SMT machines: the simulator's node groups bind packed (sim/cluster_spec.h).
          "profiles:\n- defaultBindPolicy: packed\n"
          "extender: {{enabled: {}, address: 127.0.0.1:{}}}\nmetricsAddress: 127.0.0.1:0\n",
          mode == Mode::kKubeSchedulerWithExtender ? "true" : "false", extender_port);
      schedulers.push_back(std::make_unique<kube::testing::Process>(std::vector<std::string>{HUYGENS_SCHEDULER_BIN, "--config", config, "--kubeconfig", dir + "/admin.kubeconfig",
                            "--log-level", "warn"},
                           dir + "/logs/bench-huygens.log"));
    }
    if (mode != Mode::kHuygens) {
      std::string ks = dir + "/bench-kube-scheduler.yaml";
      std::string extender =
          mode == Mode::kKubeSchedulerWithExtender
              ? "extenders:\n- urlPrefix: http://127.0.0.1:" + std::to_string(extender_port) + "\n  filterVerb: filter\n  prioritizeVerb: prioritize\n"
                // As deploy/kube-scheduler/extender-config.yaml: no managedResources (kube-scheduler
                // refuses plain cpu there), so every pod goes to the extender.
                "  bindVerb: bind\n  weight: 1\n  nodeCacheCapable: true\n  ignorable: false\n"
              : "";
      std::ofstream(ks) << fmt::format(
          "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
          "clientConnection: {{kubeconfig: {}/scheduler.kubeconfig, qps: 5000, burst: 5000}}\n"
          "leaderElection: {{leaderElect: false}}\n{}",
          dir, extender);
      schedulers.push_back(std::make_unique<kube::testing::Process>(std::vector<std::string>{tb->kube_bin + "/kube-scheduler", "--config", ks, "--authentication-kubeconfig",
                            dir + "/scheduler.kubeconfig", "--authorization-kubeconfig", dir + "/scheduler.kubeconfig",
                            "--secure-port", "0", "--v", "1"},
                           dir + "/logs/bench-kube-scheduler.log"));
    }
    std::this_thread::sleep_for(std::chrono::seconds(3));  // informers listed

    // Bindings seen by a watch; creation times taken when each create returns.
    std::mutex mu;
    std::map<std::string, SteadyClock::time_point> created, bound;
    std::atomic<bool> cancel{false};
    auto admin = kube::LoadKubeconfig(dir + "/admin.kubeconfig");
    if (!admin.ok()) {
      state.SkipWithError(std::string(admin.status().message()).c_str());
      return;
    }
    admin->qps = 5000;
    admin->burst = 5000;
    auto rest = kube::RestClient::Create(*admin);
    if (!rest.ok()) {
      state.SkipWithError("rest client");
      return;
    }
    kube::Client client(std::move(*rest));
    std::thread watcher([&] {
      kube::WatchOptions w;
      w.resource_version = std::to_string((*server)->resource_version());
      w.bookmarks = false;
      (void)client.Watch(kube::Pods(), "default", w, [&](const kube::WatchEvent& e) {
        if (e.object["spec"].value("nodeName", "").empty()) return true;
        std::lock_guard<std::mutex> lock(mu);
        bound.emplace(e.object["metadata"]["name"].get<std::string>(), SteadyClock::now());
        return static_cast<int>(bound.size()) < kPods;
      }, &cancel);
    });
    state.ResumeTiming();
    auto start = SteadyClock::now();
    for (const json& pod : pods) {
      if (!client.Create(kube::Pods(), "default", pod).ok()) continue;
      std::lock_guard<std::mutex> lock(mu);
      created.emplace(pod["metadata"]["name"].get<std::string>(), SteadyClock::now());
    }
    auto deadline = start + std::chrono::minutes(10);
    kube::testing::WaitFor([&] {
      std::lock_guard<std::mutex> lock(mu);
      return static_cast<int>(bound.size()) >= kPods;
    }, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()), std::chrono::milliseconds(20));
    state.PauseTiming();
    cancel = true;
    watcher.join();

    std::vector<double> latencies;
    SteadyClock::time_point last = start;
    for (const auto& [name, at] : bound) {
      auto c = created.find(name);
      if (c != created.end()) latencies.push_back(std::chrono::duration<double>(at - c->second).count());
      last = std::max(last, at);
    }
    std::sort(latencies.begin(), latencies.end());
    auto pct = [&](double q) {
      return latencies.empty() ? 0.0 : latencies[static_cast<std::size_t>(q * static_cast<double>(latencies.size() - 1))];
    };
    double rss = 0;
    for (const auto& p : schedulers) rss += PeakRss(p->pid());
    // NUMA alignment of the exclusive pods, read back from the apiserver.
    int exclusive = 0, aligned = 0;
    for (const json& pod : (*server)->List("pods", "default")) {
      auto annotations = pod["metadata"].value("annotations", json::object());
      if (!annotations.contains(kAllocationAnnotation)) continue;
      auto a = AllocationFromJson(annotations[kAllocationAnnotation].get<std::string>(), "");
      if (!a.ok()) continue;
      bool any_exclusive = std::any_of(a->containers.begin(), a->containers.end(),
                                       [](const ContainerAllocation& c) { return c.exclusive; });
      if (!any_exclusive) continue;
      ++exclusive;
      if (a->numa_nodes.size() == 1) ++aligned;
    }
    schedulers.clear();  // SIGTERM, SIGKILL after 10 s
    state.counters["pods"] = static_cast<double>(bound.size());
    state.counters["pods_per_second"] = static_cast<double>(bound.size()) /
                                        std::max(1e-9, std::chrono::duration<double>(last - start).count());
    state.counters["p50_s"] = pct(0.5);
    state.counters["p99_s"] = pct(0.99);
    state.counters["peak_rss_MiB"] = rss / (1024.0 * 1024.0);
    state.counters["numa_aligned_exclusive"] = static_cast<double>(aligned);
    state.counters["exclusive_with_cpuset"] = static_cast<double>(exclusive);
    state.ResumeTiming();
  }
}

void BM_KubeSchedulerDefault(benchmark::State& state) { Run(state, Mode::kKubeScheduler); }
void BM_HuygensStandalone(benchmark::State& state) { Run(state, Mode::kHuygens); }
void BM_KubeSchedulerWithHuygensExtender(benchmark::State& state) { Run(state, Mode::kKubeSchedulerWithExtender); }
BENCHMARK(BM_KubeSchedulerDefault)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_HuygensStandalone)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_KubeSchedulerWithHuygensExtender)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace huygens::scheduler
