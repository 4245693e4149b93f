#include "scheduler/extender_handlers.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "fmt/format.h"
#include "kube/pod_codec.h"
#include "kube/resource.h"
#include "sched/framework.h"
#include "scheduler/objects.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {

using nlohmann::json;

namespace {

// The debug lines of a filter answer, as the standalone loop logs an attempt (LogVerdicts): each
// asked node refused with its reason, or feasible.
void LogFilterVerdict(const ExtenderArgs& args, const FilterVerdict& verdict) {
  std::vector<sched::NodeVerdict> verdicts;
  for (const std::string& name : args.node_names) {
    sched::NodeVerdict v{.node = name};
    if (auto f = verdict.failed.find(name); f != verdict.failed.end()) v.refusal = f->second;
    if (auto f = verdict.failed_unresolvable.find(name); f != verdict.failed_unresolvable.end()) v.refusal = f->second;
    verdicts.push_back(std::move(v));
  }
  LogVerdicts(kube::ObjectKey(args.pod), verdicts);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExtenderHandlers>> ExtenderHandlers::Create(Parts parts) {
  sched::ClusterCache* cache;  // the evaluator keeps its address; reads it under the lock
  {
    CacheSync::Lock lock(parts.state);
    cache = &parts.state->cache();
  }
  auto evaluator = sched::ProfileEvaluator::Create(parts.profiles->front().profile, cache);
  if (!evaluator.ok()) return evaluator.status();
  std::unique_ptr<ExtenderHandlers> h(new ExtenderHandlers(parts));
  h->evaluator_ = *std::move(evaluator);
  return h;
}

serving::HttpReply ExtenderHandlers::Reply(const char* verb, const char* result, int status, std::string body) {
  p_.metrics->extender_requests->Inc({verb, result});
  return serving::HttpReply{.status = status, .content_type = "application/json", .body = std::move(body)};
}
// A malformed request: 400, nothing changed.
serving::HttpReply ExtenderHandlers::BadRequest(const char* verb, const absl::Status& s) {
  const char* key = std::string_view(verb) == "bind" ? "Error" : "error";
  spdlog::warn("{} (answered 400)", std::string(s.message()));
  return Reply(verb, "bad_request", 400, json{{key, std::string(s.message())}}.dump());
}

// The scheduling view of a pod kube-scheduler asks about, prepared with the first profile.
absl::StatusOr<sched::PodPtr> ExtenderHandlers::PreparedPod(const json& object) const {
  if (!p_.state->ready()) return absl::UnavailableError("huygens-scheduler: the cluster cache is not synced yet");
  auto pod = PodFromJson(object);
  if (!pod.ok()) return pod.status();
  PreparePod(*pod, p_.profiles->front(), *p_.config);
  pod->creation_index = p_.state->CreationIndex(pod->Uid());
  return std::make_shared<const sched::Pod>(*std::move(pod));
}

// The cache's nodes for `names` (nullptr where unknown) and the known ones in order.
void ExtenderHandlers::Candidates(const std::vector<std::string>& names, std::vector<const sched::NodeInfo*>& infos,
                                std::vector<const sched::NodeInfo*>& known) const {
  for (const std::string& name : names) {
    infos.push_back(p_.state->cache().FindNode(name));
    if (infos.back() != nullptr) known.push_back(infos.back());
  }
}

serving::HttpReply ExtenderHandlers::Filter(const std::string& body) {
  auto args = ParseExtenderArgs(body, "filter");
  if (!args.ok()) return BadRequest("filter", args.status());
  FilterVerdict verdict;
  CacheSync::Lock lock(p_.state);
  auto pod = PreparedPod(args->pod);
  if (absl::Status current = Current(); !current.ok()) {
    verdict.error = fmt::format("huygens-scheduler: {}", std::string(current.message()));
  } else if (!pod.ok()) {
    verdict.error = std::string(pod.status().message());
  } else if (!HasExclusiveCpus(**pod)) {
    verdict.passed = args->node_names;
  } else {
    std::vector<const sched::NodeInfo*> infos, known;
    Candidates(args->node_names, infos, known);
    auto statuses = evaluator_->Filter(*pod, known);
    if (!statuses.ok()) {
      verdict.error = std::string(statuses.status().message());
    } else {
      const sched::ClusterCache::PodEntry* self = p_.state->cache().FindPod((*pod)->Uid());
      size_t k = 0;
      for (size_t i = 0; i < infos.size(); ++i) {
        const std::string& name = args->node_names[i];
        if (infos[i] == nullptr) {
          verdict.failed_unresolvable[name] = "node(s) had no NodeResourceTopology known to Huygens";
          continue;
        }
        const sched::Status& st = (*statuses)[k++];
        if (st.ok() || (self != nullptr && self->node == name)) {  // its recorded CPUs are there
          verdict.passed.push_back(name);
        } else if (st.code() == sched::Code::kUnschedulableAndUnresolvable) {
          verdict.failed_unresolvable[name] = st.Message();
        } else {
          verdict.failed[name] = st.Message();
        }
      }
    }
  }
  const std::string uid = args->pod["metadata"].value("uid", "");
  if (verdict.error.empty() && spdlog::should_log(spdlog::level::debug)) LogFilterVerdict(*args, verdict);
  if (verdict.error.empty()) {
    RecordFilter(uid, verdict.passed);
  } else {
    filtered_.erase(uid);
  }
  return Reply("filter", verdict.error.empty() ? "ok" : "error", 200, RenderFilterResult(*args, verdict));
}

serving::HttpReply ExtenderHandlers::Prioritize(const std::string& body) {
  auto args = ParseExtenderArgs(body, "prioritize");
  if (!args.ok()) return BadRequest("prioritize", args.status());
  std::vector<std::pair<std::string, int64_t>> scores;
  for (const std::string& name : args->node_names) scores.emplace_back(name, 0);
  CacheSync::Lock lock(p_.state);
  auto pod = PreparedPod(args->pod);
  if (!pod.ok()) return Reply("prioritize", "error", 500, json{{"error", std::string(pod.status().message())}}.dump());
  if (HasExclusiveCpus(**pod)) {
    std::vector<const sched::NodeInfo*> infos, known;
    Candidates(args->node_names, infos, known);
    auto totals = evaluator_->Score(*pod, known);
    if (!totals.ok()) {
      return Reply("prioritize", "error", 500, json{{"error", std::string(totals.status().message())}}.dump());
    }
    // Min-max onto 0..MaxExtenderPriority over the known candidates: the best gets 10, the
    // worst 0; equal totals (or one candidate) express no preference.
    if (!totals->empty()) {
      const auto [lo, hi] = std::minmax_element(totals->begin(), totals->end());
      const int64_t min = *lo, span = *hi - *lo;
      for (size_t i = 0, k = 0; i < infos.size(); ++i) {
        if (infos[i] == nullptr) continue;
        const int64_t t = (*totals)[k++];
        if (span > 0) scores[i].second = ((t - min) * kMaxExtenderPriority + span / 2) / span;
      }
    }
  }
  return Reply("prioritize", "ok", 200, RenderHostPriorityList(scores));
}

// Three steps, the lock held only for the cache's parts: the checks and the claim (below), then
// BindTo, whose API calls run without it, so filter and prioritize go on while a Binding is out.
serving::HttpReply ExtenderHandlers::Bind(const std::string& body) {
  auto args = ParseBindingArgs(body);
  if (!args.ok()) return BadRequest("bind", args.status());
  std::optional<json> cached;
  {
    CacheSync::Lock lock(p_.state);
    if (absl::Status current = Current(); !current.ok()) {
      const std::string error = fmt::format("huygens-scheduler: pod {}/{} not bound to {}: {}", args->pod_namespace,
                                            args->pod_name, args->node, std::string(current.message()));
      return Reply("bind", "error", 200, RenderBindingResult(error));
    }
    if (!TakeFilterRecord(args->pod_uid, args->node)) {
      const std::string error =
          fmt::format("pod {}/{} (uid {}) was not filtered onto node {} by Huygens: bind is only for a node its "
                      "last filter passed",
                      args->pod_namespace, args->pod_name, args->pod_uid, args->node);
      spdlog::warn("extender: {}", error);
      return Reply("bind", "refused", 200, RenderBindingResult(error));
    }
    // One bind of a pod at a time: a second one (kube-scheduler's retry after a timeout) would
    // settle the same reservation twice.
    if (!binding_.insert(args->pod_uid).second) {
      const std::string error = fmt::format("pod {}/{}: a bind of this pod is still in flight", args->pod_namespace,
                                            args->pod_name);
      return Reply("bind", "error", 200, RenderBindingResult(error));
    }
    if (auto it = p_.state->pods().find(args->pod_uid); it != p_.state->pods().end()) cached = it->second;
  }
  std::string error = BindTo(*args, std::move(cached));
  {
    CacheSync::Lock lock(p_.state);
    binding_.erase(args->pod_uid);
  }
  return Reply("bind", error.empty() ? "ok" : "error", 200, RenderBindingResult(error));
}

absl::Status ExtenderHandlers::Current() const {
  if (absl::Status current = p_.feed->Current(); !current.ok()) return current;
  if (p_.state->fenced_term() != p_.term->load()) {
    return absl::UnavailableError(
        "takeover fence: this leader's writes on the pending pods are not yet seen by its pod informer");
  }
  return absl::OkStatus();
}

void ExtenderHandlers::RecordFilter(const std::string& uid, std::vector<std::string> nodes) {
  const Clock::TimePoint now = p_.clock->Now();
  std::erase_if(filtered_, [now](const auto& entry) { return now - entry.second.at > kFilterRecordTtl; });
  filtered_[uid] = FilterRecord{.nodes = std::move(nodes), .at = now};
}

bool ExtenderHandlers::TakeFilterRecord(const std::string& uid, const std::string& node) {
  auto it = filtered_.find(uid);
  if (it == filtered_.end()) return false;
  const FilterRecord record = std::move(it->second);
  filtered_.erase(it);
  return p_.clock->Now() - record.at <= kFilterRecordTtl &&
         std::find(record.nodes.begin(), record.nodes.end(), node) != record.nodes.end();
}

// The bind verb's work, without the lock but for PlanBind and the settling: the pod (the
// informer's object, else read from the API server), then PlanBind's decision, then its Binding.
// Returns "" or the error for ExtenderBindingResult.
std::string ExtenderHandlers::BindTo(const BindingArgs& args, std::optional<json> object) {
  if (!object) {
    auto fetched = p_.client->Get(kube::Pods(), args.pod_namespace, args.pod_name);
    if (!fetched.ok()) return fmt::format("reading pod {}/{}: {}", args.pod_namespace, args.pod_name, std::string(fetched.status().message()));
    object = *std::move(fetched);
  }
  if ((*object)["metadata"].value("uid", "") != args.pod_uid) {
    return fmt::format("pod {}/{}: uid is not {:?} (replaced)", args.pod_namespace, args.pod_name, args.pod_uid);
  }
  if (std::string on = (*object)["spec"].value("nodeName", ""); !on.empty()) {
    return on == args.node ? "" : fmt::format("pod {}/{} is already bound to {}", args.pod_namespace, args.pod_name, on);
  }
  BindPlan plan;
  {
    CacheSync::Lock lock(p_.state);
    plan = PlanBind(args, *object);
  }
  if (!plan.error.empty()) return plan.error;
  if (!plan.reserved) {
    absl::Status s = p_.writer->FinishBind(*object, args.node, std::nullopt);
    return s.ok() ? "" : fmt::format("creating the Binding: {}", std::string(s.message()));
  }
  const sched::Status bound = plan.scheduler->BindingCycle(*plan.reserved);
  {
    // A Binding that may have landed keeps the assume (Scheduler::FinishBinding), and
    // kube-scheduler's retry binds it again (PlanBind).
    CacheSync::Lock lock(p_.state);
    plan.scheduler->FinishBinding(*plan.reserved, bound);
  }
  return bound.ok() ? "" : fmt::format("bind to node {:?}: {}", args.node, bound.Message());
}

// The scheduling cycle on `node` through the profile's scheduler (the pod pinned there by
// spec.nodeName): the same reserve and assume as standalone; a pod still reserved from an
// earlier bind is bound again or released (below).
ExtenderHandlers::BindPlan ExtenderHandlers::PlanBind(const BindingArgs& args, const json& object) {
  auto pod = PreparedPod(object);
  if (!pod.ok()) return {.error = std::string(pod.status().message())};
  sched::Scheduler* scheduler = p_.schedulers->at(p_.profiles->front().scheduler_name).get();
  // Still reserved: an earlier Binding of ours may have landed (Code::kUnconfirmed). On the node
  // kube-scheduler chose now, that decision is bound again; on another, it is dropped (a
  // Binding of it that did land makes kube-scheduler's fail, and the informer brings it back).
  if (const sched::ClusterCache::PodEntry* entry = p_.state->cache().FindPod(args.pod_uid); entry != nullptr) {
    sched::ReservedPod reserved{*pod, entry->node, entry->allocation};
    if (entry->node == args.node) return {.scheduler = scheduler, .reserved = std::move(reserved)};
    scheduler->FinishBinding(reserved, sched::Status::Error(fmt::format("kube-scheduler chose node {}", args.node)));
  }
  if (!HasExclusiveCpus(**pod)) return {};
  sched::Pod pinned = **pod;
  pinned.node_name = args.node;  // the NodeName filter keeps only kube-scheduler's choice
  sched::ScheduleResult result = scheduler->SchedulingCycle(std::make_shared<const sched::Pod>(std::move(pinned)));
  if (!result.scheduled()) return {.error = result.message};
  return {.scheduler = scheduler, .reserved = *std::move(result.reserved)};
}

}  // namespace huygens::scheduler
