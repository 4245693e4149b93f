#include "scheduler/service.h"

#include <atomic>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "kube/leader_election.h"
#include "sched/scheduler.h"
#include "scheduler/binder.h"
#include "scheduler/cache_sync.h"
#include "scheduler/event_sink.h"
#include "scheduler/extender_handlers.h"
#include "scheduler/scheduling_loop.h"
#include "scheduler/service_metrics.h"
#include "spdlog/spdlog.h"
#include "topology/nrt.h"

namespace huygens::scheduler {

// The service's parts (see each header), wired together; the order of the members is the
// order of construction (each part points only at those above it).
struct SchedulerService::Impl {
  kube::Client* client = nullptr;
  ServiceOptions options;
  Clock* clock = nullptr;
  std::vector<ProfileConfig> profiles;
  ServiceMetrics metrics;

  std::unique_ptr<EventSink> events;
  std::unique_ptr<PodWriter> writer;
  ChangeFeed feed;
  std::unique_ptr<CacheSync> state;
  SchedulerMap schedulers;
  std::unique_ptr<BinderPool> binders;
  std::unique_ptr<Rebalancer> rebalancer;
  std::unique_ptr<SchedulingLoop> loop;
  std::unique_ptr<ExtenderHandlers> extender;  // extender mode only

  std::unique_ptr<kube::LeaderElector> elector;
  std::atomic<bool> stop_election{false};
  std::thread election_thread;
  std::thread loop_thread;
  std::atomic<bool> leading{false};
  // Counts the terms this process started leading (the scheduling loop fences each anew).
  std::atomic<int64_t> term{0};
  std::atomic<bool> started{false};
};

namespace {

// An event about NRT object `nrt` (its regarding fields set).
kube::EventRecord NrtEvent(const nlohmann::json& nrt) {
  const nlohmann::json& meta = nrt.value("metadata", nlohmann::json::object());
  kube::EventRecord e;
  e.api_version = nrt.value("apiVersion", kNrtApiVersion);
  e.kind = kNrtKind;
  e.name = meta.is_object() ? meta.value("name", "") : "";
  e.uid = meta.is_object() ? meta.value("uid", "") : "";
  return e;
}

// A Warning event on the NRT that leaves its node out of the cache (CacheSync::InvalidNrtReporter).
void PostInvalidNrt(EventSink& events, const nlohmann::json& nrt, const std::string& why) {
  kube::EventRecord e = NrtEvent(nrt);
  e.type = "Warning";
  e.reason = "InvalidNodeResourceTopology";
  e.action = "Caching";
  e.note = fmt::format("{}; node {} is left out of scheduling until its NodeResourceTopology is valid", why, e.name);
  events.Post(std::move(e));
}

// An event on the NRT of a node whose agent fell silent (Warning AgentSilent) or reports again
// (Normal AgentReporting) (CacheSync::AgentReporter).
void PostAgentChange(EventSink& events, const nlohmann::json& nrt, bool silent, const std::string& note) {
  kube::EventRecord e = NrtEvent(nrt);
  e.type = silent ? "Warning" : "Normal";
  e.reason = silent ? "AgentSilent" : "AgentReporting";
  e.action = "Scheduling";
  e.note = fmt::format("node {}: {}", e.name, note);
  events.Post(std::move(e));
}

}  // namespace

SchedulerService::SchedulerService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<SchedulerService>> SchedulerService::Create(kube::Client* client,
                                                                           ServiceOptions options,
                                                                           serving::MetricsRegistry* registry) {
  auto impl = std::make_unique<Impl>();
  Impl* raw = impl.get();
  impl->client = client;
  impl->options = std::move(options);
  impl->clock = impl->options.clock != nullptr ? impl->options.clock : RealClock::Get();
  impl->profiles = EffectiveProfiles(impl->options.config);
  const bool extender = impl->options.config.extender_enabled;
  impl->events = std::make_unique<EventSink>(client, impl->options.identity, impl->clock);
  // Fenced by the lease: a Binding goes out only while this process's last renewal is within
  // the renew deadline (the elector is made below; no elector, no fence).
  impl->writer = std::make_unique<PodWriter>(client, impl->events.get(), &impl->metrics,
                                             [raw] { return raw->elector == nullptr || raw->elector->HoldsLease(); });
  impl->state = std::make_unique<CacheSync>(
      impl->options.config.numa_strategy, extender,
      [raw](const std::string& name) { return ProfileFor(raw->profiles, name) != nullptr; }, impl->clock,
      [raw](const nlohmann::json& nrt, const std::string& why) { PostInvalidNrt(*raw->events, nrt, why); },
      // The leader writes a gated pod's condition where the API server did not already (it sets
      // it when the pod is created with gates: v1.35's applySchedulingGatedCondition).
      [raw](const nlohmann::json& pod) {
        if (raw->leading) raw->writer->PodScheduledFalse(pod, "SchedulingGated", kSchedulingGatedMessage);
      });
  sched::ClusterCache* cache;  // the schedulers keep its address; they read it under the lock
  {
    CacheSync::Lock lock(impl->state.get());
    cache = &impl->state->cache();
    impl->state->JudgeAgents(impl->options.config.agent_heartbeat_timeout,
                             [raw](const nlohmann::json& nrt, bool silent, const std::string& note) {
                               PostAgentChange(*raw->events, nrt, silent, note);
                             });
  }
  for (const ProfileConfig& p : impl->profiles) {
    auto s = sched::Scheduler::Create(cache, p.profile,
                                      std::make_unique<ApiBind>(impl->writer.get()));
    if (!s.ok()) return s.status();
    impl->schedulers[p.scheduler_name] = *std::move(s);
  }
  impl->binders = std::make_unique<BinderPool>(&impl->metrics, impl->clock,
                                               [raw] { raw->feed.Wake(); });
  impl->rebalancer = std::make_unique<Rebalancer>(&impl->options.config, impl->state.get(), &impl->feed,
                                                  impl->writer.get(), &impl->metrics, impl->clock);
  impl->loop = std::make_unique<SchedulingLoop>(SchedulingLoop::Parts{
      .config = &impl->options.config,
      .profiles = &impl->profiles,
      .feed = &impl->feed,
      .state = impl->state.get(),
      .schedulers = &impl->schedulers,
      .binders = impl->binders.get(),
      .writer = impl->writer.get(),
      .metrics = &impl->metrics,
      .leading = &impl->leading,
      .clock = impl->clock,
      .client = client,
      .term = &impl->term,
      .rebalancer = impl->rebalancer.get(),
  });
  if (extender) {
    auto handlers = ExtenderHandlers::Create(ExtenderHandlers::Parts{
        .client = client,
        .config = &impl->options.config,
        .profiles = &impl->profiles,
        .state = impl->state.get(),
        .feed = &impl->feed,
        .schedulers = &impl->schedulers,
        .writer = impl->writer.get(),
        .metrics = &impl->metrics,
        .clock = impl->clock,
        .term = &impl->term,
    });
    if (!handlers.ok()) return handlers.status();
    impl->extender = *std::move(handlers);
  }
  const LeaderElectionSettings& le = impl->options.config.leader_election;
  // Extender mode elects too: only the leader answers kube-scheduler (its standbys are not ready,
  // so the Service sends them nothing, and refuse what reaches them), so replicas never hand out
  // one CPU twice.
  if (le.leader_elect) {
    kube::LeaderElectionConfig lc;
    lc.lease_name = le.resource_name;
    lc.lease_namespace = le.resource_namespace;
    lc.identity = impl->options.identity;
    lc.lease_duration = le.lease_duration;
    lc.renew_deadline = le.renew_deadline;
    lc.retry_period = le.retry_period;
    kube::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [raw] {
      spdlog::info("{}: started leading", raw->options.identity);
      ++raw->term;
      raw->leading = true;
      raw->metrics.leader->Set({}, 1);
    };
    callbacks.on_stopped_leading = [raw] {
      spdlog::warn("{}: stopped leading", raw->options.identity);
      raw->leading = false;
      raw->metrics.leader->Set({}, 0);
    };
    // The lease is judged against other processes' clocks: the elector runs on the real one,
    // with its own client to the same server (kube/leader_election.h).
    auto elector = kube::LeaderElector::Create(client->rest().config(), lc, callbacks, RealClock::Get());
    if (!elector.ok()) return elector.status();
    impl->elector = *std::move(elector);
  }
  impl->metrics = ServiceMetrics::Register(*registry);
  return std::unique_ptr<SchedulerService>(new SchedulerService(std::move(impl)));
}

SchedulerService::~SchedulerService() { Stop(); }

void SchedulerService::Start() {
  Impl* impl = impl_.get();
  if (impl->started.exchange(true)) return;
  impl->events->Start();
  // The rebalancer runs in standalone mode only, and reads NumaAffinityGroups.
  impl->feed.StartInformers(impl->client, impl->clock,
                            impl->options.config.rebalancer.enabled && !impl->options.config.extender_enabled);
  if (impl->elector != nullptr) {
    impl->election_thread = std::thread([impl] { impl->elector->Run(impl->stop_election); });
  } else {
    impl->leading = true;
    impl->metrics.leader->Set({}, 1);
  }
  impl->loop->Touch();
  if (!impl->options.config.extender_enabled) impl->binders->Start();
  impl->loop_thread = std::thread([impl] { impl->loop->Run(); });
}

void SchedulerService::Stop() {
  Impl* impl = impl_.get();
  if (!impl->started.exchange(false)) return;
  // Stop acting first: a stopped leader must not schedule while it releases the lease.
  impl->leading = false;
  impl->feed.Close();
  // Each phase is timed: a slow stop says which part held it.
  Clock* clock = impl->clock;
  Clock::TimePoint mark = clock->Now();
  auto lap = [&mark, clock] {
    Clock::TimePoint now = clock->Now();
    double seconds = std::chrono::duration<double>(now - mark).count();
    mark = now;
    return seconds;
  };
  if (impl->loop_thread.joinable()) impl->loop_thread.join();
  const double loop_s = lap();
  impl->binders->Stop();
  const double binders_s = lap();
  impl->stop_election = true;
  if (impl->election_thread.joinable()) impl->election_thread.join();
  const double election_s = lap();
  impl->feed.StopInformers();
  const double informers_s = lap();
  impl->events->Stop();
  spdlog::info("stopped: scheduling loop {:.2f} s, binders {:.2f} s, leader election {:.2f} s, informers {:.2f} s, "
               "events {:.2f} s",
               loop_s, binders_s, election_s, informers_s, lap());
}

void SchedulerService::ServeExtender(serving::HttpServer& http) {
  ExtenderHandlers* h = impl_->extender.get();
  const SchedulerService* self = this;
  // A standby refuses: its cache may lag the leader's reservations.
  auto leading_only = [self](auto verb) {
    return [self, verb](const std::string& body) {
      if (!self->Leading()) {
        return serving::HttpReply{
            .status = 503,
            .body = nlohmann::json{{"error", "standby replica: another huygens-scheduler extender leads"}}.dump()};
      }
      return verb(body);
    };
  };
  http.HandlePost("/filter", leading_only([h](const std::string& body) { return h->Filter(body); }));
  http.HandlePost("/prioritize", leading_only([h](const std::string& body) { return h->Prioritize(body); }));
  http.HandlePost("/bind", leading_only([h](const std::string& body) { return h->Bind(body); }));
}

bool SchedulerService::Synced() const { return impl_->started && impl_->feed.Synced(); }

absl::Status SchedulerService::Ready() const {
  if (!impl_->started) return absl::UnavailableError("the service has not started");
  return impl_->feed.Ready();
}

bool SchedulerService::Leading() const { return impl_->leading; }
int64_t SchedulerService::BoundPods() const { return impl_->writer->bound(); }

absl::Status SchedulerService::Healthy() const {
  const int64_t idle = std::chrono::duration_cast<std::chrono::milliseconds>(impl_->loop->SinceProgress()).count();
  if (impl_->started && idle > 60000) {
    return absl::DeadlineExceededError(fmt::format("the scheduling loop made no progress for {} ms", idle));
  }
  return absl::OkStatus();
}

}  // namespace huygens::scheduler
