// End-to-end scheduling throughput through the fake API server: pods bound per second at 1,000
// nodes (informers, queue, ScheduleOne, allocation patch, Binding, events), one instance.
//   build-*/scheduler/scheduler_service_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include "kube/testing/fake_apiserver.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/test_client.h"
#include "scheduler/service.h"
#include "scheduler/test_cluster.h"

namespace huygens::scheduler {
namespace {

void BM_PodsBoundPerSecond(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pods = static_cast<int>(state.range(1));
  for (auto _ : state) {
    state.PauseTiming();
    auto server = kube::testing::FakeApiServer::Start();
    if (!server.ok()) {
      state.SkipWithError("fake server");
      return;
    }
    for (int i = 0; i < nodes; ++i) (void)testing::AddMachine(**server, "n" + std::to_string(i), 64);
    huygens::testing::FakeClock clock;
    auto client = kube::testing::ClientFor(**server, &clock);
    serving::MetricsRegistry registry;
    ServiceOptions options;
    options.config.leader_election.leader_elect = false;
    auto service = SchedulerService::Create(client.get(), options, &registry);
    (*service)->Start();
    while (!(*service)->Synced()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the informers' events applied
    state.ResumeTiming();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < pods; ++i) {
      (void)(*server)->Create("pods", testing::GuaranteedPod("p" + std::to_string(i), 4));
    }
    while ((*service)->BoundPods() < pods) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.PauseTiming();
    state.counters["pods_per_second"] = pods / seconds;
    (*service)->Stop();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_PodsBoundPerSecond)->Args({1000, 400})->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace huygens::scheduler
