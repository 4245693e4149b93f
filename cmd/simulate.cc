// `huygens simulate`: runs a workload over a modelled cluster with Huygens and with the
// baseline (stock scheduler + kubelet admission) and reports both side by side.
// With no arguments it runs the built-in example. See docs/simulate.md.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "base/duration.h"
#include "cmd/command.h"
#include "fmt/format.h"
#include "sched/profile.h"
#include "sim/cluster_spec.h"
#include "sim/example.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace huygens::cmd {
namespace {

struct SimulateArgs {
  std::vector<std::string> inputs;
  std::string nodes_csv;
  std::string json_path;
  std::string html_path;
  std::optional<uint64_t> seed;
  bool no_baseline = false;
  bool trace_round_up = false;
  int trace_max_pods = 0;
  int64_t trace_max_creation = 0;
  int64_t trace_time_compression = 1;
  std::string nodes_policy = "single-numa-node";
  int nodes_system_cpus = 2;
  int max_admission_retries = 3;
  std::string nrt_scoring = sched::ToString(sched::NrtScoring::kLeastAllocated);
  int cpu_map_nodes = 6;
  bool check = false;
  bool quiet = false;
  std::string explain;
  // The trace-only options given (--trace-*), refused without a .csv trace.
  std::vector<std::string> trace_options;
  // The rebalancer column: on with --rebalance, any --rebalance-* option, or a workload spec
  // with a `rebalance` block; the options override the spec's values.
  bool rebalance = false;
  std::optional<std::string> rebalance_interval;
  std::optional<int> rebalance_max_moves;
  bool rebalance_balance = false;
};

bool EndsWith(const std::string& s, const char* suffix) { return s.ends_with(suffix); }

// Progress on stderr once a run has taken more than a second: a bar when stderr is a
// terminal, a log line every 10% otherwise.
class Progress {
 public:
  Progress() : start_(std::chrono::steady_clock::now()), tty_(isatty(STDERR_FILENO) == 1) {}
  void Update(double fraction) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed < 1.0) return;
    const int percent = static_cast<int>(fraction * 100);
    if (tty_) {
      if (percent == last_) return;
      const int filled = percent * 40 / 100;
      std::fprintf(stderr, "\r[%s%s] %3d%% %5.1fs", std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(40 - filled), '.').c_str(), percent, elapsed);
      shown_ = true;
    } else {
      if (percent / 10 == last_ / 10 && last_ >= 0) return;
      std::fprintf(stderr, "huygens simulate: %d%% after %.1f s\n", percent, elapsed);
    }
    last_ = percent;
  }
  void Finish() {
    if (tty_ && shown_) std::fprintf(stderr, "\n");
  }

 private:
  std::chrono::steady_clock::time_point start_;
  bool tty_;
  bool shown_ = false;
  int last_ = -1;
};

// Writes `text` to `path`; false with errno's text in `*error` when it cannot.
bool WriteFile(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (out) return true;
  *error = std::strerror(errno);
  return false;
}

int RunSimulate(const SimulateArgs& a) {
  std::string cluster_path, workload_path, trace_path;
  for (const std::string& in : a.inputs) {
    if (EndsWith(in, ".csv")) {
      if (!trace_path.empty()) {
        std::fprintf(stderr, "huygens simulate: two trace files given (%s, %s)\n",
                     trace_path.c_str(), in.c_str());
        return 2;
      }
      trace_path = in;
    } else if (EndsWith(in, ".yaml") || EndsWith(in, ".yml")) {
      if (cluster_path.empty() && a.nodes_csv.empty()) {
        cluster_path = in;
      } else if (workload_path.empty()) {
        workload_path = in;
      } else {
        std::fprintf(stderr, "huygens simulate: %s: one cluster and one workload at most\n",
                     in.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "huygens simulate: %s: expected a .yaml spec or a .csv trace\n", in.c_str());
      return 2;
    }
  }
  if (!workload_path.empty() && !trace_path.empty()) {
    std::fprintf(stderr, "huygens simulate: give a workload YAML or a trace CSV, not both\n");
    return 2;
  }
  // An option that would change nothing is refused rather than ignored.
  if (trace_path.empty() && !a.trace_options.empty()) {
    std::fprintf(stderr, "huygens simulate: %s applies to a .csv pod trace, and none is given\n",
                 a.trace_options.front().c_str());
    return 2;
  }
  if (!trace_path.empty() && a.seed) {
    std::fprintf(stderr,
                 "huygens simulate: --seed seeds the workload generator; a .csv trace has none\n");
    return 2;
  }
  // Cluster.
  sim::Report meta;
  absl::StatusOr<sim::ClusterSpec> cluster;
  if (!cluster_path.empty()) {
    cluster = sim::LoadClusterSpec(cluster_path);
    meta.cluster_source = cluster_path;
  } else if (!a.nodes_csv.empty()) {
    sim::NodeGroupSpec defaults;
    auto policy = ParseTopologyPolicy(a.nodes_policy);
    if (!policy) {
      std::fprintf(stderr, "huygens simulate: --nodes-policy: unknown policy %s\n",
                   a.nodes_policy.c_str());
      return 2;
    }
    defaults.topology_policy = *policy;
    defaults.system_cpu_count = a.nodes_system_cpus;
    cluster = sim::LoadNodeListCsv(a.nodes_csv, defaults);
    meta.cluster_source = a.nodes_csv;
  } else {
    cluster = sim::ExampleCluster();
    meta.cluster_source = "built-in example cluster";
  }
  if (!cluster.ok()) {
    std::fprintf(stderr, "huygens simulate: %s\n", std::string(cluster.status().message()).c_str());
    return 2;
  }
  // Workload.
  std::vector<sim::PodArrival> arrivals;
  uint64_t seed = a.seed.value_or(1);
  std::optional<sim::RebalanceSettings> rebalance;
  if (!trace_path.empty()) {
    sim::TraceOptions to;
    to.round_up_exclusive = a.trace_round_up;
    to.max_pods = a.trace_max_pods;
    to.max_creation_seconds = a.trace_max_creation;
    to.time_compression = a.trace_time_compression;
    auto trace = sim::LoadTrace(trace_path, to);
    if (!trace.ok()) {
      std::fprintf(stderr, "huygens simulate: %s\n", std::string(trace.status().message()).c_str());
      return 2;
    }
    arrivals = *std::move(trace);
    meta.workload_source = trace_path + (a.trace_round_up ? " (LS rounded up to whole CPUs)" : "");
  } else {
    auto spec = workload_path.empty() ? sim::ExampleWorkload() : sim::LoadWorkloadSpec(workload_path);
    if (!spec.ok()) {
      std::fprintf(stderr, "huygens simulate: %s\n", std::string(spec.status().message()).c_str());
      return 2;
    }
    seed = a.seed.value_or(spec->seed.value_or(1));
    rebalance = spec->rebalance;
    arrivals = sim::GenerateArrivals(*spec, seed);
    meta.workload_source = workload_path.empty() ? "built-in example workload" : workload_path;
  }
  sim::SimulationOptions options;
  const std::optional<sched::NrtScoring> nrt_scoring = sched::ParseNrtScoring(a.nrt_scoring);
  if (!nrt_scoring) {
    std::fprintf(stderr,
                 "huygens simulate: --nrt-scoring: %s is not LeastAllocated, MostAllocated, "
                 "BalancedAllocation or LeastNUMANodes\n",
                 a.nrt_scoring.c_str());
    return 2;
  }
  options.nrt_scoring = *nrt_scoring;
  options.max_admission_retries = a.max_admission_retries;
  options.cpu_map_nodes = a.cpu_map_nodes;
  options.check_every_event = a.check;
  options.explain_pod = a.explain;
  if (a.rebalance || a.rebalance_interval || a.rebalance_max_moves || a.rebalance_balance) {
    if (!rebalance) rebalance.emplace();
    if (a.rebalance_interval) {
      absl::StatusOr<int64_t> us = ParseDuration(*a.rebalance_interval);
      if (!us.ok() || *us <= 0) {
        std::fprintf(stderr,
                     "huygens simulate: --rebalance-interval: %s is not a positive duration "
                     "(60s, 5m, 250ms)\n",
                     a.rebalance_interval->c_str());
        return 2;
      }
      rebalance->interval_us = *us;
    }
    if (a.rebalance_max_moves) rebalance->planner.max_moves = *a.rebalance_max_moves;
    if (a.rebalance_balance) rebalance->planner.balance = true;
  }
  options.rebalance = rebalance;
  Progress progress;
  options.progress = [&progress](double f) { progress.Update(f); };
  auto report = sim::Simulate(*cluster, arrivals, options, !a.no_baseline);
  progress.Finish();
  if (!report.ok()) {
    std::fprintf(stderr, "huygens simulate: %s\n", std::string(report.status().message()).c_str());
    return report.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  report->cluster_source = meta.cluster_source;
  report->workload_source = meta.workload_source;
  report->seed = seed;
  if (!a.quiet) std::fputs(sim::ReportToTable(*report).c_str(), stdout);
  if (!a.explain.empty()) {
    if (report->huygens.explanations.empty()) {
      std::fprintf(stderr, "huygens simulate: --explain: no pod named %s reached the scheduler\n",
                   a.explain.c_str());
      return 2;
    }
    for (const sim::PodExplanation& e : report->huygens.explanations) {
      std::fputs(sim::ExplanationToText(e).c_str(), stdout);
    }
  }
  std::string error;
  if (!a.json_path.empty() &&
      !WriteFile(a.json_path, sim::ReportToJson(*report, /*detail=*/true).dump(1) + "\n",
                 &error)) {
    std::fprintf(stderr, "huygens simulate: --json: cannot write %s: %s\n", a.json_path.c_str(),
                 error.c_str());
    return 1;
  }
  if (!a.html_path.empty() && !WriteFile(a.html_path, sim::ReportToHtml(*report), &error)) {
    std::fprintf(stderr, "huygens simulate: --html: cannot write %s: %s\n", a.html_path.c_str(),
                 error.c_str());
    return 1;
  }
  return 0;
}

void Setup(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Run a workload over a modelled cluster with Huygens, with the NRT peer (kube-scheduler\n"
      "with scheduler-plugins' NodeResourceTopologyMatch) and with the baseline (the stock\n"
      "NUMA-blind scheduler), both peers followed by kubelet's topology manager and static CPU\n"
      "manager, and compare: pods scheduled, unschedulable, rejected at admission\n"
      "(TopologyAffinityError), share of exclusive pods on one NUMA node, SMT-shared cores,\n"
      "utilisation, fragmentation, scheduling latency and throughput.\n\n"
      "With no arguments, runs the built-in example: a cluster of real server shapes (2x EPYC\n"
      "9654 NPS1/NPS4, 2x Xeon 8480+, 2x Xeon 6230 SNC2, 2x Kunpeng 920) and a workload whose\n"
      "CPU-request mix follows the Alibaba openb trace. Specs: docs/simulate.md.\n\n"
      "Examples:\n"
      "  huygens simulate\n"
      "  huygens simulate cluster.yaml workload.yaml --json report.json --html report.html\n"
      "  huygens simulate --nodes-csv openb_node_list_all_node.csv openb_pod_list_default.csv\n\n"
      "Exit status: 0 done, 1 a broken invariant or an output file that cannot be written,\n"
      "2 bad input (the message names the file, line and field).");
  sub->add_option("inputs", args->inputs,
                  "[CLUSTER.yaml] [WORKLOAD.yaml | TRACE.csv]: a .yaml is the cluster spec (or, "
                  "with --nodes-csv or as the second .yaml, the workload spec); a .csv is a pod "
                  "trace in the openb_pod_list layout");
  CLI::Option* nodes_csv = sub->add_option(
      "--nodes-csv", args->nodes_csv,
      "Build the cluster from a node list CSV (openb_node_list layout: sn,cpu_milli,"
      "memory_mib,gpu,model); each size gets a preset or synthetic shape");
  sub->add_option("--nodes-policy", args->nodes_policy,
                  "Topology policy of --nodes-csv nodes (default single-numa-node)")
      ->needs(nodes_csv);
  sub->add_option("--nodes-system-cpus", args->nodes_system_cpus,
                  "System CPUs of each --nodes-csv node (default 2)")
      ->check(AtLeast(0))
      ->needs(nodes_csv);
  sub->add_option("--json", args->json_path, "Write the report as JSON (with timelines and CPU maps)");
  sub->add_option("--html", args->html_path, "Write the report as one self-contained HTML page");
  sub->add_option("--seed", args->seed,
                  "Seed of the workload generator (default: the workload's seed, else 1; not "
                  "with a .csv trace)")
      ->check(AtLeast(0));
  CLI::Option* no_baseline =
      sub->add_flag("--no-baseline", args->no_baseline, "Run Huygens only (neither nrt nor baseline)");
  sub->add_option("--nrt-scoring", args->nrt_scoring,
                  "NRT peer: NodeResourceTopologyMatch's scoring strategy, LeastAllocated "
                  "(scheduler-plugins' default), MostAllocated, BalancedAllocation or "
                  "LeastNUMANodes")
      ->excludes(no_baseline);
  const std::vector<CLI::Option*> trace_options = {
      sub->add_flag("--trace-round-up", args->trace_round_up,
                    "Trace: round fractional LS/Guaranteed CPU requests up to whole CPUs and run "
                    "them exclusively (default: only whole-CPU requests are exclusive)"),
      sub->add_option("--trace-max-pods", args->trace_max_pods,
                      "Trace: read at most N pods (0 = all)")
          ->check(AtLeast(0)),
      sub->add_option("--trace-max-creation", args->trace_max_creation,
                      "Trace: only pods created before this many seconds (0 = all)")
          ->check(AtLeast(0)),
      sub->add_option("--trace-time-compression", args->trace_time_compression,
                      "Trace: divide trace times by N (default 1)")
          ->check(AtLeast(1))};
  sub->add_option("--max-admission-retries", args->max_admission_retries,
                  "nrt and baseline: re-creations of a pod kubelet rejected (default 3)")
      ->check(AtLeast(0))
      ->excludes(no_baseline);
  sub->add_option("--cpu-map-nodes", args->cpu_map_nodes,
                  "Nodes whose CPU map the report shows (default 6)")
      ->check(AtLeast(0));
  sub->add_flag("--rebalance", args->rebalance,
                "Run Huygens a second time with the rebalancer (column huygens+rebalance; "
                "settings from the workload's rebalance block, else huygens-scheduler's "
                "defaults: every 30 s, 1 move per node, no balancing)");
  sub->add_option("--rebalance-interval", args->rebalance_interval,
                  "Rebalancer: simulated time between two rounds (default 30s, as huygens-scheduler's; implies "
                  "--rebalance)")
      ->type_name("DURATION");
  sub->add_option("--rebalance-max-moves", args->rebalance_max_moves,
                  "Rebalancer: most moves per node per round (default 1; implies --rebalance)")
      ->check(AtLeast(0));
  sub->add_flag("--rebalance-balance", args->rebalance_balance,
                "Rebalancer: also even the exclusive load of the NUMA nodes (implies "
                "--rebalance)");
  sub->add_flag("--check", args->check,
                "Validate every node's CPU state after every event (slow)");
  sub->add_flag("--quiet,-q", args->quiet, "Do not print the table");
  sub->add_option("--explain", args->explain,
                  "Explain each Huygens scheduling attempt of the pod named POD (e.g. ls-12-7): "
                  "every node's filter verdict, the feasible nodes' scores by plugin, and the "
                  "chosen node, NUMA nodes and cpusets")
      ->type_name("POD");
  sub->callback([args, trace_options, &exit_code] {
    for (const CLI::Option* option : trace_options) {
      if (option->count() > 0) args->trace_options.push_back(option->get_name());
    }
    exit_code = RunSimulate(*args);
  });
}

}  // namespace

HUYGENS_COMMAND("simulate", Setup);

}  // namespace huygens::cmd
