#include "sched/profile.h"

namespace huygens::sched {
namespace {

// kube-scheduler's default filters for the fields Huygens models, cheapest first.
std::vector<std::string> DefaultFilters() {
  return {"NodeUnschedulable", "NodeName",  "TaintToleration",
          "NodeAffinity",      "NodePorts", "NodeResourcesFit"};
}

}  // namespace

Profile HuygensProfile() {
  Profile p;
  p.scheduler_name = "huygens";
  p.filters = DefaultFilters();
  p.filters.push_back("NumaFit");
  p.scores = {{"NodeResourcesFit", 1}, {"NodeAffinity", 2}, {"TaintToleration", 3},
              {"NumaScore", 12},       {"SmtScore", 1}};
  p.reserves = {"NumaReserve"};
  p.resource_scoring = ResourceScoring::kMostAllocated;
  return p;
}

Profile DefaultProfile() {
  Profile p;
  p.scheduler_name = "default-scheduler";
  p.filters = DefaultFilters();
  // kube-scheduler's default weights: NodeResourcesFit 1, NodeAffinity 2, TaintToleration 3.
  p.scores = {{"NodeResourcesFit", 1}, {"NodeAffinity", 2}, {"TaintToleration", 3}};
  p.resource_scoring = ResourceScoring::kLeastAllocated;
  return p;
}

}  // namespace huygens::sched
