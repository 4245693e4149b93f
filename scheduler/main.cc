// huygens-scheduler: schedules pods whose spec.schedulerName is the configured name, with exact
// NUMA-aware cpusets (docs/scheduler-service.md; kDescription below is its --help).
//
// Exit codes: 0 after SIGTERM/SIGINT; 1 on a bad flag, configuration or kubeconfig; 2 on an
// unknown --log-level (serving/log_level.h).
#include <unistd.h>

#include <csignal>
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "base/version.h"
#include "fmt/format.h"
#include "kube/client.h"
#include "kube/config.h"
#include "serving/http_server.h"
#include "serving/log_level.h"
#include "scheduler/config.h"
#include "scheduler/service.h"
#include "spdlog/spdlog.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

constexpr char kDescription[] = R"(huygens-scheduler: NUMA-aware scheduling with exact cpusets for Kubernetes.

Schedules the pods whose spec.schedulerName is one of its profiles' names: picks the node, the
NUMA node(s) and the exact cpuset of every container, writes the decision to the pod
(huygens.io/allocation) on its Binding, and logs and posts a Scheduled event naming them.
With extender.enabled it serves kube-scheduler's extender protocol instead. Serves /metrics,
/healthz and /readyz. Stop with SIGTERM or SIGINT (the Lease is released). Exit status: 0 after
a signal, 1 on a bad flag, configuration or kubeconfig. See docs/scheduler-service.md.
)";

int Fail(std::string_view message) {
  fmt::print(stderr, "huygens-scheduler: {}\n", message);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace huygens;
  CLI::App app{kDescription, "huygens-scheduler"};
  app.footer(std::string("\nConfiguration file (--config, YAML; every field optional, unknown fields are "
                         "errors;\nthe values shown are the defaults, or examples where a field has none):\n\n") +
             scheduler::kSchedulerConfigReference);
  std::string config_path, kubeconfig, context, server, identity, metrics_address, bind_address,
      log_level = "info";
  bool no_leader_elect = false;
  app.set_version_flag("--version", VersionLine("huygens-scheduler"), "Print the version and exit");
  app.add_option("--config", config_path,
                 "Configuration file (YAML, fields below; default: every default)");
  app.add_option("--kubeconfig", kubeconfig,
                 "kubeconfig file (default: the in-cluster service account)");
  app.add_option("--context", context, "kubeconfig context (default: its current-context)");
  app.add_option("--master", server,
                 "API server URL, overriding the kubeconfig's (without --kubeconfig: plain HTTP, "
                 "no credentials; for tests)");
  app.add_option("--identity", identity,
                 "Leader election identity, the Lease's holder (default: hostname_pid)");
  app.add_option("--metrics-address", metrics_address,
                 "host:port of /metrics, /healthz, /readyz, overriding metricsAddress; port 0 "
                 "picks a free port, printed on stdout");
  app.add_option("--bind-address", bind_address,
                 "IP address to serve on, replacing the host of metricsAddress and extender.address "
                 "(e.g. the pod's IP; default: their own hosts)");
  app.add_flag("--no-leader-elect", no_leader_elect,
               "Schedule at once without a Lease (one instance only), overriding "
               "leaderElection.leaderElect");
  app.add_option("--log-level", log_level, std::string(serving::kLogLevelNames));
  CLI11_PARSE(app, argc, argv);
  const auto level = serving::ParseLogLevel(log_level);
  if (!level.ok()) {
    Fail(std::string(level.status().message()));
    return 2;
  }
  spdlog::set_level(*level);

  scheduler::SchedulerConfig config;
  if (!config_path.empty()) {
    auto loaded = scheduler::LoadSchedulerConfig(config_path);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    config = *std::move(loaded);
  }
  if (!metrics_address.empty()) config.metrics_address = metrics_address;
  if (!bind_address.empty()) {
    for (std::string* address : {&config.metrics_address, &config.extender_address}) {
      auto bound = serving::ReplaceHost(*address, bind_address);
      if (!bound.ok()) return Fail(std::string(bound.status().message()));
      *address = *std::move(bound);
    }
  }
  if (no_leader_elect) config.leader_election.leader_elect = false;

  kube::RestConfig rest;
  if (!server.empty() && kubeconfig.empty()) {
    rest.server = server;
  } else if (!kubeconfig.empty()) {
    auto loaded = kube::LoadKubeconfig(kubeconfig, context);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    rest = *std::move(loaded);
    if (!server.empty()) rest.server = server;
  } else {
    auto loaded = kube::InClusterConfig();
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    rest = *std::move(loaded);
  }
  rest.qps = config.qps;
  rest.burst = config.burst;
  auto rest_client = kube::RestClient::Create(rest);
  if (!rest_client.ok()) return Fail(std::string(rest_client.status().message()));
  kube::Client client(*std::move(rest_client));

  if (identity.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    identity = fmt::format("{}_{}", host, getpid());
  }
  serving::MetricsRegistry registry;
  auto service = scheduler::SchedulerService::Create(&client, {.config = config, .identity = identity}, &registry);
  if (!service.ok()) return Fail(std::string(service.status().message()));

  serving::HttpServer http({.address = config.metrics_address}, &registry);
  scheduler::SchedulerService* svc = service->get();
  http.AddHealthCheck("scheduling-loop", [svc] { return svc->Healthy(); });
  http.AddReadyCheck("informers", [svc] { return svc->Ready(); });
  if (config.extender_enabled && config.leader_election.leader_elect) {
    // Only the leading extender replica is ready, so kube-scheduler's calls through the Service
    // reach it alone.
    http.AddReadyCheck("leading", [svc] {
      return svc->Leading() ? absl::OkStatus() : absl::UnavailableError("standby: another replica leads");
    });
  }
  if (absl::Status s = http.Start(); !s.ok()) return Fail(std::string(s.message()));
  // The bound port on stdout, so that tests (and operators using port 0) can find it.
  fmt::print("huygens-scheduler: serving on port {} as {}\n", http.port(), identity);
  // Extender mode: kube-scheduler's extender protocol on its own address. kube-scheduler is one
  // client with several calls at once (filter and prioritize of the next pod while binds are in
  // flight): it may hold more connections than the default.
  std::unique_ptr<serving::HttpServer> extender;
  if (config.extender_enabled) {
    extender = std::make_unique<serving::HttpServer>(
        serving::HttpServerOptions{.address = config.extender_address,
                                   .max_body_bytes = config.extender_max_request_bytes,
                                   .max_connections_per_client = 32,
                                   .tls = config.extender_tls},
        nullptr);
    svc->ServeExtender(*extender);
    if (absl::Status s = extender->Start(); !s.ok()) return Fail(std::string(s.message()));
    fmt::print("huygens-scheduler: extender serving {} on port {}\n", config.extender_tls ? "HTTPS" : "HTTP",
               extender->port());
    if (!config.extender_tls) {
      spdlog::warn("extender: plain HTTP without client authentication (extender.tls is unset): anyone who "
                   "reaches {} can call /bind", config.extender_address);
    }
  }
  std::fflush(stdout);

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  (*service)->Start();
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  spdlog::info("stopping");
  if (extender != nullptr) extender->Stop();
  (*service)->Stop();
  http.Stop();
  spdlog::info("stopped");
  return 0;
}
