// Placement quality as a property (issue 14): over many generated clusters and workloads
// (machine shapes, topology policies and scopes, NUMA strategies, pod mixes with one or several
// containers, init containers, shared pods, utilisation from light to saturated), compared with
// the NRT peer and the stock scheduler, each followed by kubelet, on the same input.
//
// Held on every seed (asserted): Huygens has no admission rejection, and schedules at least as
// many pods. Held over all the seeds together (asserted when they all run): each figure below,
// summed over the seeds, is at least as good as each peer's. Not held on every seed (the test
// prints, per figure, the seeds where Huygens is worse, and HUYGENS_PROPERTY_STRICT=1 makes them
// fail): the share on one NUMA node of the pods that fit one, the SMT-shared cores' peak, and
// the fragmented CPUs' mean and peak. No scheduler can hold these on every workload while it
// schedules as many pods (sim/simulator_test.cc:
// SimulatorTest.NoSchedulerKeepsPodsOnOneNumaNodeThatNoPlacementCanKeepThere and
// NoSchedulerMatchesBothPeersWhenTheyTakeOppositeSidesOfATrade; docs/simulate.md, "The
// figures"). (The raw share on one NUMA node is not compared: the baseline raises it by
// rejecting, at admission, pods that need several NUMA nodes, which Huygens places.)
// It also prints, per peer, the seeds where Huygens is worse on some figure and better on none
// (plain losses) and those where it is worse on one and better on another (trades: the figures
// can conflict, e.g. a NUMA node's last free thread either shares a core or stays stranded).
// Seeds 1-1000 (HUYGENS_PROPERTY_LAST=N runs 1-N). A failure names the seed and the figure;
// rerun one seed with HUYGENS_PROPERTY_SEED=N, and print its specs with
// HUYGENS_PROPERTY_VERBOSE=1. HUYGENS_PROPERTY_TABLE=1 prints one line per seed:
// "T seed", then per run (huygens | nrt | baseline) scheduled, the share on one NUMA node of
// the pods that fit one, the SMT-shared peak, and the fragmented CPUs' mean and peak.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"

namespace huygens::sim {
namespace {

struct Generated {
  std::string cluster;
  std::string workload;
};

// A cluster of 1-3 node groups and a workload of 2-5 pod templates, from `seed`.
Generated Generate(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&rng](auto const& options) {
    return options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
  };
  auto between = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  struct Shape {
    const char* topology;
    int user_cpus_per_node;  // approximate (system CPUs aside), for the arrival rate
    int numa_cpus;           // CPUs of one NUMA node
  };
  const std::vector<Shape> shapes = {
      {"{preset: xeon-6230-2s-snc2}", 78, 20},
      {"{preset: kunpeng-920-2s}", 126, 32},
      {"{synthetic: \"package:2 numa:2 core:4 pu:2\"}", 30, 8},
      {"{synthetic: \"package:2 numa:2 core:6 pu:2\"}", 46, 12},
      {"{synthetic: \"package:1 numa:2 core:8 pu:2\"}", 30, 16},
      {"{synthetic: \"package:2 numa:1 core:12 pu:1\"}", 22, 12},
  };
  const std::vector<const char*> policies = {"single-numa-node", "restricted", "best-effort"};
  Generated g;
  g.cluster = "nodeGroups:\n";
  int user_cpus = 0, smallest_numa = 1 << 20;
  const int groups = between(1, 3);
  for (int i = 0; i < groups; ++i) {
    const Shape& shape = pick(shapes);
    const int count = between(1, 4);
    user_cpus += count * shape.user_cpus_per_node;
    smallest_numa = std::min(smallest_numa, shape.numa_cpus);
    g.cluster += fmt::format(
        "  - {{name: g{}, count: {}, topology: {}, systemCpuCount: {}, topologyPolicy: {}, "
        "topologyScope: {}, numaStrategy: {}}}\n",
        i, count, shape.topology, between(1, 2), pick(policies),
        between(0, 3) == 0 ? "pod" : "container", between(0, 3) == 0 ? "spread" : "pack");
  }
  // Exclusive sizes up to a NUMA node of the largest shapes (some fit no NUMA node of the
  // smaller ones), shared pods, pods with a 1-CPU sidecar, pods with an init container.
  const std::vector<int> sizes = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 13, 16, 19, 24};
  const double utilisation = pick(std::vector<double>{0.3, 0.6, 0.9, 1.2, 1.6});
  const double lifetime_s = 30;
  const int templates = between(2, 5);
  double mean_cpus = 0;
  std::string pods;
  std::vector<int> chosen;
  for (int t = 0; t < templates; ++t) {
    const int cpus = pick(sizes);
    chosen.push_back(cpus);
    mean_cpus += cpus;
  }
  mean_cpus /= templates;
  // Arrivals per second for the whole workload so that, in steady state, the exclusive
  // requests add up to `utilisation` x the user CPUs (Little's law), split over the templates.
  const double rate = utilisation * user_cpus / (mean_cpus * lifetime_s) / templates;
  for (int t = 0; t < templates; ++t) {
    const int cpus = chosen[static_cast<size_t>(t)];
    const int kind = between(0, 9);
    std::string containers;
    auto guaranteed = [](const char* name, int c, bool init = false) {
      return fmt::format("      - {{name: {}, {}requests: {{cpu: {}, memory: 1Gi}}, limits: "
                         "{{cpu: {}, memory: 1Gi}}}}\n",
                         name, init ? "init: true, " : "", c, c);
    };
    if (kind <= 5) {
      containers = guaranteed("app", cpus);
    } else if (kind <= 7) {
      containers = guaranteed("app", cpus) + guaranteed("proxy", 1);
    } else if (kind == 8) {
      containers = guaranteed("setup", std::max(1, cpus / 2), true) + guaranteed("app", cpus);
    } else {
      containers = fmt::format(
          "      - {{name: app, requests: {{cpu: {}m, memory: 1Gi}}}}\n", cpus * 700 + 300);
    }
    pods += fmt::format(
        "  - name: t{}\n    count: {}\n    arrivalsPerSecond: {:.4f}\n"
        "    lifetime: {{distribution: exponential, mean: {}s}}\n    containers:\n{}",
        t, between(20, 60), std::max(rate, 0.05), lifetime_s, containers);
  }
  g.workload = fmt::format("seed: {}\npods:\n{}", seed, pods);
  return g;
}

struct Figure {
  const char* name;
  double huygens;
  double baseline;
  bool higher_is_better;
  bool held;  // asserted on every seed (else reported, and asserted only when strict)
};

std::vector<Figure> Figures(const RunReport& h, const RunReport& b) {
  return {
      {"admission rejections", double(h.admission_rejected), double(b.admission_rejected), false,
       true},
      {"pods scheduled", double(h.scheduled), double(b.scheduled), true, true},
      {"share on one NUMA node of the pods that fit one", h.fits_one_numa_single_ratio,
       b.fits_one_numa_single_ratio, true, false},
      {"SMT-shared cores (peak)", double(h.shared_sibling_cores), double(b.shared_sibling_cores),
       false, false},
      {"fragmented CPUs (mean)", h.fragmented_cpus_mean, b.fragmented_cpus_mean, false, false},
      {"fragmented CPUs (peak)", double(h.fragmented_cpus_peak), double(b.fragmented_cpus_peak),
       false, false},
  };
}

// Whether `a` is worse than `b` on a figure, beyond rounding.
bool Worse(bool higher_is_better, double a, double b) {
  return higher_is_better ? a < b - 1e-9 : a > b + 1e-9;
}

TEST(PlacementProperty, HuygensRejectsNothingAndSchedulesAtLeastAsManyPodsAsEitherPeer) {
  uint64_t first = 1, last = 1000;
  // Figures recorded before the test ran 1000 seeds (docs/scheduler.md, alloc/waste.h) are over
  // seeds 1-120: HUYGENS_PROPERTY_LAST=120.
  if (const char* n = std::getenv("HUYGENS_PROPERTY_LAST")) last = std::stoull(n);
  const char* one = std::getenv("HUYGENS_PROPERTY_SEED");
  const bool all_seeds = one == nullptr;
  if (!all_seeds) first = last = std::stoull(one);
  const bool verbose = std::getenv("HUYGENS_PROPERTY_VERBOSE") != nullptr;
  const bool strict = std::getenv("HUYGENS_PROPERTY_STRICT") != nullptr;
  std::map<std::string, int> worse_seeds;  // figure -> seeds where Huygens is worse
  std::map<std::string, std::vector<uint64_t>> lost, traded;  // peer -> seeds (see below)
  struct Sum {
    double huygens = 0, peer = 0;
    bool higher_is_better = false;
  };
  std::map<std::string, Sum> sums;  // "figure (against peer)" -> the figure summed over seeds
  for (uint64_t seed = first; seed <= last; ++seed) {
    const Generated g = Generate(seed);
    if (verbose) std::printf("seed %llu\n%s\n%s\n", static_cast<unsigned long long>(seed), g.cluster.c_str(), g.workload.c_str());
    auto cluster = ParseClusterSpec(g.cluster, "generated-cluster.yaml");
    ASSERT_TRUE(cluster.ok()) << "seed " << seed << ": " << cluster.status() << "\n" << g.cluster;
    auto workload = ParseWorkloadSpec(g.workload, "generated-workload.yaml");
    ASSERT_TRUE(workload.ok()) << "seed " << seed << ": " << workload.status() << "\n" << g.workload;
    SimulationOptions options;
    options.timeline_samples = 120;
    auto report = Simulate(*cluster, GenerateArrivals(*workload, seed), options);
    ASSERT_TRUE(report.ok()) << "seed " << seed << ": " << report.status();
    const RunReport& h = report->huygens;
    if (std::getenv("HUYGENS_PROPERTY_TABLE") != nullptr) {
      for (const RunReport* r : {&report->huygens, &report->nrt, &report->baseline}) {
        std::printf("T %llu %d %.4f %d %.2f %d | ", static_cast<unsigned long long>(seed),
                    r->scheduled, r->fits_one_numa_single_ratio, r->shared_sibling_cores,
                    r->fragmented_cpus_mean, r->fragmented_cpus_peak);
      }
      std::printf("\n");
    }
    EXPECT_EQ(h.admission_rejected, 0) << "seed " << seed;
    // The bar: 99% of the exclusive pods that fit one NUMA node of some node are on one.
    if (h.fits_one_numa_pods > 0 && h.fits_one_numa_single_ratio < 0.99) {
      ++worse_seeds["under 99% of the pods that fit one NUMA node on one"];
      EXPECT_FALSE(strict) << "seed " << seed << ": " << h.fits_one_numa_single_ratio
                           << " of the pods that fit one NUMA node are on one";
    }
    for (const auto& [peer, run] :
         {std::pair<std::string, const RunReport*>{"baseline", &report->baseline},
          {"nrt", &report->nrt}}) {
      bool worse_any = false, better_any = false;
      for (const Figure& f : Figures(h, *run)) {
        const bool worse = Worse(f.higher_is_better, f.huygens, f.baseline);
        const bool better = Worse(f.higher_is_better, f.baseline, f.huygens);
        worse_any = worse_any || worse;
        better_any = better_any || better;
        const std::string key = std::string(f.name) + " (against " + peer + ")";
        if (worse) ++worse_seeds[key];
        Sum& sum = sums[key];
        sum.huygens += f.huygens;
        sum.peer += f.baseline;
        sum.higher_is_better = f.higher_is_better;
        EXPECT_FALSE(worse && (f.held || strict))
            << "seed " << seed << ": " << f.name << ": huygens " << f.huygens << ", " << peer
            << " " << f.baseline << " (rerun: HUYGENS_PROPERTY_SEED=" << seed
            << " HUYGENS_PROPERTY_VERBOSE=1)";
      }
      // A seed where Huygens loses a figure without winning another is a plain loss; one where
      // it also wins a figure is a trade (for example no shared core against a stranded CPU).
      if (worse_any) (better_any ? traded : lost)[peer].push_back(seed);
    }
  }
  const auto n = static_cast<unsigned long long>(last - first + 1);
  for (const auto& [figure, seeds] : worse_seeds) {
    std::printf("%s: huygens worse on %d of %llu seeds\n", figure.c_str(), seeds, n);
  }
  // Over the seeds together, Huygens is at least as good as each peer on every figure (the
  // per-seed losses are trades, and the figures can conflict: see the file comment).
  if (all_seeds) {
    for (const auto& [figure, sum] : sums) {
      std::printf("%s: summed over the seeds huygens %.2f, peer %.2f\n", figure.c_str(),
                  sum.huygens, sum.peer);
      EXPECT_FALSE(Worse(sum.higher_is_better, sum.huygens, sum.peer))
          << figure << " summed over seeds " << first << "-" << last << ": huygens "
          << sum.huygens << ", peer " << sum.peer;
    }
  }
  for (const auto& [peer, seeds] : lost) {
    std::printf("against %s, huygens worse on some figure and better on none on %zu of %llu "
                "seeds: %s\n",
                peer.c_str(), seeds.size(), n, fmt::format("{}", fmt::join(seeds, " ")).c_str());
  }
  for (const auto& [peer, seeds] : traded) {
    std::printf("against %s, huygens worse on some figure and better on another on %zu of %llu "
                "seeds\n",
                peer.c_str(), seeds.size(), n);
  }
}

}  // namespace
}  // namespace huygens::sim
