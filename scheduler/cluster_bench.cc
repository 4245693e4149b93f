// Side by side on one real kube-apiserver (testbed/cluster.sh): the same 1,000 nodes and the
// same 5,000 pods, scheduled by (i) kube-scheduler with its default profile, (ii)
// huygens-scheduler standalone, (iii) kube-scheduler with the Huygens extender, each in two
// flavours (Run says how each is timed):
//   arrival   the pods created one after another while the scheduler runs: pods bound per second
//             (first create to last binding), p50/p99 from a pod's creation to its binding (both
//             on this process's clock: the create call's return and the watch event that shows
//             spec.nodeName);
//   backlog   (BM_Backlog_*, as kube-scheduler's scheduler_perf measures) every pod created
//             pending first, then the scheduler started: pods/s from the first binding to the
//             last, done_s from the start to the last binding; (i) and (iii) only.
// Each row also has the scheduler's peak RSS (VmHWM; for (iii) kube-scheduler's plus the
// extender's) and the share of exclusive pods whose cpuset is NUMA-aligned (one NUMA node).
//
//   testbed/cluster.sh up /tmp/tb --apply deploy/crd
//   HUYGENS_TESTBED_DIR=/tmp/tb build/scheduler/scheduler_cluster_bench --benchmark_counters_tabular=true
//   HUYGENS_TESTBED_DIR=/tmp/tb build/scheduler/scheduler_cluster_bench --benchmark_filter=Backlog
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
#include <string>
#include <thread>
#include <vector>

#include "kube/api_error.h"
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

// The scheduler(s) of `mode`, each on the real apiserver with its own credentials; the extender
// (huygens-scheduler in extender mode) on `extender_port`.
std::vector<std::unique_ptr<kube::testing::Process>> StartSchedulers(const Testbed& tb, Mode mode, int extender_port) {
  const std::string& dir = tb.dir;
  std::vector<std::unique_ptr<kube::testing::Process>> schedulers;
  if (mode == Mode::kHuygens || mode == Mode::kKubeSchedulerWithExtender) {
    const std::string config = dir + "/bench-scheduler.yaml";
    std::ofstream(config) << fmt::format(
        "clientConnection: {{qps: 5000, burst: 5000}}\nleaderElection: {{leaderElect: false}}\n"
        // The template mix has 1-CPU containers, which full-cores (the default) cannot place on
        // SMT machines: the simulator's node groups bind packed (sim/cluster_spec.h).
        "profiles:\n- defaultBindPolicy: packed\n"
        "extender: {{enabled: {}, address: 127.0.0.1:{}}}\nmetricsAddress: 127.0.0.1:0\n",
        mode == Mode::kKubeSchedulerWithExtender ? "true" : "false", extender_port);
    schedulers.push_back(std::make_unique<kube::testing::Process>(
        std::vector<std::string>{HUYGENS_SCHEDULER_BIN, "--config", config, "--kubeconfig", dir + "/admin.kubeconfig",
                                 "--log-level", "warn"},
        dir + "/logs/bench-huygens.log"));
  }
  if (mode == Mode::kHuygens) return schedulers;
  const std::string ks = dir + "/bench-kube-scheduler.yaml";
  const std::string extender =
      mode == Mode::kKubeSchedulerWithExtender
          ? "extenders:\n- urlPrefix: http://127.0.0.1:" + std::to_string(extender_port) +
                "\n  filterVerb: filter\n  prioritizeVerb: prioritize\n"
                // As deploy/kube-scheduler/extender-config.yaml, but without managedResources:
                // the workload's pods ask plain cpu (kube-scheduler refuses it there), so every
                // pod goes to the extender.
                "  bindVerb: bind\n  weight: 1\n  nodeCacheCapable: true\n  ignorable: false\n"
          : "";
  std::ofstream(ks) << fmt::format(
      "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
      "clientConnection: {{kubeconfig: {}/scheduler.kubeconfig, qps: 5000, burst: 5000}}\n"
      "leaderElection: {{leaderElect: false}}\n{}",
      dir, extender);
  schedulers.push_back(std::make_unique<kube::testing::Process>(
      std::vector<std::string>{tb.kube_bin + "/kube-scheduler", "--config", ks, "--authentication-kubeconfig",
                               dir + "/scheduler.kubeconfig", "--authorization-kubeconfig",
                               dir + "/scheduler.kubeconfig", "--secure-port", "0", "--v", "1"},
      dir + "/logs/bench-kube-scheduler.log"));
  return schedulers;
}

// The testbed emptied, with the 1,000 nodes, through a fake in upstream mode (the admin's
// hands); `cluster_cpus` set to their CPUs. Null, with the error on `state`, on failure.
std::unique_ptr<FakeApiServer> Cluster(benchmark::State& state, const Testbed& tb, int64_t& cluster_cpus) {
  kube::testing::FakeApiServerOptions options;
  options.upstream = kube::testing::UpstreamOptions{tb.dir + "/admin.kubeconfig", ""};
  auto server = FakeApiServer::Start(options);
  if (!server.ok()) {
    state.SkipWithError(std::string(server.status().message()).c_str());
    return nullptr;
  }
  auto cluster = sim::MixedShapesCluster(kNodes);
  cluster_cpus = 0;
  for (const sim::NodeGroupSpec& group : cluster->groups) {
    for (int i = 0; i < group.count; ++i) {
      if (!testing::AddNode(**server, fmt::format("{}-{}", group.name, i), *group.topology)) {
        state.SkipWithError("creating a node failed");
        return nullptr;
      }
      cluster_cpus += group.topology->NumCpus();
    }
  }
  return *std::move(server);
}

// The bindings of the pods in namespace default, as a watch from now sees them (on this
// process's clock), until kPods are bound or Stop(). A watch the apiserver closes (it drops a
// watcher that falls behind: "unresponsiveness" on a loaded machine) is resumed from the last
// version seen, or from now when that is too old (410).
class BindingWatch {
 public:
  explicit BindingWatch(kube::Client* client)
      : thread_([this, client] {
          kube::WatchOptions w;  // from now: ADDED for the pods there
          w.bookmarks = false;
          while (!cancel_ && !Done()) {
            absl::Status s = client->Watch(kube::Pods(), "default", w, [&](const kube::WatchEvent& e) {
              if (e.type == "ERROR") {  // 410 as an event: resume from now
                w.resource_version.clear();
                return false;
              }
              w.resource_version = e.object["metadata"].value("resourceVersion", w.resource_version);
              if (e.object["spec"].value("nodeName", "").empty()) return true;
              std::lock_guard<std::mutex> lock(mu_);
              bound_.emplace(e.object["metadata"]["name"].get<std::string>(), SteadyClock::now());
              return static_cast<int>(bound_.size()) < kPods;
            }, &cancel_);
            if (kube::IsApiGone(s)) w.resource_version.clear();
          }
        }) {}
  ~BindingWatch() { Stop(); }
  // Whether every pod is bound.
  bool Done() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(bound_.size()) >= kPods;
  }
  // Waits until every pod is bound or `deadline`.
  void Wait(SteadyClock::time_point deadline) {
    kube::testing::WaitFor([&] { return Done(); },
                           std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()),
                           std::chrono::milliseconds(20));
  }
  // Stops watching and returns the bindings seen: pod name -> when.
  std::map<std::string, SteadyClock::time_point> Stop() {
    cancel_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    return bound_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, SteadyClock::time_point> bound_;
  std::atomic<bool> cancel_{false};
  std::thread thread_;
};

// The counters that read the cluster after a run: peak RSS of `schedulers`, and the exclusive
// pods with a cpuset and how many of them are on one NUMA node.
void CountPlacements(benchmark::State& state, FakeApiServer& server,
                     const std::vector<std::unique_ptr<kube::testing::Process>>& schedulers) {
  double rss = 0;
  for (const auto& p : schedulers) rss += PeakRss(p->pid());
  int exclusive = 0, aligned = 0;
  for (const json& pod : server.List("pods", "default")) {
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
  state.counters["peak_rss_MiB"] = rss / (1024.0 * 1024.0);
  state.counters["numa_aligned_exclusive"] = static_cast<double>(aligned);
  state.counters["exclusive_with_cpuset"] = static_cast<double>(exclusive);
}

// The p-quantile of `sorted` (0 when empty).
double Quantile(const std::vector<double>& sorted, double q) {
  return sorted.empty() ? 0.0 : sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1))];
}

// The admin's client of the testbed, with scheduler_perf's client limits. Null, with the error
// on `state`, on failure.
std::unique_ptr<kube::Client> AdminClient(benchmark::State& state, const Testbed& tb) {
  auto admin = kube::LoadKubeconfig(tb.dir + "/admin.kubeconfig");
  if (!admin.ok()) {
    state.SkipWithError(std::string(admin.status().message()).c_str());
    return nullptr;
  }
  admin->qps = 5000;
  admin->burst = 5000;
  auto rest = kube::RestClient::Create(*admin);
  if (!rest.ok()) {
    state.SkipWithError(std::string(rest.status().message()).c_str());
    return nullptr;
  }
  return std::make_unique<kube::Client>(std::move(*rest));
}

// The counters of the bindings seen (pod name -> when) since `start`. With `created` (arrival):
// pods/s from `start` to the last binding, and p50/p99 from creation to binding. Without
// (backlog): pods/s from the first binding to the last, and done_s from `start` to the last.
void CountBindings(benchmark::State& state, const std::map<std::string, SteadyClock::time_point>& bound,
                   const std::map<std::string, SteadyClock::time_point>* created, SteadyClock::time_point start) {
  std::vector<double> latencies;
  SteadyClock::time_point first = SteadyClock::time_point::max(), last = start;
  for (const auto& [name, at] : bound) {
    if (created != nullptr) {
      if (auto c = created->find(name); c != created->end()) {
        latencies.push_back(std::chrono::duration<double>(at - c->second).count());
      }
    }
    first = std::min(first, at);
    last = std::max(last, at);
  }
  std::sort(latencies.begin(), latencies.end());
  const SteadyClock::time_point from = created != nullptr ? start : std::min(first, last);
  state.counters["pods"] = static_cast<double>(bound.size());
  state.counters["pods_per_second"] =
      static_cast<double>(bound.size()) / std::max(1e-9, std::chrono::duration<double>(last - from).count());
  if (created != nullptr) {
    state.counters["p50_s"] = Quantile(latencies, 0.5);
    state.counters["p99_s"] = Quantile(latencies, 0.99);
  } else {
    state.counters["done_s"] = std::chrono::duration<double>(last - start).count();
  }
}

// Arrival: pods created one after another by one client while the scheduler runs; pods/s from
// the first create to the last binding, p50/p99 from each pod's creation to its binding.
// Backlog (`backlog`, as scheduler_perf measures): every pod created pending first, then the
// scheduler started; pods/s from the first binding to the last, and done_s from the scheduler's
// start to the last binding.
void Run(benchmark::State& state, Mode mode, bool backlog) {
  auto tb = FindTestbed();
  if (!tb) {
    state.SkipWithError("HUYGENS_TESTBED_DIR names no testbed (testbed/cluster.sh up DIR)");
    return;
  }
  for (auto _ : state) {
    state.PauseTiming();
    int64_t cluster_cpus = 0;
    std::unique_ptr<FakeApiServer> server = Cluster(state, *tb, cluster_cpus);
    if (server == nullptr) return;
    std::vector<json> pods = Pods(mode == Mode::kHuygens ? "huygens-scheduler" : "default-scheduler", cluster_cpus);
    std::unique_ptr<kube::Client> client = AdminClient(state, *tb);
    if (client == nullptr) return;
    std::map<std::string, SteadyClock::time_point> created;
    auto create_all = [&] {
      for (const json& pod : pods) {
        if (client->Create(kube::Pods(), "default", pod).ok()) created.emplace(pod["metadata"]["name"].get<std::string>(), SteadyClock::now());
      }
    };
    if (backlog) create_all();
    std::vector<std::unique_ptr<kube::testing::Process>> schedulers;
    if (!backlog) {
      schedulers = StartSchedulers(*tb, mode, kube::testing::FreePort());
      std::this_thread::sleep_for(std::chrono::seconds(3));  // informers listed
    }
    BindingWatch watch(client.get());
    state.ResumeTiming();
    const SteadyClock::time_point start = SteadyClock::now();
    if (backlog) {
      schedulers = StartSchedulers(*tb, mode, kube::testing::FreePort());
    } else {
      create_all();
    }
    watch.Wait(start + std::chrono::minutes(backlog ? 20 : 10));
    state.PauseTiming();
    const std::map<std::string, SteadyClock::time_point> bound = watch.Stop();

    CountPlacements(state, *server, schedulers);
    schedulers.clear();  // SIGTERM, SIGKILL after 10 s
    CountBindings(state, bound, backlog ? nullptr : &created, start);
    state.ResumeTiming();
  }
}

void BM_KubeSchedulerDefault(benchmark::State& state) { Run(state, Mode::kKubeScheduler, false); }
void BM_HuygensStandalone(benchmark::State& state) { Run(state, Mode::kHuygens, false); }
void BM_KubeSchedulerWithHuygensExtender(benchmark::State& state) { Run(state, Mode::kKubeSchedulerWithExtender, false); }
void BM_Backlog_KubeSchedulerDefault(benchmark::State& state) { Run(state, Mode::kKubeScheduler, true); }
void BM_Backlog_KubeSchedulerWithHuygensExtender(benchmark::State& state) {
  Run(state, Mode::kKubeSchedulerWithExtender, true);
}
BENCHMARK(BM_KubeSchedulerDefault)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_HuygensStandalone)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_KubeSchedulerWithHuygensExtender)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_Backlog_KubeSchedulerDefault)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_Backlog_KubeSchedulerWithHuygensExtender)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace huygens::scheduler
