// The extender verbs as kube-scheduler calls them, at 1,000 nodes: each iteration one POST of
// filter, prioritize or bind over a kept-alive loopback connection to the extender's HTTP
// server, with node names only (nodeCacheCapable), so a figure is the verb's handler time plus
// HTTP and JSON on both ends; bind includes its Binding on the fake API server.
//   build/scheduler/scheduler_extender_bench
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <memory>
#include <string>
#include <vector>

#include "base/testing/fake_clock.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/test_client.h"
#include "scheduler/service.h"
#include "scheduler/test_cluster.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {
namespace {

using nlohmann::json;

constexpr int kNodes = 1000;

// The fake API server with kNodes 64-CPU nodes, and the service in extender mode serving them.
class Extender {
 public:
  // Empty when set up; else what failed.
  std::string Start() {
    spdlog::set_level(spdlog::level::warn);  // no line per bind
    auto server = kube::testing::FakeApiServer::Start();
    if (!server.ok()) return std::string(server.status().message());
    server_ = *std::move(server);
    for (int i = 0; i < kNodes; ++i) {
      if (!testing::AddMachine(*server_, fmt::format("n{}", i), 64)) return "creating a node failed";
      names_.push_back(fmt::format("n{}", i));
    }
    client_ = kube::testing::ClientFor(*server_, &clock_);
    ServiceOptions options;
    options.config.extender_enabled = true;
    options.config.leader_election.leader_elect = false;
    options.clock = &clock_;
    auto service = SchedulerService::Create(client_.get(), options, &registry_);
    if (!service.ok()) return std::string(service.status().message());
    service_ = *std::move(service);
    http_ = std::make_unique<serving::HttpServer>(serving::HttpServerOptions{}, nullptr);
    service_->ServeExtender(*http_);
    if (!http_->Start().ok()) return "serving failed";
    service_->Start();
    http_client_ = std::make_unique<httplib::Client>("127.0.0.1", http_->port());
    http_client_->set_keep_alive(true);
    http_client_->set_tcp_nodelay(true);  // as Go's net/http, kube-scheduler's client
    json probe = NewPod("probe");
    if (!testing::WaitFor([&] { return !Post("/filter", Args(probe)).contains("error"); })) return "filter never answered";
    return "";
  }
  ~Extender() {
    if (http_ != nullptr) http_->Stop();
    if (service_ != nullptr) service_->Stop();
  }

  // Creates a 4-CPU exclusive pod `name` for kube-scheduler and returns it as stored.
  json NewPod(const std::string& name) {
    (void)server_->Create("pods", testing::GuaranteedPod(name, 4, "default-scheduler"));
    return *server_->Get("pods", "default", name);
  }
  // ExtenderArgs for `pod` over every node, by name.
  json Args(const json& pod) const { return {{"Pod", pod}, {"NodeNames", names_}}; }
  // The reply to a POST of `body`; an object with "error" when there is none.
  json Post(const std::string& path, const json& body) {
    auto r = http_client_->Post(path, body.dump(), "application/json");
    if (!r || r->status != 200) return {{"error", "no 200 reply"}};
    return json::parse(r->body);
  }

 private:
  huygens::testing::FakeClock clock_;
  serving::MetricsRegistry registry_;
  std::unique_ptr<kube::testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<SchedulerService> service_;
  std::unique_ptr<serving::HttpServer> http_;
  std::unique_ptr<httplib::Client> http_client_;
  std::vector<std::string> names_;
};

// A fresh extender for each benchmark (each runs its fixed iterations once); false, with the
// error reported, when it could not be set up.
bool Setup(benchmark::State& state, Extender& e) {
  const std::string error = e.Start();
  if (!error.empty()) state.SkipWithError(error.c_str());
  return error.empty();
}

// Each iteration POSTs `path` for one pod over every node; `answered` judges the reply.
void EveryNode(benchmark::State& state, const char* path, bool (*answered)(const json& reply)) {
  Extender e;
  if (!Setup(state, e)) return;
  const json args = e.Args(e.NewPod("asked"));
  for (auto _ : state) {
    json r = e.Post(path, args);
    if (!answered(r)) state.SkipWithError(r.dump().substr(0, 200).c_str());
  }
}

void BM_Filter(benchmark::State& state) {
  EveryNode(state, "/filter", [](const json& r) { return r.value("nodenames", json::array()).size() == kNodes; });
}
void BM_Prioritize(benchmark::State& state) {
  EveryNode(state, "/prioritize", [](const json& r) { return r.is_array() && r.size() == kNodes; });
}

// Each iteration binds one of the pending pods (created before, as kube-scheduler binds pods its
// informers and the extender's have seen) onto the first node its untimed filter passed.
void BM_Bind(benchmark::State& state) {
  Extender e;
  if (!Setup(state, e)) return;
  std::vector<json> pods;
  for (int64_t i = 0; i < state.max_iterations; ++i) pods.push_back(e.NewPod(fmt::format("bound-{}", i)));
  std::size_t next = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const json& pod = pods[next++];
    json passed = e.Post("/filter", e.Args(pod)).value("nodenames", json::array());
    const json args = {{"PodName", pod["metadata"]["name"]}, {"PodNamespace", "default"},
                       {"PodUID", pod["metadata"]["uid"]}, {"Node", passed.empty() ? json("") : passed[0]}};
    state.ResumeTiming();
    json r = e.Post("/bind", args);
    if (r.value("Error", "no reply") != "") state.SkipWithError(r.dump().substr(0, 200).c_str());
  }
}

BENCHMARK(BM_Filter)->Iterations(2000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Prioritize)->Iterations(2000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Bind)->Iterations(500)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace huygens::scheduler
