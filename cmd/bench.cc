// `huygens bench schedule`: scheduling throughput, latency and memory of the Huygens scheduler
// on a large simulated cluster. Prints one JSON line. Not a test: numbers depend on the machine.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "cmd/command.h"
#include "nlohmann/json.hpp"
#include "sim/example.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace huygens::cmd {
namespace {

struct BenchArgs {
  int nodes = 5000;
  int pods = 150000;
  uint64_t seed = 1;
  double utilisation = 0.9;
  std::string clock = "wall";  // "wall" or "thread-cpu"
};

// CPU time this thread has used, in nanoseconds: time the thread spent switched out (a busy
// shared machine) does not count.
int64_t ThreadCpuNs() {
  struct timespec ts {};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return int64_t{usage.ru_maxrss} * 1024;  // Linux reports KiB
}

int RunBench(const BenchArgs& a) {
  const auto start = std::chrono::steady_clock::now();
  auto cluster = sim::MixedShapesCluster(a.nodes);
  if (!cluster.ok()) {
    std::fprintf(stderr, "huygens bench: %s\n", std::string(cluster.status().message()).c_str());
    return 2;
  }
  int64_t cpus = 0;
  for (const sim::NodeGroupSpec& g : cluster->groups) {
    cpus += int64_t{g.count} * g.topology->NumCpus();
  }
  auto workload = sim::ScaledExampleWorkload(a.pods, cpus, a.utilisation);
  if (!workload.ok()) {
    std::fprintf(stderr, "huygens bench: %s\n", std::string(workload.status().message()).c_str());
    return 2;
  }
  const std::vector<sim::PodArrival> arrivals = sim::GenerateArrivals(*workload, a.seed);
  sim::SimulationOptions options;
  options.timeline_samples = 0;
  options.cpu_map_nodes = 0;
  if (a.clock == "thread-cpu") options.clock_ns = ThreadCpuNs;
  const auto run_start = std::chrono::steady_clock::now();
  const int64_t run_cpu_start = ThreadCpuNs();
  auto run = sim::RunSimulation(*cluster, arrivals, sim::Scheduler::kHuygens, options);
  const auto end = std::chrono::steady_clock::now();
  const int64_t run_cpu_ns = ThreadCpuNs() - run_cpu_start;
  if (!run.ok()) {
    std::fprintf(stderr, "huygens bench: %s\n", std::string(run.status().message()).c_str());
    return 1;
  }
  const double run_seconds = std::chrono::duration<double>(end - run_start).count();
  nlohmann::json j;
  j["benchmark"] = "schedule";
  j["nodes"] = a.nodes;
  j["cpus"] = cpus;
  j["pods"] = static_cast<int64_t>(arrivals.size());
  j["clock"] = a.clock;
  j["attempts"] = run->attempts;
  j["scheduled"] = run->scheduled;
  j["unschedulable"] = run->unschedulable;
  j["attemptsPerSecond"] = std::round(run->attempts_per_second);
  j["p50Micros"] = run->p50_micros;
  j["p90Micros"] = run->p90_micros;
  j["p99Micros"] = run->p99_micros;
  j["maxMicros"] = run->max_micros;
  j["singleNumaRatio"] = run->single_numa_ratio;
  // Including the simulator's own work (events, queue, checks) around the scheduler.
  j["simulationPodsPerSecond"] =
      std::round(static_cast<double>(arrivals.size()) / std::max(run_seconds, 1e-9));
  j["setupSeconds"] = std::chrono::duration<double>(run_start - start).count();
  j["runSeconds"] = run_seconds;
  j["runCpuSeconds"] = static_cast<double>(run_cpu_ns) / 1e9;
  j["peakRssBytes"] = PeakRssBytes();
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

void Setup(CLI::App& app, int& exit_code) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks (numbers depend on the machine).");
  bench->require_subcommand(1);
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = bench->add_subcommand(
      "schedule",
      "Scheduling throughput on one thread: a cluster of mixed real server shapes (up to 384\n"
      "CPUs per node) and a stream of pod arrivals whose CPU-request mix follows the Alibaba\n"
      "openb trace, with departures keeping the cluster about --utilisation full. Prints one\n"
      "JSON line: attemptsPerSecond (attempts / time inside ScheduleOne), p50Micros, p99Micros,\n"
      "peakRssBytes (getrusage), and more. Goal: >= 20000 pods/s, < 1 GiB.");
  sub->add_option("--nodes", args->nodes, "Nodes (default 5000)")->check(AtLeast(1));
  sub->add_option("--pods", args->pods, "Pod arrivals (default 150000)")
      ->check(AtLeast(0));
  sub->add_option("--seed", args->seed, "Workload seed (default 1)");
  sub->add_option("--utilisation", args->utilisation,
                  "Share of the cluster's CPUs requested on average (default 0.9)")
      ->check(CLI::Range(0.01, 10.0));
  sub->add_option("--clock", args->clock,
                  "Clock read around each attempt: wall (default; steady_clock) or thread-cpu\n"
                  "(this thread's CPU time: steadier on a shared machine, ~0.5 us dearer)")
      ->check(CLI::IsMember({"wall", "thread-cpu"}));
  sub->callback([args, &exit_code] { exit_code = RunBench(*args); });
}

}  // namespace

HUYGENS_COMMAND("bench", Setup);

}  // namespace huygens::cmd
