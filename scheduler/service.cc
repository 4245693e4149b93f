#include "scheduler/service.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "absl/base/internal/raw_logging.h"
#include "absl/time/clock.h"
#include "fmt/format.h"
#include "kube/api_error.h"
#include "kube/informer.h"
#include "kube/leader_election.h"
#include "kube/pod_codec.h"
#include "kube/resource.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/queue.h"
#include "sched/scheduler.h"
#include "scheduler/extender_protocol.h"
#include "scheduler/objects.h"
#include "scheduler/profile_evaluator.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {

namespace {

using nlohmann::json;

enum class Kind { kNode, kNrt, kPod };
struct Change {
  Kind kind;
  bool deleted = false;
  json object;
};

// The exclusive CPUs of an allocation.
CpuSet HeldCpus(const PodAllocation& a) {
  CpuSet held;
  for (const ContainerAllocation& c : a.containers) {
    if (c.exclusive) held = held.Union(c.cpuset);
  }
  return held;
}

// Sends events from a background thread so that the scheduling thread never waits for them.
class EventSink {
 public:
  explicit EventSink(kube::Client* client) : client_(client), thread_([this] { Run(); }) {}
  // Writes what is queued for at most kDrainOnStop more, then drops the rest (events are best
  // effort; the client's rate limit would otherwise hold a SIGTERM for queue/QPS seconds).
  ~EventSink() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      drain_until_ = std::chrono::steady_clock::now() + kDrainOnStop;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Post(kube::EventRecord e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= 10000) return;  // shed events rather than memory under a storm
    queue_.push_back(std::move(e));
    cv_.notify_one();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      if (stop_ && std::chrono::steady_clock::now() >= drain_until_) {
        spdlog::warn("stopping: {} events not written", queue_.size());
        return;
      }
      kube::EventRecord e = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      absl::Status s = client_->CreateEvent(e);
      if (!s.ok()) spdlog::warn("event {} for pod {}/{}: {}", e.reason, e.ns, e.name, std::string(s.message()));
      lock.lock();
    }
  }
  kube::Client* client_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<kube::EventRecord> queue_;
  static constexpr std::chrono::seconds kDrainOnStop{2};
  bool stop_ = false;
  std::chrono::steady_clock::time_point drain_until_;
  std::thread thread_;
};

}  // namespace

struct SchedulerService::Impl {
  kube::Client* client;
  ServiceOptions options;
  std::vector<ProfileConfig> profiles;

  // Metrics.
  serving::CounterFamily* attempts = nullptr;
  serving::HistogramFamily* attempt_latency = nullptr;
  serving::HistogramFamily* e2e_latency = nullptr;
  serving::GaugeFamily* pending = nullptr;
  serving::GaugeFamily* cache_size = nullptr;
  serving::CounterFamily* api_errors = nullptr;
  serving::GaugeFamily* leader = nullptr;

  // Informer events, handed to the scheduling thread.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Change> changes;
  bool stopping = false;

  std::unique_ptr<kube::Informer> nodes_informer, nrt_informer, pods_informer;
  std::unique_ptr<kube::LeaderElector> elector;
  std::atomic<bool> stop_election{false};
  std::thread election_thread;
  std::thread loop_thread;
  std::atomic<bool> leading{false};
  std::atomic<bool> started{false};
  std::atomic<int64_t> bound{0};
  std::atomic<int64_t> last_progress_ms{0};
  std::unique_ptr<EventSink> events;

  // ---- owned by the scheduling thread ----
  sched::ClusterCache cache;
  sched::SchedulingQueue queue;
  std::map<std::string, std::unique_ptr<sched::Scheduler>> schedulers;  // by scheduler name
  std::map<std::string, json> nodes;   // by name
  std::map<std::string, json> nrts;    // by name
  std::map<std::string, json> pods;    // by uid
  std::map<std::string, int64_t> creation;  // uid -> arrival index
  int64_t next_creation = 0;
  // Extender mode: set by the Bind plugin when the allocation was written but the Binding failed.
  std::string bind_error;

  // Extender mode (config.extender_enabled): kube-scheduler drives filter / prioritize / bind
  // from the HTTP server's threads; the loop thread only keeps the cache. state_mu serialises
  // the two over everything "owned by the scheduling thread" above.
  bool extender = false;
  std::unique_ptr<ProfileEvaluator> evaluator;
  serving::CounterFamily* extender_requests = nullptr;
  std::mutex state_mu;
  std::atomic<bool> cache_ready{false};  // every listed object has been applied

  // ---------------------------------------------------------------------------------------
  const ProfileConfig* ProfileFor(const std::string& scheduler_name) const {
    for (const ProfileConfig& p : profiles) {
      if (p.scheduler_name == scheduler_name) return &p;
    }
    return nullptr;
  }

  void Push(Kind kind, bool deleted, const json& object) {
    {
      std::lock_guard<std::mutex> lock(mu);
      changes.push_back(Change{kind, deleted, object});
    }
    cv.notify_one();
  }

  kube::InformerHandlers HandlersFor(Kind kind) {
    kube::InformerHandlers h;
    h.on_add = [this, kind](const json& o) { Push(kind, false, o); };
    h.on_update = [this, kind](const json&, const json& o) { Push(kind, false, o); };
    h.on_delete = [this, kind](const json& o) { Push(kind, true, o); };
    return h;
  }

  void ApiError(const char* operation, const absl::Status& s) {
    api_errors->Inc({operation, std::to_string(kube::HttpCode(s))});
  }

  void Event(const json& pod, const char* type, const char* reason, const char* action,
             std::string note) {
    kube::EventRecord e;
    e.ns = pod["metadata"].value("namespace", "");
    e.name = pod["metadata"].value("name", "");
    e.uid = pod["metadata"].value("uid", "");
    e.type = type;
    e.reason = reason;
    e.action = action;
    if (note.size() > 1000) note.resize(1000);
    e.note = std::move(note);
    e.reporting_instance = options.identity;
    events->Post(std::move(e));
  }

  // ---- cache maintenance ----------------------------------------------------------------

  // The node a pod is on for the cache: spec.nodeName, or the annotated node of a pending pod.
  static std::string NodeOf(const json& pod, const std::optional<PodAllocation>& a) {
    std::string node = pod["spec"].value("nodeName", "");
    if (node.empty() && a.has_value()) node = a->node;
    return node;
  }

  // Puts one stored pod into the cache on its node (bound: AddPod; pending with an allocation:
  // AssumePod). Returns the error; the caller decides what a conflict means.
  absl::Status Place(const json& object) {
    auto pod = PodFromJson(object);
    if (!pod.ok()) return pod.status();
    auto allocation = PodAllocationOf(object);
    if (!allocation.ok()) return allocation.status();
    std::string uid = pod->Uid();
    pod->creation_index = creation[uid];
    auto ptr = std::make_shared<const sched::Pod>(*std::move(pod));
    if (!ptr->node_name.empty()) return cache.AddPod(ptr, ptr->node_name, *allocation);
    return cache.AssumePod(ptr, (*allocation)->node, *allocation, false);
  }

  // An assume of ours that the informer does not show yet (its Binding is in flight): the
  // rebuilt node must hold it too, or its CPUs would be handed out again before it lands.
  struct InFlightAssume {
    sched::PodPtr pod;
    std::optional<PodAllocation> allocation;
    bool binding_finished;
  };

  // (Re)builds a node from its Node and NRT objects and re-places every known pod on it: the
  // informer's pods (bound ones first), then the assumes in flight, which the informer still
  // shows pending without an allocation.
  void RebuildNode(const std::string& name) {
    std::vector<InFlightAssume> in_flight;
    if (const sched::NodeInfo* info = cache.FindNode(name); info != nullptr) {
      for (const std::string& uid : info->pod_uids) {
        const sched::ClusterCache::PodEntry* entry = cache.FindPod(uid);
        if (entry == nullptr || !entry->assumed) continue;
        auto stored = pods.find(uid);
        if (stored != pods.end() && NodeOf(stored->second, PodAllocationOf(stored->second).value_or(std::nullopt)) == name) {
          continue;  // the informer's object places it
        }
        in_flight.push_back({entry->pod, entry->allocation, entry->binding_finished});
      }
      (void)cache.RemoveNode(name);
    }
    auto n = nodes.find(name);
    auto t = nrts.find(name);
    if (n == nodes.end() || t == nrts.end()) return;
    auto node = NodeFromJson(n->second);
    if (!node.ok()) {
      spdlog::error("{}", std::string(node.status().message()));
      return;
    }
    std::vector<const json*> on_node;
    CpuSet held;
    for (const auto& [uid, object] : pods) {
      if (PodIsTerminal(object)) continue;
      auto a = PodAllocationOf(object);
      std::optional<PodAllocation> alloc = a.ok() ? *a : std::nullopt;
      if (NodeOf(object, alloc) != name) continue;
      if (alloc) held = held.Union(HeldCpus(*alloc));
      on_node.push_back(&object);
    }
    // The agent may publish an in-flight pod's CPUs as exclusive before the informer shows it
    // bound: they are ours, not kubelet's.
    for (const InFlightAssume& a : in_flight) {
      if (a.allocation) held = held.Union(HeldCpus(*a.allocation));
    }
    auto state = NodeStateFromNrt(t->second, options.config.numa_strategy, held);
    if (!state.ok()) {
      spdlog::error("node {}: {}", name, std::string(state.status().message()));
      return;
    }
    node->cpu_state = *std::move(state);
    if (absl::Status s = cache.AddNode(*std::move(node)); !s.ok()) {
      spdlog::error("node {}: {}", name, std::string(s.message()));
      return;
    }
    // Bound pods first: where a pending pod's annotation conflicts with a bound pod, the bound
    // pod wins and the pending one is undone when it is popped (restart rule).
    std::stable_partition(on_node.begin(), on_node.end(), [](const json* o) {
      return !(*o)["spec"].value("nodeName", "").empty();
    });
    for (const json* object : on_node) {
      absl::Status s = Place(*object);
      if (!s.ok()) spdlog::error("node {}: pod {}: {}", name, kube::ObjectKey(*object), std::string(s.message()));
    }
    for (InFlightAssume& a : in_flight) {
      const std::string uid = a.pod->Uid();
      if (cache.FindPod(uid) != nullptr) continue;
      absl::Status s = cache.AssumePod(a.pod, name, std::move(a.allocation), false);
      if (!s.ok()) {
        // A bound pod now holds its CPUs: the Binding in flight will land on a conflict, which
        // the node agent reports; the pod's own update settles the cache.
        spdlog::error("node {}: pod {}/{} (Binding in flight): {}", name, a.pod->spec.namespace_name,
                      a.pod->spec.name, std::string(s.message()));
        continue;
      }
      if (a.binding_finished) (void)cache.FinishBinding(uid);
    }
    spdlog::info("node {}: rebuilt from its Node and NodeResourceTopology ({} pods, {} of them with a Binding in flight)",
                 name, cache.FindNode(name)->pod_uids.size(), in_flight.size());
    queue.OnClusterEvent(sched::ClusterEvent::kNodeAdded, absl::Now());
  }

  void ApplyPod(const json& object, bool deleted) {
    std::string uid = object["metadata"].value("uid", "");
    if (uid.empty()) return;
    if (deleted || PodIsTerminal(object)) {
      pods.erase(uid);
      creation.erase(uid);
      bool was_cached = cache.FindPod(uid) != nullptr;
      if (was_cached) (void)cache.RemovePod(uid);
      queue.Delete(uid);
      if (was_cached) queue.OnClusterEvent(sched::ClusterEvent::kPodDeleted, absl::Now());
      return;
    }
    if (!creation.count(uid)) creation[uid] = next_creation++;
    pods[uid] = object;
    auto pod = PodFromJson(object);
    if (!pod.ok()) {
      spdlog::warn("{}", std::string(pod.status().message()));
      return;
    }
    auto allocation = PodAllocationOf(object);
    const sched::ClusterCache::PodEntry* entry = cache.FindPod(uid);
    if (!pod->node_name.empty()) {
      queue.Delete(uid);
      if (entry != nullptr && !entry->assumed) return;  // already counted
      if (entry != nullptr && entry->node != pod->node_name) (void)cache.ForgetPod(uid);
      if (cache.FindNode(pod->node_name) == nullptr) return;  // placed when the node is built
      absl::Status s = Place(object);
      if (s.code() == absl::StatusCode::kFailedPrecondition) {
        RebuildNode(pod->node_name);  // CPUs counted as kubelet's before the pod was seen
      } else if (!s.ok()) {
        spdlog::warn("pod {}: {}", kube::ObjectKey(object), std::string(s.message()));
      }
      return;
    }
    // Extender mode: kube-scheduler schedules every pod; any pending pod may carry our allocation.
    if (!extender && ProfileFor(pod->scheduler_name) == nullptr) return;
    // Our own patch coming back before the bound event: the Binding was sent (or is being
    // retried from the queue already).
    if (entry != nullptr && entry->binding_finished) return;
    if (entry == nullptr && allocation.ok() && allocation->has_value()) {
      // Pending with an allocation: it holds its CPUs (restart rule). A conflict is settled
      // when the pod is popped (the annotation is removed).
      if (cache.FindNode((*allocation)->node) != nullptr) (void)Place(object);
    } else if (extender && entry != nullptr && entry->allocation.has_value() && allocation.ok() &&
               !allocation->has_value()) {
      // The annotation was removed after an extender bind failed: the assume from the earlier
      // (annotated) version of the pod goes too.
      (void)cache.ForgetPod(uid);
    }
    if (extender) return;  // no queue: kube-scheduler asks for each pod
    pod->creation_index = creation[uid];
    queue.Add(std::make_shared<const sched::Pod>(*std::move(pod)), absl::Now());
  }

  void Apply(Change& c) {
    std::string name = c.object["metadata"].value("name", "");
    switch (c.kind) {
      case Kind::kNode: {
        if (c.deleted) {
          nodes.erase(name);
          if (cache.FindNode(name) != nullptr) (void)cache.RemoveNode(name);
          return;
        }
        bool known = cache.FindNode(name) != nullptr;
        nodes[name] = c.object;
        if (!known) {
          RebuildNode(name);
          return;
        }
        auto node = NodeFromJson(c.object);
        if (!node.ok()) return;
        node->cpu_state = cache.FindNode(name)->node.cpu_state;
        (void)cache.UpdateNode(*std::move(node));
        queue.OnClusterEvent(sched::ClusterEvent::kNodeUpdated, absl::Now());
        return;
      }
      case Kind::kNrt: {
        if (c.deleted) {
          nrts.erase(name);
          if (cache.FindNode(name) != nullptr) (void)cache.RemoveNode(name);
          return;
        }
        auto it = nrts.find(name);
        if (it != nrts.end() && it->second["metadata"]["annotations"] == c.object["metadata"]["annotations"] &&
            it->second.value("attributes", json()) == c.object.value("attributes", json())) {
          it->second = c.object;  // only counters changed: the CPU state is ours
          return;
        }
        nrts[name] = c.object;
        RebuildNode(name);
        return;
      }
      case Kind::kPod:
        ApplyPod(c.object, c.deleted);
        return;
    }
  }

  // Applies queued informer changes; waits up to `wait` for one when there is none.
  void Drain(std::chrono::milliseconds wait) {
    std::deque<Change> batch;
    {
      std::unique_lock<std::mutex> lock(mu);
      if (changes.empty() && bind_done.empty() && wait.count() > 0) cv.wait_for(lock, wait);
      batch.swap(changes);
    }
    std::lock_guard<std::mutex> lock(state_mu);
    for (Change& c : batch) Apply(c);
  }

  // ---- one pod ---------------------------------------------------------------------------

  // Removes an allocation annotation that cannot be honoured (precondition: unchanged, unbound).
  // Returns false when the patch failed (the annotation may still be there).
  bool Undo(const json& object, const std::string& why) {
    const std::string ns = object["metadata"].value("namespace", "");
    const std::string name = object["metadata"].value("name", "");
    const std::string uid = object["metadata"].value("uid", "");
    json seen = object["metadata"]["annotations"][kAllocationAnnotation];
    auto r = client->MergePatchWithRetry(
        kube::Pods(), ns, name,
        [&](const json& current) -> absl::StatusOr<std::optional<json>> {
          if (current["metadata"].value("uid", "") != uid || !current["spec"].value("nodeName", "").empty() ||
              current["metadata"]["annotations"].value(kAllocationAnnotation, json()) != seen) {
            return std::optional<json>();  // bound or changed meanwhile: nothing to undo
          }
          return std::optional<json>(json{{"metadata", {{"annotations", {{kAllocationAnnotation, nullptr}}}}}});
        });
    if (!r.ok()) {
      ApiError("patch", r.status());
      spdlog::warn("pod {}/{}: removing the allocation failed: {}", ns, name, std::string(r.status().message()));
      return false;
    }
    spdlog::info("pod {}/{}: allocation removed ({})", ns, name, why);
    Event(object, "Warning", "AllocationUndone", "Scheduling", why);
    return true;
  }

  // A pending pod's recorded allocation (its annotation, restart rule): assumes it in the cache
  // if it is not there yet. Returns the pod's cache entry; nullptr when it has none, or when
  // the recorded allocation cannot be honoured: it is then undone (`undone` set).
  const sched::ClusterCache::PodEntry* HonourRecorded(const json& object, const std::string& uid, bool& undone) {
    undone = false;
    const sched::ClusterCache::PodEntry* entry = cache.FindPod(uid);
    auto allocation = PodAllocationOf(object);
    if (entry != nullptr || !allocation.ok() || !allocation->has_value()) return entry;
    absl::Status placed = cache.FindNode((*allocation)->node) == nullptr
                              ? absl::NotFoundError(fmt::format("node {:?} is unknown", (*allocation)->node))
                              : Place(object);
    if (placed.ok()) return cache.FindPod(uid);
    Undo(object, fmt::format("the recorded allocation cannot be honoured: {}", std::string(placed.message())));
    undone = true;
    return nullptr;
  }

  // The pod as the profile schedules it: the profile's default topology and bind policies, and
  // no exclusive CPUs in the system pool's namespaces.
  void PreparePod(sched::Pod& pod, const ProfileConfig& profile) const {
    if (!pod.spec.topology_policy) pod.spec.topology_policy = profile.default_topology_policy;
    if (!pod.spec.bind_policy) pod.spec.bind_policy = profile.default_bind_policy;
    for (const std::string& ns : options.config.system_pool_namespaces) {
      if (pod.spec.namespace_name == ns) pod.spec.cpu_policy = CpuPolicy::kNone;
    }
  }

  // Creates the Binding for a pod, carrying `allocation` (the huygens.io/allocation value;
  // nullopt: none) on the Binding's metadata, so the apiserver sets spec.nodeName and the
  // annotation in one write: a pod is never bound without its allocation, nor annotated by us
  // without being bound. OK when the pod is done (bound by us, or gone); else the error,
  // logged and counted.
  absl::Status FinishBind(const json& object, const std::string& node, const std::optional<std::string>& allocation) {
    const std::string ns = object["metadata"].value("namespace", "");
    const std::string name = object["metadata"].value("name", "");
    const std::string uid = object["metadata"].value("uid", "");
    std::map<std::string, std::string> annotations;
    if (allocation.has_value()) annotations[kAllocationAnnotation] = *allocation;
    absl::Status s = client->Bind(ns, name, node, uid, annotations);
    if (s.ok()) {
      ++bound;
      spdlog::info("pod {}/{}: bound to {} with {}", ns, name, node, allocation.value_or("no allocation"));
      Event(object, "Normal", "Scheduled", "Binding",
            fmt::format("Successfully assigned {}/{} to {}", ns, name, node));
      return absl::OkStatus();
    }
    ApiError("bind", s);
    if (kube::IsApiNotFound(s)) return absl::OkStatus();  // the pod is gone; its delete event cleans up
    if (kube::HttpCode(s) == 409) {
      auto current = client->Get(kube::Pods(), ns, name);
      if (current.ok() && (*current)["spec"].value("nodeName", "") == node &&
          (!allocation.has_value() ||
           (*current)["metadata"].value("annotations", json::object()).value(kAllocationAnnotation, "") == *allocation)) {
        ++bound;  // an earlier attempt landed
        return absl::OkStatus();
      }
    }
    spdlog::warn("pod {}/{}: binding to {} failed: {}", ns, name, node, std::string(s.message()));
    return s;
  }

  // The huygens.io/allocation value of a cache entry's allocation on its node; nullopt for a
  // pod without one (a NUMA-blind node).
  static std::optional<std::string> AllocationValue(const sched::ClusterCache::PodEntry& entry) {
    if (!entry.allocation.has_value()) return std::nullopt;
    PodAllocation a = *entry.allocation;
    a.node = entry.node;
    return AllocationToJson(a);
  }

  void ScheduleNext() {
    auto popped = queue.Pop(absl::Now());
    if (!popped) return;
    last_progress_ms = NowMs();
    const std::string uid = popped->pod->Uid();
    auto stored = pods.find(uid);
    if (stored == pods.end() || !popped->pod->node_name.empty()) {
      queue.Done(uid);
      return;
    }
    const json object = stored->second;
    auto start = std::chrono::steady_clock::now();
    auto observe = [&](const char* result) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      attempts->Inc({result});
      attempt_latency->Observe({result}, seconds);
    };

    // Finish path: the pod already holds an allocation (ours in flight, or from the annotation).
    bool undone = false;
    const sched::ClusterCache::PodEntry* entry = HonourRecorded(object, uid, undone);
    if (undone) {
      queue.AddFailed(*std::move(popped), false, absl::Now());
      observe("error");
      return;
    }
    if (entry != nullptr) {
      if (FinishBind(object, entry->node, AllocationValue(*entry)).ok()) {
        (void)cache.FinishBinding(uid);
        queue.Done(uid);
        observe("scheduled");
        e2e_latency->Observe({}, absl::ToDoubleSeconds(absl::Now() - popped->first_seen));
      } else {
        queue.AddFailed(*std::move(popped), false, absl::Now());
        observe("error");
      }
      return;
    }

    const ProfileConfig* profile = ProfileFor(popped->pod->scheduler_name);
    if (profile == nullptr) {
      queue.Done(uid);
      return;
    }
    sched::Pod pod = *popped->pod;
    PreparePod(pod, *profile);
    staged.reset();
    sched::ScheduleResult result =
        schedulers.at(profile->scheduler_name)->ScheduleOne(std::make_shared<const sched::Pod>(std::move(pod)));
    switch (result.outcome) {
      case sched::ScheduleResult::Outcome::kScheduled: {
        // The binding cycle goes to the binders; SettleBinds counts the attempt when it ends.
        ABSL_RAW_CHECK(staged.has_value(), "ApiBind staged no binding cycle");
        {
          std::lock_guard<std::mutex> lock(mu);
          bind_todo.push_back(InFlight{*std::move(staged), *std::move(popped), start, {}});
          ++binds_in_flight;
        }
        staged.reset();
        bind_cv.notify_one();
        return;
      }
      case sched::ScheduleResult::Outcome::kUnschedulable:
        Event(object, "Warning", "FailedScheduling", "Scheduling", result.message);
        queue.AddFailed(*std::move(popped), true, absl::Now());
        observe("unschedulable");
        return;
      case sched::ScheduleResult::Outcome::kError:
        Event(object, "Warning", "FailedScheduling", "Scheduling", result.message);
        queue.AddFailed(*std::move(popped), false, absl::Now());
        observe("error");
        return;
    }
  }

  // ---- binding cycle ---------------------------------------------------------------------

  // A decision to make durable: the pod as last seen, its node, and the huygens.io/allocation
  // value that rides on the Binding (nullopt: a NUMA-blind node, Binding only).
  struct BindTask {
    json object;
    std::string node;
    std::optional<std::string> allocation;
  };

  // The Binding with the allocation (FinishBind). Thread-safe (API calls, counters and events
  // only): binder threads run it. Errors are prefixed for the pod's events.
  absl::Status RunBind(const BindTask& t) {
    absl::Status binding = FinishBind(t.object, t.node, t.allocation);
    if (binding.ok()) return binding;
    return absl::Status(binding.code(), fmt::format("creating the Binding: {}", std::string(binding.message())));
  }

  // Standalone: the binding cycles in flight on the binder threads. The queues are guarded by
  // `mu` (so a finished cycle wakes the loop's Drain); at most kMaxBindsInFlight at a time.
  static constexpr int kBinderThreads = 8;
  static constexpr size_t kMaxBindsInFlight = 64;
  struct InFlight {
    BindTask task;
    sched::QueuedPod popped;
    std::chrono::steady_clock::time_point start;
    absl::Status outcome;
  };
  std::optional<BindTask> staged;  // set by ApiBind during ScheduleOne (scheduling thread)
  std::condition_variable bind_cv;
  std::deque<InFlight> bind_todo, bind_done;
  size_t binds_in_flight = 0;
  bool binders_stopping = false;
  std::vector<std::thread> binders;

  void Binder() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      bind_cv.wait(lock, [this] { return binders_stopping || !bind_todo.empty(); });
      if (binders_stopping) return;  // what is left was never written: a restart redoes it
      InFlight f = std::move(bind_todo.front());
      bind_todo.pop_front();
      lock.unlock();
      f.outcome = RunBind(f.task);
      // The attempt is counted here, where it ends (Stop joins the binders, so a pod seen bound
      // is counted before Stop returns).
      const char* result = f.outcome.ok() ? "scheduled" : "error";
      attempts->Inc({result});
      attempt_latency->Observe({result}, std::chrono::duration<double>(std::chrono::steady_clock::now() - f.start).count());
      if (f.outcome.ok()) {
        e2e_latency->Observe({}, absl::ToDoubleSeconds(absl::Now() - f.popped.first_seen));
      }
      lock.lock();
      bind_done.push_back(std::move(f));
      cv.notify_one();
    }
  }

  // Settles finished binding cycles (scheduling thread, state_mu held): a failed Binding keeps
  // the assume and requeues with backoff; the finish path binds again with the same allocation.
  // The assume is not forgotten, since a Binding whose answer was lost may still have landed:
  // its CPUs are not handed to another pod until the pod's own update or deletion settles it.
  void SettleBinds() {
    std::deque<InFlight> done;
    {
      std::lock_guard<std::mutex> lock(mu);
      done.swap(bind_done);
      binds_in_flight -= done.size();
    }
    for (InFlight& f : done) {
      const std::string uid = f.task.object["metadata"].value("uid", "");
      if (!f.outcome.ok()) {
        Event(f.task.object, "Warning", "FailedScheduling", "Scheduling", std::string(f.outcome.message()));
        queue.AddFailed(std::move(f.popped), false, absl::Now());
      } else {
        queue.Done(uid);
      }
    }
  }

  bool BindersFull() {
    std::lock_guard<std::mutex> lock(mu);
    return binds_in_flight >= kMaxBindsInFlight;
  }

  // ---- extender verbs (kube-scheduler's HTTP extender protocol) ----------------------------
  // Each runs on an HTTP server thread and holds state_mu for its whole call.

  serving::HttpReply ExtenderReply(const char* verb, const char* result, int status, std::string body) {
    extender_requests->Inc({verb, result});
    return serving::HttpReply{.status = status, .content_type = "application/json", .body = std::move(body)};
  }
  // A malformed request: 400, nothing changed.
  serving::HttpReply BadRequest(const char* verb, const absl::Status& s) {
    const char* key = std::string_view(verb) == "bind" ? "Error" : "error";
    return ExtenderReply(verb, "bad_request", 400, json{{key, std::string(s.message())}}.dump());
  }

  // The scheduling view of a pod kube-scheduler asks about, prepared with the first profile.
  absl::StatusOr<sched::PodPtr> ExtenderPod(const json& object) const {
    if (!cache_ready) return absl::UnavailableError("huygens-scheduler: the cluster cache is not synced yet");
    auto pod = PodFromJson(object);
    if (!pod.ok()) return pod.status();
    PreparePod(*pod, profiles.front());
    auto c = creation.find(pod->Uid());
    pod->creation_index = c != creation.end() ? c->second : next_creation;
    return std::make_shared<const sched::Pod>(*std::move(pod));
  }

  // Whether Huygens places the pod's CPUs (some container gets exclusive CPUs); other pods pass
  // filter, score neutrally and are only bound.
  static bool Exclusive(const sched::Pod& pod) {
    sched::PodFacts facts;
    sched::ComputePodFacts(pod, facts);
    return !facts.units.empty();
  }

  // The cache's nodes for `names` (nullptr where unknown) and the known ones in order.
  void Candidates(const std::vector<std::string>& names, std::vector<const sched::NodeInfo*>& infos,
                  std::vector<const sched::NodeInfo*>& known) const {
    for (const std::string& name : names) {
      infos.push_back(cache.FindNode(name));
      if (infos.back() != nullptr) known.push_back(infos.back());
    }
  }

  serving::HttpReply ExtenderFilter(const std::string& body) {
    auto args = ParseExtenderArgs(body, "filter");
    if (!args.ok()) return BadRequest("filter", args.status());
    FilterVerdict verdict;
    std::lock_guard<std::mutex> lock(state_mu);
    auto pod = ExtenderPod(args->pod);
    if (!pod.ok()) {
      verdict.error = std::string(pod.status().message());
    } else if (!Exclusive(**pod)) {
      verdict.passed = args->node_names;
    } else {
      std::vector<const sched::NodeInfo*> infos, known;
      Candidates(args->node_names, infos, known);
      auto statuses = evaluator->Filter(*pod, known);
      if (!statuses.ok()) {
        verdict.error = std::string(statuses.status().message());
      } else {
        const sched::ClusterCache::PodEntry* self = cache.FindPod((*pod)->Uid());
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
    return ExtenderReply("filter", verdict.error.empty() ? "ok" : "error", 200, RenderFilterResult(*args, verdict));
  }

  serving::HttpReply ExtenderPrioritize(const std::string& body) {
    auto args = ParseExtenderArgs(body, "prioritize");
    if (!args.ok()) return BadRequest("prioritize", args.status());
    std::vector<std::pair<std::string, int64_t>> scores;
    for (const std::string& name : args->node_names) scores.emplace_back(name, 0);
    std::lock_guard<std::mutex> lock(state_mu);
    auto pod = ExtenderPod(args->pod);
    if (!pod.ok()) return ExtenderReply("prioritize", "error", 500, json{{"error", std::string(pod.status().message())}}.dump());
    if (Exclusive(**pod)) {
      std::vector<const sched::NodeInfo*> infos, known;
      Candidates(args->node_names, infos, known);
      auto totals = evaluator->Score(*pod, known);
      if (!totals.ok()) {
        return ExtenderReply("prioritize", "error", 500, json{{"error", std::string(totals.status().message())}}.dump());
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
    return ExtenderReply("prioritize", "ok", 200, RenderHostPriorityList(scores));
  }

  serving::HttpReply ExtenderBind(const std::string& body) {
    auto args = ParseBindingArgs(body);
    if (!args.ok()) return BadRequest("bind", args.status());
    std::lock_guard<std::mutex> lock(state_mu);
    std::string error = BindTo(*args);
    return ExtenderReply("bind", error.empty() ? "ok" : "error", 200, RenderBindingResult(error));
  }

  // The bind verb: the pod's recorded allocation is finished on `node` (or undone when kube-
  // scheduler chose another node); otherwise Reserve on `node` through the profile's scheduler
  // (the pod pinned there by spec.nodeName), the same assume -> Binding (carrying the
  // allocation) as standalone (ApiBind). A failed Binding forgets the assume.
  // Returns "" or the error for ExtenderBindingResult.
  std::string BindTo(const BindingArgs& args) {
    json object;
    if (auto it = pods.find(args.pod_uid); it != pods.end()) {
      object = it->second;
    } else {
      auto fetched = client->Get(kube::Pods(), args.pod_namespace, args.pod_name);
      if (!fetched.ok()) return fmt::format("reading pod {}/{}: {}", args.pod_namespace, args.pod_name, std::string(fetched.status().message()));
      object = *std::move(fetched);
    }
    if (object["metadata"].value("uid", "") != args.pod_uid) {
      return fmt::format("pod {}/{}: uid is not {:?} (replaced)", args.pod_namespace, args.pod_name, args.pod_uid);
    }
    if (std::string on = object["spec"].value("nodeName", ""); !on.empty()) {
      return on == args.node ? "" : fmt::format("pod {}/{} is already bound to {}", args.pod_namespace, args.pod_name, on);
    }
    auto pod = ExtenderPod(object);
    if (!pod.ok()) return std::string(pod.status().message());
    bool undone = false;
    const sched::ClusterCache::PodEntry* entry = HonourRecorded(object, args.pod_uid, undone);
    if (undone) return "the pod's recorded allocation could not be honoured and was removed; retry";
    if (entry != nullptr && entry->node == args.node) {
      absl::Status s = FinishBind(object, args.node, AllocationValue(*entry));
      if (!s.ok()) return fmt::format("creating the Binding: {}", std::string(s.message()));
      if (entry->assumed) (void)cache.FinishBinding(args.pod_uid);
      return "";
    }
    if (entry != nullptr) {  // recorded on another node than kube-scheduler chose
      if (entry->allocation.has_value() &&
          !Undo(object, fmt::format("kube-scheduler bound the pod to {}", args.node))) {
        return "removing the pod's allocation on another node failed; retry";
      }
      (void)cache.ForgetPod(args.pod_uid);
      if (object["metadata"].contains("annotations")) object["metadata"]["annotations"].erase(kAllocationAnnotation);
    }
    if (!Exclusive(**pod)) {
      absl::Status s = FinishBind(object, args.node, std::nullopt);
      return s.ok() ? "" : fmt::format("creating the Binding: {}", std::string(s.message()));
    }
    sched::Pod pinned = **pod;
    pinned.node_name = args.node;  // the NodeName filter keeps only kube-scheduler's choice
    bind_error.clear();
    sched::ScheduleResult result = schedulers.at(profiles.front().scheduler_name)
                                       ->ScheduleOne(std::make_shared<const sched::Pod>(std::move(pinned)));
    if (!result.scheduled()) return result.message;
    if (bind_error.empty()) return "";
    // The Binding (which carries the allocation) failed: nothing was written; unreserve.
    (void)cache.ForgetPod(args.pod_uid);
    return bind_error;
  }

  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  bool Synced() const {
    return nodes_informer->HasSynced() && nrt_informer->HasSynced() && pods_informer->HasSynced();
  }

  void Loop() {
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stopping) return;
      }
      bool ready = Synced();  // read before draining: every listed object is then applied
      bool active = ready && leading && !extender && queue.ActiveSize() > 0 && !BindersFull();
      Drain(active ? std::chrono::milliseconds(0) : std::chrono::milliseconds(20));
      last_progress_ms = NowMs();
      if (ready) cache_ready = true;
      std::lock_guard<std::mutex> lock(state_mu);
      SettleBinds();
      if (ready && leading && !extender && !BindersFull()) ScheduleNext();
      pending->Set({"active"}, static_cast<double>(queue.ActiveSize()));
      pending->Set({"backoff"}, static_cast<double>(queue.BackoffSize()));
      pending->Set({"unschedulable"}, static_cast<double>(queue.UnschedulableSize()));
      cache_size->Set({"nodes"}, static_cast<double>(cache.Nodes().size()));
      cache_size->Set({"pods"}, static_cast<double>(cache.NumPods()));
    }
  }
};

namespace {

// The Bind plugin: hands the decision to the binding cycle (Impl::RunBind: the Binding, with
// huygens.io/allocation on its metadata). Standalone: staged for the binder threads
// (ScheduleNext submits it), so the scheduling thread goes on at once, as kube-scheduler's
// binding cycle runs in a goroutine. Extender: run at once (the bind verb answers with the
// outcome); a failed Binding is left to the caller (BindTo unreserves).
class ApiBind final : public sched::BindPlugin {
 public:
  explicit ApiBind(SchedulerService::Impl* impl) : impl_(impl) {}
  std::string_view Name() const override { return "ApiBind"; }
  sched::Status Bind(sched::CycleState& state, const sched::NodeInfo& node) override {
    const sched::Pod& pod = state.pod();
    SchedulerService::Impl::BindTask task;
    auto stored = impl_->pods.find(pod.Uid());
    task.object = stored != impl_->pods.end()
                      ? stored->second
                      : json{{"metadata", {{"namespace", pod.spec.namespace_name}, {"name", pod.spec.name}, {"uid", pod.Uid()}}},
                             {"spec", json::object()}};
    task.node = node.node.name;
    if (state.allocation.has_value()) {
      PodAllocation a = *state.allocation;
      a.node = node.node.name;
      task.allocation = AllocationToJson(a);
    }
    if (!impl_->extender) {
      impl_->staged = std::move(task);
      return sched::Status::Success();
    }
    absl::Status outcome = impl_->RunBind(task);
    if (!outcome.ok()) impl_->bind_error = std::string(outcome.message());
    return sched::Status::Success();
  }

 private:
  SchedulerService::Impl* impl_;
};

}  // namespace

SchedulerService::SchedulerService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<SchedulerService>> SchedulerService::Create(kube::Client* client,
                                                                           ServiceOptions options,
                                                                           serving::MetricsRegistry* registry) {
  auto impl = std::make_unique<Impl>();
  impl->client = client;
  impl->options = std::move(options);
  impl->profiles = EffectiveProfiles(impl->options.config);
  for (const ProfileConfig& p : impl->profiles) {
    auto s = sched::Scheduler::Create(&impl->cache, p.profile, std::make_unique<ApiBind>(impl.get()));
    if (!s.ok()) return s.status();
    impl->schedulers[p.scheduler_name] = *std::move(s);
  }
  impl->extender = impl->options.config.extender_enabled;
  if (impl->extender) {
    auto evaluator = ProfileEvaluator::Create(impl->profiles.front().profile, &impl->cache);
    if (!evaluator.ok()) return evaluator.status();
    impl->evaluator = *std::move(evaluator);
  }
  const LeaderElectionSettings& le = impl->options.config.leader_election;
  if (le.leader_elect && !impl->extender) {  // an extender answers whoever leads kube-scheduler
    kube::LeaderElectionConfig lc;
    lc.lease_name = le.resource_name;
    lc.lease_namespace = le.resource_namespace;
    lc.identity = impl->options.identity;
    lc.lease_duration = le.lease_duration;
    lc.renew_deadline = le.renew_deadline;
    lc.retry_period = le.retry_period;
    if (absl::Status s = kube::LeaderElector::Validate(lc); !s.ok()) return s;
    Impl* raw = impl.get();
    kube::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [raw] {
      spdlog::info("{}: started leading", raw->options.identity);
      raw->leading = true;
      raw->leader->Set({}, 1);
    };
    callbacks.on_stopped_leading = [raw] {
      spdlog::warn("{}: stopped leading", raw->options.identity);
      raw->leading = false;
      raw->leader->Set({}, 0);
    };
    impl->elector = std::make_unique<kube::LeaderElector>(client, lc, callbacks, RealClock::Get());
  }
  impl->attempts = &registry->AddCounter("huygens_scheduler_schedule_attempts_total",
                                         "Scheduling attempts by result (scheduled, unschedulable, error).",
                                         {"result"});
  impl->attempt_latency = &registry->AddHistogram(
      "huygens_scheduler_scheduling_attempt_duration_seconds",
      "Scheduling attempt latency in seconds (algorithm and binding with its allocation), by result.",
      {"result"}, serving::LatencyBuckets());
  impl->e2e_latency = &registry->AddHistogram(
      "huygens_scheduler_pod_scheduling_duration_seconds",
      "Seconds from a pod entering the queue to its binding, over all its attempts.", {},
      serving::LatencyBuckets());
  impl->pending = &registry->AddGauge("huygens_scheduler_pending_pods",
                                      "Pods waiting to be scheduled, by queue (active, backoff, unschedulable).",
                                      {"queue"});
  impl->cache_size = &registry->AddGauge("huygens_scheduler_cache_size",
                                         "Objects in the scheduler cache, by type (nodes, pods).", {"type"});
  impl->api_errors = &registry->AddCounter("huygens_scheduler_api_errors_total",
                                           "Failed API requests of the scheduling loop, by operation and HTTP code (0: transport).",
                                           {"operation", "code"});
  impl->leader = &registry->AddGauge("huygens_scheduler_leader", "1 while this instance is the leader.");
  impl->extender_requests = &registry->AddCounter(
      "huygens_scheduler_extender_requests_total",
      "Extender requests from kube-scheduler, by verb (filter, prioritize, bind) and result (ok, error, bad_request).",
      {"verb", "result"});
  return std::unique_ptr<SchedulerService>(new SchedulerService(std::move(impl)));
}

SchedulerService::~SchedulerService() { Stop(); }

void SchedulerService::Start() {
  Impl* impl = impl_.get();
  if (impl->started.exchange(true)) return;
  impl->events = std::make_unique<EventSink>(impl->client);
  impl->nodes_informer = std::make_unique<kube::Informer>(impl->client, kube::Nodes(), kube::InformerOptions{},
                                                          impl->HandlersFor(Kind::kNode));
  impl->nrt_informer = std::make_unique<kube::Informer>(impl->client, kube::NodeResourceTopologies(),
                                                        kube::InformerOptions{}, impl->HandlersFor(Kind::kNrt));
  impl->pods_informer = std::make_unique<kube::Informer>(impl->client, kube::Pods(), kube::InformerOptions{},
                                                         impl->HandlersFor(Kind::kPod));
  impl->nodes_informer->Start();
  impl->nrt_informer->Start();
  impl->pods_informer->Start();
  if (impl->elector != nullptr) {
    impl->election_thread = std::thread([impl] { impl->elector->Run(impl->stop_election); });
  } else {
    impl->leading = true;
    impl->leader->Set({}, 1);
  }
  impl->last_progress_ms = Impl::NowMs();
  impl->binders_stopping = false;
  if (!impl->extender) {
    for (int i = 0; i < Impl::kBinderThreads; ++i) impl->binders.emplace_back([impl] { impl->Binder(); });
  }
  impl->loop_thread = std::thread([impl] { impl->Loop(); });
}

void SchedulerService::Stop() {
  Impl* impl = impl_.get();
  if (!impl->started.exchange(false)) return;
  // Stop acting first: a stopped leader must not schedule while it releases the lease.
  impl->leading = false;
  {
    std::lock_guard<std::mutex> lock(impl->mu);
    impl->stopping = true;
  }
  impl->cv.notify_all();
  // Each phase is timed: a slow stop says which part held it.
  using Seconds = std::chrono::duration<double>;
  auto mark = std::chrono::steady_clock::now();
  auto lap = [&mark] {
    auto now = std::chrono::steady_clock::now();
    double s = Seconds(now - mark).count();
    mark = now;
    return s;
  };
  if (impl->loop_thread.joinable()) impl->loop_thread.join();
  const double loop_s = lap();
  {
    std::lock_guard<std::mutex> lock(impl->mu);
    impl->binders_stopping = true;
  }
  impl->bind_cv.notify_all();
  for (std::thread& t : impl->binders) t.join();
  impl->binders.clear();
  impl->bind_todo.clear();
  impl->bind_done.clear();
  impl->binds_in_flight = 0;
  const double binders_s = lap();
  impl->stop_election = true;
  if (impl->election_thread.joinable()) impl->election_thread.join();
  const double election_s = lap();
  impl->nodes_informer->Stop();
  impl->nrt_informer->Stop();
  impl->pods_informer->Stop();
  const double informers_s = lap();
  impl->events.reset();
  spdlog::info("stopped: scheduling loop {:.2f} s, binders {:.2f} s, leader election {:.2f} s, informers {:.2f} s, events {:.2f} s",
               loop_s, binders_s, election_s, informers_s, lap());
}

void SchedulerService::ServeExtender(serving::HttpServer& http) {
  Impl* impl = impl_.get();
  http.HandlePost("/filter", [impl](const std::string& body) { return impl->ExtenderFilter(body); });
  http.HandlePost("/prioritize", [impl](const std::string& body) { return impl->ExtenderPrioritize(body); });
  http.HandlePost("/bind", [impl](const std::string& body) { return impl->ExtenderBind(body); });
}

bool SchedulerService::Synced() const { return impl_->started && impl_->Synced(); }
bool SchedulerService::Leading() const { return impl_->leading; }
int64_t SchedulerService::BoundPods() const { return impl_->bound; }

absl::Status SchedulerService::Healthy() const {
  int64_t idle = Impl::NowMs() - impl_->last_progress_ms;
  if (impl_->started && idle > 60000) {
    return absl::DeadlineExceededError(fmt::format("the scheduling loop made no progress for {} ms", idle));
  }
  return absl::OkStatus();
}

}  // namespace huygens::scheduler
