#include "sim/report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fmt/format.h"

namespace huygens::sim {
namespace {

double Round(double v, double scale) { return std::round(v * scale) / scale; }

// `memory`: Report::memory_modelled (the memory keys appear only then); `devices`:
// Report::devices_modelled, `affinity`: Report::affinity_figures, `moves`:
// Report::has_rebalance (likewise).
nlohmann::json RunToJson(const RunReport& r, bool detail, bool memory, bool devices,
                         bool affinity, bool moves) {
  nlohmann::json j;
  j["scheduled"] = r.scheduled;
  j["unschedulable"] = r.unschedulable;
  j["unschedulableReasons"] = r.unschedulable_reasons;
  j["admissionRejected"] = r.admission_rejected;
  j["admissionRejectedReasons"] = r.admission_rejected_reasons;
  j["admissionFailedPods"] = r.admission_failed_pods;
  if (memory) {
    j["memoryAdmissionRejected"] = r.memory_admission_rejected;
    j["remoteMemoryPods"] = r.remote_memory_pods;
    j["memoryUnpinnedPods"] = r.memory_unpinned_pods;
  }
  if (devices) {
    j["deviceAdmissionRejected"] = r.device_admission_rejected;
    j["devicePods"] = r.device_pods;
    j["deviceMisalignedPods"] = r.device_misaligned_pods;
  }
  j["resizes"] = r.resizes;
  j["resizesRefused"] = r.resizes_refused;
  j["resizeRefusedReasons"] = r.resize_refused_reasons;
  j["pods"] = r.pods;
  j["exclusivePods"] = r.exclusive_pods;
  j["singleNumaRatio"] = Round(r.single_numa_ratio, 1e6);
  j["meanNumaNodesPerPod"] = Round(r.mean_numa_nodes_per_pod, 1e6);
  j["multiSocketPods"] = r.multi_socket_pods;
  j["fitsOneNumaPods"] = r.fits_one_numa_pods;
  j["fitsOneNumaSingleRatio"] = Round(r.fits_one_numa_single_ratio, 1e6);
  j["sharedSiblingCores"] = r.shared_sibling_cores;
  j["sharedSiblingCoresMean"] = Round(r.shared_sibling_cores_mean, 1e3);
  j["exclusiveUtilisationMean"] = Round(r.exclusive_utilisation_mean, 1e6);
  j["exclusiveUtilisationPeak"] = Round(r.exclusive_utilisation_peak, 1e6);
  j["fragmentedCpusPeak"] = r.fragmented_cpus_peak;
  j["fragmentedCpusMean"] = Round(r.fragmented_cpus_mean, 1e3);
  if (affinity) {
    j["groupAlignedShare"] = r.group_aligned_share
                                 ? nlohmann::json(Round(*r.group_aligned_share, 1e6))
                                 : nlohmann::json(nullptr);
    j["groupMembersColocatedMean"] = Round(r.group_members_colocated_mean, 1e3);
    j["numaLoadSpreadMean"] = Round(r.numa_load_spread_mean, 1e3);
  }
  if (moves) {
    j["rebalanceMoves"] = r.rebalance_moves;
    j["rebalanceMovedCpus"] = r.rebalance_moved_cpus;
    j["rebalanceIntervals"] = r.rebalance_intervals;
  }
  j["attempts"] = r.attempts;
  j["schedulingErrors"] = r.scheduling_errors;
  j["attemptsPerSecond"] = Round(r.attempts_per_second, 1);
  j["latencyMicros"] = {{"p50", Round(r.p50_micros, 10)},
                        {"p90", Round(r.p90_micros, 10)},
                        {"p99", Round(r.p99_micros, 10)},
                        {"max", Round(r.max_micros, 10)}};
  j["simulatedSeconds"] = Round(r.simulated_seconds, 1e3);
  if (detail) {
    nlohmann::json timeline = nlohmann::json::array();
    for (const TimelineSample& s : r.timeline) {
      timeline.push_back({{"t", Round(s.seconds, 1e3)},
                          {"exclusiveUtilisation", Round(s.exclusive_utilisation, 1e4)},
                          {"sharedSiblingCores", s.shared_sibling_cores},
                          {"fragmentedCpus", s.fragmented_cpus},
                          {"runningPods", s.running_pods},
                          {"pendingPods", s.pending_pods}});
      if (affinity) {
        timeline.back()["groupMembersColocated"] = s.group_members_colocated;
        timeline.back()["groupMembersAligned"] = s.group_members_aligned;
        timeline.back()["numaLoadSpread"] = Round(s.numa_load_spread, 1e3);
      }
    }
    j["timeline"] = std::move(timeline);
    nlohmann::json maps = nlohmann::json::array();
    for (const CpuMap& m : r.cpu_maps) {
      nlohmann::json cpus = nlohmann::json::array();
      for (const CpuMap::Cpu& c : m.cpus) {
        cpus.push_back({c.id, c.core, c.socket, c.numa, c.user ? 1 : 0, c.pod});
      }
      maps.push_back({{"node", m.node}, {"shape", m.shape}, {"t", Round(m.seconds, 1e3)},
                      {"pods", m.pods}, {"cpus", std::move(cpus)}});
    }
    j["cpuMaps"] = std::move(maps);
  }
  return j;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A stable colour per pod name.
std::string PodColour(const std::string& name) {
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return fmt::format("hsl({},{}%,{}%)", h % 360, 55 + (h >> 9) % 30, 45 + (h >> 17) % 20);
}

// The runs in the report, in column order: huygens, huygens+rebalance when it ran, then nrt
// and baseline when they ran.
std::vector<const RunReport*> Runs(const Report& rep) {
  std::vector<const RunReport*> runs = {&rep.huygens};
  if (rep.has_rebalance) runs.push_back(&rep.huygens_rebalance);
  if (rep.has_baseline) {
    runs.push_back(&rep.nrt);
    runs.push_back(&rep.baseline);
  }
  return runs;
}

// The columns of the table, in order, each with its run (nullptr: a peer that did not run,
// shown as "-"): huygens, [huygens+rebalance], nrt, baseline.
std::vector<std::pair<std::string, const RunReport*>> Columns(const Report& rep) {
  std::vector<std::pair<std::string, const RunReport*>> columns = {{"huygens", &rep.huygens}};
  if (rep.has_rebalance) columns.emplace_back("huygens+rebalance", &rep.huygens_rebalance);
  columns.emplace_back("nrt", rep.has_baseline ? &rep.nrt : nullptr);
  columns.emplace_back("baseline", rep.has_baseline ? &rep.baseline : nullptr);
  return columns;
}

// A run's name as a CSS class ("huygens+rebalance" -> "huygens-rebalance").
std::string CssClass(std::string name) {
  std::replace(name.begin(), name.end(), '+', '-');
  return name;
}

// One line chart (SVG) of `value` over every run's timeline; a sample whose value is NaN (not
// defined there) is left out.
template <typename F>
std::string Chart(const std::string& title, const Report& rep, F value, bool percent) {
  const int w = 560, h = 180, pad = 40;
  double tmax = 0, vmax = percent ? 1.0 : 1.0;
  const std::vector<const RunReport*> runs = Runs(rep);
  for (const RunReport* r : runs) {
    for (const TimelineSample& s : r->timeline) {
      tmax = std::max(tmax, s.seconds);
      if (!std::isnan(value(s))) vmax = std::max(vmax, value(s));
    }
  }
  if (tmax <= 0) tmax = 1;
  std::string svg = fmt::format(
      "<figure><figcaption>{}</figcaption><svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\">"
      "<rect x=\"{}\" y=\"10\" width=\"{}\" height=\"{}\" class=\"plot\"/>",
      Escape(title), w, h, w, h, pad, w - pad - 10, h - pad - 10);
  svg += fmt::format("<text x=\"{}\" y=\"20\" class=\"axis\" text-anchor=\"end\">{}</text>", pad - 4,
                     percent ? fmt::format("{:.0f}%", vmax * 100) : fmt::format("{:.0f}", vmax));
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"end\">0</text>", pad - 4,
                     h - pad);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"end\">{:.0f} s</text>",
                     w - 10, h - pad + 16, tmax);
  for (const RunReport* r : runs) {
    std::string points;
    for (const TimelineSample& s : r->timeline) {
      if (std::isnan(value(s))) continue;
      const double x = pad + (s.seconds / tmax) * (w - pad - 10);
      const double y = 10 + (h - pad - 10) * (1 - value(s) / vmax);
      points += fmt::format("{:.1f},{:.1f} ", x, y);
    }
    svg += fmt::format("<polyline class=\"{}\" points=\"{}\"/>", CssClass(r->scheduler), points);
  }
  svg += "</svg></figure>";
  return svg;
}

std::string CpuMapHtml(const CpuMap& m) {
  // Group by socket, then NUMA node, then core.
  std::map<int, std::map<int, std::map<int, std::vector<const CpuMap::Cpu*>>>> tree;
  for (const CpuMap::Cpu& c : m.cpus) tree[c.socket][c.numa][c.core].push_back(&c);
  std::string html = fmt::format("<div class=\"node\"><h4>{} <small>{} &middot; at {:.0f} s</small></h4>",
                                 Escape(m.node), Escape(m.shape), m.seconds);
  for (const auto& [socket, numas] : tree) {
    html += fmt::format("<div class=\"socket\"><span class=\"lbl\">socket {}</span>", socket);
    for (const auto& [numa, cores] : numas) {
      html += fmt::format("<div class=\"numa\"><span class=\"lbl\">NUMA {}</span>", numa);
      for (const auto& [core, cpus] : cores) {
        html += "<span class=\"core\">";
        for (const CpuMap::Cpu* c : cpus) {
          if (!c->user) {
            html += fmt::format("<i class=\"sys\" title=\"cpu {} (system)\"></i>", c->id);
          } else if (c->pod < 0) {
            html += fmt::format("<i title=\"cpu {} free\"></i>", c->id);
          } else {
            const std::string& name = m.pods[static_cast<size_t>(c->pod)];
            html += fmt::format("<i data-pod=\"{0}\" style=\"background:{1}\" title=\"cpu {2}: {0}\"></i>",
                                Escape(name), PodColour(name), c->id);
          }
        }
        html += "</span>";
      }
      html += "</div>";
    }
    html += "</div>";
  }
  html += "</div>";
  return html;
}

struct Row {
  std::string label;
  std::vector<std::string> cells;  // one per column of Columns()
};

std::vector<Row> SummaryRows(const Report& rep) {
  const auto columns = Columns(rep);
  auto both = [&](const std::string& label, auto f) {
    Row row{label, {}};
    for (const auto& [name, run] : columns) row.cells.push_back(run != nullptr ? f(*run) : "-");
    return row;
  };
  std::vector<Row> rows;
  rows.push_back(both("pods", [](const RunReport& r) { return fmt::format("{}", r.pods); }));
  rows.push_back(both("scheduled", [](const RunReport& r) { return fmt::format("{}", r.scheduled); }));
  rows.push_back(both("unschedulable at end", [](const RunReport& r) { return fmt::format("{}", r.unschedulable); }));
  rows.push_back(both("rejected at admission", [](const RunReport& r) { return fmt::format("{}", r.admission_rejected); }));
  rows.push_back(both("given up after re-creation", [](const RunReport& r) { return fmt::format("{}", r.admission_failed_pods); }));
  if (rep.memory_modelled) {
    rows.push_back(both("rejected for memory", [](const RunReport& r) { return fmt::format("{}", r.memory_admission_rejected); }));
    rows.push_back(both("remote-memory pods", [](const RunReport& r) { return fmt::format("{}", r.remote_memory_pods); }));
    rows.push_back(both("memory not pinned (None)", [](const RunReport& r) { return fmt::format("{}", r.memory_unpinned_pods); }));
  }
  if (rep.devices_modelled) {
    rows.push_back(both("rejected for devices", [](const RunReport& r) { return fmt::format("{}", r.device_admission_rejected); }));
    rows.push_back(both("device-misaligned / with devices", [](const RunReport& r) { return fmt::format("{} / {}", r.device_misaligned_pods, r.device_pods); }));
  }
  rows.push_back(both("resizes refused / tried", [](const RunReport& r) { return fmt::format("{} / {}", r.resizes_refused, r.resizes); }));
  rows.push_back(both("exclusive pods", [](const RunReport& r) { return fmt::format("{}", r.exclusive_pods); }));
  rows.push_back(both("on one NUMA node", [](const RunReport& r) { return fmt::format("{:.1f}%", r.single_numa_ratio * 100); }));
  rows.push_back(both("mean NUMA nodes per pod", [](const RunReport& r) { return fmt::format("{:.3f}", r.mean_numa_nodes_per_pod); }));
  rows.push_back(both("pods across sockets", [](const RunReport& r) { return fmt::format("{}", r.multi_socket_pods); }));
  if (rep.affinity_figures) {
    rows.push_back(both("group members aligned on one NUMA node", [](const RunReport& r) {
      return r.group_aligned_share ? fmt::format("{:.1f}%", *r.group_aligned_share * 100)
                                   : std::string("-");
    }));
    rows.push_back(both("group members co-located (mean)", [](const RunReport& r) { return fmt::format("{:.1f}", r.group_members_colocated_mean); }));
    rows.push_back(both("NUMA load spread (mean CPUs)", [](const RunReport& r) { return fmt::format("{:.2f}", r.numa_load_spread_mean); }));
  }
  if (rep.has_rebalance) {
    rows.push_back(both("rebalancer moves / CPUs moved", [](const RunReport& r) {
      return fmt::format("{} / {}", r.rebalance_moves, r.rebalance_moved_cpus);
    }));
  }
  rows.push_back(both("SMT-shared cores (peak)", [](const RunReport& r) { return fmt::format("{}", r.shared_sibling_cores); }));
  rows.push_back(both("exclusive utilisation mean/peak", [](const RunReport& r) {
    return fmt::format("{:.1f}% / {:.1f}%", r.exclusive_utilisation_mean * 100, r.exclusive_utilisation_peak * 100);
  }));
  rows.push_back(both("fragmented CPUs mean/peak", [](const RunReport& r) {
    return fmt::format("{:.0f} / {}", r.fragmented_cpus_mean, r.fragmented_cpus_peak);
  }));
  rows.push_back(both("scheduling attempts", [](const RunReport& r) { return fmt::format("{}", r.attempts); }));
  rows.push_back(both("latency p50/p99 (us)", [](const RunReport& r) {
    return fmt::format("{:.1f} / {:.1f}", r.p50_micros, r.p99_micros);
  }));
  rows.push_back(both("scheduling attempts per second", [](const RunReport& r) { return fmt::format("{:.0f}", r.attempts_per_second); }));
  return rows;
}

}  // namespace

nlohmann::json ReportToJson(const Report& rep, bool detail) {
  nlohmann::json j;
  j["version"] = 1;
  nlohmann::json groups = nlohmann::json::array();
  for (const Report::Group& g : rep.groups) {
    groups.push_back({{"name", g.name},
                      {"count", g.count},
                      {"shape", g.shape},
                      {"cpusPerNode", g.cpus_per_node},
                      {"numaNodesPerNode", g.numa_nodes_per_node},
                      {"topologyPolicy", g.topology_policy},
                      {"topologyScope", g.topology_scope}});
    if (rep.memory_modelled) groups.back()["memoryManager"] = g.memory_manager;
  }
  j["cluster"] = {{"source", rep.cluster_source},
                  {"nodes", rep.nodes},
                  {"cpus", rep.cpus},
                  {"groups", std::move(groups)},
                  {"cpuMapSampleNodes", rep.cpu_map_sample_nodes}};
  j["workload"] = {{"source", rep.workload_source}, {"seed", rep.seed}};
  j["nrtScoring"] = rep.has_baseline ? nlohmann::json(rep.nrt_scoring) : nlohmann::json(nullptr);
  const bool memory = rep.memory_modelled;
  const bool devices = rep.devices_modelled;
  const bool affinity = rep.affinity_figures;
  const bool moves = rep.has_rebalance;
  j["huygens"] = RunToJson(rep.huygens, detail, memory, devices, affinity, moves);
  if (rep.has_rebalance) {
    const double interval = static_cast<double>(rep.rebalance_interval_us) / 1e6;
    j["rebalance"] = {{"intervalSeconds", Round(interval, 1e6)},
                      {"maxMoves", rep.rebalance_max_moves},
                      {"balance", rep.rebalance_balance}};
    j["huygensRebalance"] = RunToJson(rep.huygens_rebalance, detail, memory, devices, affinity, moves);
  }
  j["nrt"] = rep.has_baseline ? RunToJson(rep.nrt, detail, memory, devices, affinity, moves)
                              : nlohmann::json(nullptr);
  j["baseline"] = rep.has_baseline ? RunToJson(rep.baseline, detail, memory, devices, affinity, moves)
                                   : nlohmann::json(nullptr);
  return j;
}

std::string ReportToTable(const Report& rep) {
  std::string out = fmt::format("cluster: {} ({} nodes, {} CPUs)\nworkload: {} (seed {})\n\n",
                                rep.cluster_source, rep.nodes, rep.cpus, rep.workload_source,
                                rep.seed);
  const std::vector<Row> rows = SummaryRows(rep);
  const auto columns = Columns(rep);
  size_t w0 = 0;
  std::vector<size_t> widths;
  for (const auto& [name, run] : columns) widths.push_back(name.size());
  for (const Row& r : rows) {
    w0 = std::max(w0, r.label.size());
    for (size_t c = 0; c < r.cells.size(); ++c) widths[c] = std::max(widths[c], r.cells[c].size());
  }
  out += fmt::format("{:<{}}", "", w0);
  for (size_t c = 0; c < columns.size(); ++c) {
    out += fmt::format("  {:>{}}", columns[c].first, widths[c]);
  }
  out += "\n";
  for (const Row& r : rows) {
    out += fmt::format("{:<{}}", r.label, w0);
    for (size_t c = 0; c < r.cells.size(); ++c) {
      out += fmt::format("  {:>{}}", r.cells[c], widths[c]);
    }
    out += "\n";
  }
  // Reasons for every column (a peer that did not run counts 0).
  std::string names;
  for (const auto& [name, run] : columns) names += (names.empty() ? "" : " ") + name;
  using Reasons = std::map<std::string, int> RunReport::*;
  auto reasons = [&](const std::string& title, Reasons field) {
    std::map<std::string, std::vector<int>> merged;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].second == nullptr) continue;
      for (const auto& [k, v] : columns[i].second->*field) {
        merged.try_emplace(k, std::vector<int>(columns.size(), 0)).first->second[i] = v;
      }
    }
    if (merged.empty()) return;
    out += fmt::format("\n{} ({}):\n", title, names);
    for (const auto& [k, v] : merged) {
      out += " ";
      for (int n : v) out += fmt::format(" {:>6}", n);
      out += fmt::format("  {}\n", k);
    }
  };
  reasons("unschedulable pods by reason", &RunReport::unschedulable_reasons);
  reasons("admission rejections by reason", &RunReport::admission_rejected_reasons);
  return out;
}

std::string ReportToHtml(const Report& rep) {
  std::string html = R"(<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Huygens simulation report</title><style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}
td:first-child,th:first-child{text-align:left}
figure{display:inline-block;margin:8px}figcaption{font-weight:600}
.plot{fill:#fafafa;stroke:#ccc}.axis{font-size:11px;fill:#666}
polyline{fill:none;stroke-width:1.5}polyline.huygens{stroke:#1565c0}polyline.huygens-rebalance{stroke:#6a1b9a;stroke-dasharray:5 2}polyline.nrt{stroke:#2e7d32}polyline.baseline{stroke:#e65100}
.key span{display:inline-block;width:14px;height:3px;margin:0 4px 3px 12px}
.maps{display:flex;gap:24px;flex-wrap:wrap}.run{flex:1;min-width:480px}
.node{margin:8px 0;padding:6px;border:1px solid #ddd}.node h4{margin:0 0 4px}
.socket{border:1px solid #999;margin:3px;padding:3px}.numa{border:1px dashed #bbb;margin:2px;padding:2px}
.lbl{font-size:11px;color:#666;display:block}
.core{display:inline-flex;flex-direction:column;margin:1px;border:1px solid #eee}
.core i{display:block;width:9px;height:9px;background:#e8e8e8;margin:0}
.core i.sys{background:#555}.core i.hl{outline:2px solid #000}
</style></head><body>
<h1>Huygens simulation report</h1>
)";
  html += fmt::format("<p>Cluster: {} &mdash; {} nodes, {} CPUs. Workload: {} (seed {}).</p>",
                      Escape(rep.cluster_source), rep.nodes, rep.cpus,
                      Escape(rep.workload_source), rep.seed);
  html += "<table><tr><th>group</th><th>nodes</th><th>shape</th><th>CPUs</th><th>NUMA</th><th>policy</th></tr>";
  for (const Report::Group& g : rep.groups) {
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {}{}</td></tr>",
                        Escape(g.name), g.count, Escape(g.shape), g.cpus_per_node,
                        g.numa_nodes_per_node, g.topology_policy, g.topology_scope,
                        g.memory_manager.empty() ? "" : ", memory manager " + g.memory_manager);
  }
  html += "</table><h2>Huygens vs. nrt and baseline</h2><table><tr><th></th>";
  for (const auto& [name, run] : Columns(rep)) html += fmt::format("<th>{}</th>", Escape(name));
  html += "</tr>";
  for (const Row& r : SummaryRows(rep)) {
    html += fmt::format("<tr><td>{}</td>", Escape(r.label));
    for (const std::string& cell : r.cells) html += fmt::format("<td>{}</td>", Escape(cell));
    html += "</tr>";
  }
  html += fmt::format(
      "</table><p>nrt is the NUMA-aware scheduler users pick today: kube-scheduler with "
      "scheduler-plugins' NodeResourceTopologyMatch (scoring strategy {}) reading each node's "
      "NodeResourceTopology; baseline is the stock NUMA-blind scheduler. Both are followed by "
      "kubelet's topology manager and static CPU manager on the chosen node.</p>",
      rep.has_baseline ? Escape(rep.nrt_scoring) : std::string("-"));
  if (rep.memory_modelled) {
    html += "<p>Memory (groups with a memory manager): <i>rejected for memory</i> counts "
            "kubelet rejections the memory manager caused (the CPU hints alone would have been "
            "admitted, or its Allocate failed); <i>remote-memory pods</i> are exclusive pods with "
            "memory on a NUMA node none of their CPUs is on; <i>memory not pinned</i> counts "
            "exclusive pods on nodes whose kubelet runs the memory manager None (nothing sets "
            "their cpuset.mems; Huygens sets it itself).</p>";
  }
  if (rep.devices_modelled) {
    html += "<p>Devices (groups with NUMA-affine devices): <i>rejected for devices</i> counts "
            "kubelet rejections the device manager caused (the merge without its hints would "
            "have been admitted, or its devices ran out); <i>device-misaligned</i> counts "
            "exclusive pods whose devices and CPUs lie on different NUMA node sets (a device "
            "off the CPUs' NUMA nodes, or CPUs on a NUMA node without any of its devices), out "
            "of the exclusive pods holding devices.</p>";
  }
  if (rep.affinity_figures) {
    html += "<p>Affinity groups: <i>group members aligned on one NUMA node</i> is, over the "
            "timeline samples, the share of the running exclusive members of same-numa and "
            "nearest groups that share their node with other members of their group (that one "
            "NUMA node could hold together) and lie, with all of those, on one NUMA node; "
            "<i>NUMA load spread</i> is the most minus the "
            "fewest exclusive CPUs held on one NUMA node of a node, averaged over the nodes "
            "with two or more NUMA nodes and over the timeline.</p>";
  }
  if (rep.has_rebalance) {
    html += fmt::format(
        "<p>huygens+rebalance is the Huygens run again with the rebalancer: every {:g} s of "
        "simulated time it plans at most {} moves per node{} and carries them out; "
        "<i>rebalancer moves / CPUs moved</i> counts them and the CPUs the moved pods did not "
        "hold before.</p>",
        static_cast<double>(rep.rebalance_interval_us) / 1e6, rep.rebalance_max_moves,
        rep.rebalance_balance ? ", evening the NUMA load too" : "");
  }
  html += "<h2>Over time</h2><p class=\"key\"><span style=\"background:#1565c0\"></span>huygens";
  if (rep.has_rebalance) {
    html += "<span style=\"background:#6a1b9a\"></span>huygens+rebalance";
  }
  html += "<span style=\"background:#2e7d32\"></span>nrt"
          "<span style=\"background:#e65100\"></span>baseline</p>";
  html += Chart("Exclusive CPU utilisation", rep,
                [](const TimelineSample& s) { return s.exclusive_utilisation; }, true);
  html += Chart("Cores shared by two pods' SMT siblings", rep,
                [](const TimelineSample& s) { return double(s.shared_sibling_cores); }, false);
  html += Chart("Fragmented free CPUs (cannot host a 4-CPU single-NUMA pod)", rep,
                [](const TimelineSample& s) { return double(s.fragmented_cpus); }, false);
  html += Chart("Pending pods", rep,
                [](const TimelineSample& s) { return double(s.pending_pods); }, false);
  if (rep.affinity_figures) {
    html += Chart("Group members aligned on one NUMA node (of those co-located)", rep,
                  [](const TimelineSample& s) {
                    return s.group_members_colocated == 0
                               ? std::nan("")
                               : double(s.group_members_aligned) / s.group_members_colocated;
                  },
                  true);
    html += Chart("NUMA load spread (exclusive CPUs, most minus fewest, mean over nodes)", rep,
                  [](const TimelineSample& s) { return s.numa_load_spread; }, false);
  }
  html += "<h2>CPU maps</h2>";
  if (rep.cpu_map_sample_nodes < rep.nodes) {
    html += fmt::format("<p>A sample of {} of the {} nodes (the first node of each group, then "
                        "round-robin), each at the moment of its run's peak exclusive "
                        "utilisation. Grey: free; dark: system CPUs; a colour per pod (hover to "
                        "see which).</p>",
                        rep.cpu_map_sample_nodes, rep.nodes);
  } else {
    html += "<p>Every node, at the moment of its run's peak exclusive utilisation. Grey: free; "
            "dark: system CPUs; a colour per pod (hover to see which).</p>";
  }
  html += "<div class=\"maps\">";
  for (const RunReport* r : Runs(rep)) {
    html += fmt::format("<div class=\"run\"><h3>{}</h3>", r->scheduler);
    for (const CpuMap& m : r->cpu_maps) html += CpuMapHtml(m);
    html += "</div>";
  }
  html += R"(</div><script>
document.querySelectorAll('.core i[data-pod]').forEach(function(c){
  c.addEventListener('mouseenter',function(){var p=c.dataset.pod;
    document.querySelectorAll('.core i[data-pod]').forEach(function(o){o.classList.toggle('hl',o.dataset.pod===p);});});
});
</script></body></html>
)";
  return html;
}

std::string ExplanationToText(const PodExplanation& e) {
  std::string out = fmt::format("pod {} at {:.3f} s: {} nodes judged", e.pod, e.seconds,
                                e.nodes.size());
  out += "\n";
  if (static_cast<size_t>(e.visited_nodes) < e.nodes.size()) {
    out += fmt::format("  the scheduler visited {} of them, from where its last attempt stopped "
                       "until it had found enough\n  feasible nodes (percentageOfNodesToScore), "
                       "and chose among those; the others are marked (not visited)\n",
                       e.visited_nodes);
  }
  out += "  each plugin's score 0..100 (its weight in parentheses); total: the weighted sum\n";
  std::string header = fmt::format("  {:<24} {:>7}", "node", "total");
  for (size_t p = 0; p < e.score_plugins.size(); ++p) {
    header += fmt::format(" {:>16}", fmt::format("{}({})", e.score_plugins[p], e.weights[p]));
  }
  out += header + "\n";
  for (const PodExplanation::NodeVerdict& n : e.nodes) {
    if (!n.filter.empty()) {
      out += fmt::format("  {:<24} refused by {}: {}{}\n", n.node, n.filter, n.reason,
                         n.visited ? "" : " (not visited)");
      continue;
    }
    std::string line = fmt::format("  {:<24} {:>7}", n.node, n.total);
    for (int64_t s : n.scores) line += fmt::format(" {:>16}", s);
    out += line + (n.visited ? "\n" : "  (not visited)\n");
  }
  if (e.outcome == "scheduled") {
    out += fmt::format("  -> scheduled on {}, NUMA nodes {}", e.node, fmt::join(e.numa_nodes, ","));
    for (const auto& [container, cpuset] : e.cpusets) {
      out += fmt::format(", {} cpuset {}", container, cpuset.empty() ? "(shared)" : cpuset);
    }
    out += "\n";
    const auto chosen = std::find_if(e.nodes.begin(), e.nodes.end(),
                                     [&](const auto& n) { return n.node == e.node; });
    if (chosen != e.nodes.end()) {
      const auto tied = std::count_if(e.nodes.begin(), e.nodes.end(), [&](const auto& n) {
        return n.filter.empty() && n.visited && n.total == chosen->total;
      });
      if (tied > 1) {
        out += fmt::format("     {} visited nodes tied at {}; the first visited wins\n", tied,
                           chosen->total);
      }
    }
  } else {
    out += fmt::format("  -> {}: {}\n", e.outcome, e.message);
  }
  return out;
}

}  // namespace huygens::sim
