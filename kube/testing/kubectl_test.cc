// Drives FakeApiServer with the real kubectl, so the fake cannot drift from the protocol that
// real clients speak: discovery, client-side apply (create, then strategic merge patch), get with
// selectors and chunking, merge and JSON patches, conflicts, delete, and get --watch.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"

namespace huygens::kube::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kKubectl[] = "/usr/bin/kubectl";

struct KubectlRun {
  int exit_code;
  std::string out;
  std::string err;
};

constexpr char kPodYaml[] = R"(apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: app
    image: nginx:1
    resources: {requests: {cpu: "2"}, limits: {cpu: "2"}}
)";

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kKubectl)) GTEST_SKIP() << "kubectl is not installed at " << kKubectl;
    dir_ = fs::temp_directory_path() / fmt::format("huygens-kubectl-{}-{}", getpid(), counter_++);
    fs::create_directories(dir_);
    auto server = FakeApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    WriteKubeconfig(server_->url());
  }
  void TearDown() override {
    server_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void WriteKubeconfig(const std::string& url) {
    std::ofstream(dir_ / "kubeconfig") << fmt::format(R"(apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {{server: "{}"}}
contexts:
- name: fake
  context: {{cluster: fake, user: tester, namespace: default}}
current-context: fake
users:
- name: tester
  user: {{token: not-a-secret}}
)",
                                                      url);
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }

  // Runs kubectl with the test's kubeconfig and HOME (so its discovery cache stays in the temp
  // dir), bounded by `timeout` seconds.
  KubectlRun Kubectl(const std::string& args, int timeout = 20) {
    std::string out_file = (dir_ / "stdout").string();
    std::string err_file = (dir_ / "stderr").string();
    std::string command = fmt::format("HOME='{0}' KUBECONFIG='{0}/kubeconfig' timeout {1} {2} {3} >'{4}' 2>'{5}'",
                                      dir_.string(), timeout, kKubectl, args, out_file, err_file);
    int status = std::system(command.c_str());
    auto slurp = [](const std::string& path) {
      std::ifstream in(path);
      std::stringstream s;
      s << in.rdbuf();
      return s.str();
    };
    return KubectlRun{WEXITSTATUS(status), slurp(out_file), slurp(err_file)};
  }

  json KubectlJson(const std::string& args) {
    KubectlRun r = Kubectl(args + " -o json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  static inline int counter_ = 0;
  fs::path dir_;
  std::unique_ptr<FakeApiServer> server_;
};

TEST_F(KubectlTest, ApplyCreatesThenStrategicMergePatchesAPod) {
  KubectlRun created = Kubectl("apply -f " + WriteFile("pod.yaml", kPodYaml));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_EQ(created.out, "pod/web created\n");
  auto pod = server_->Get("pods", "default", "web");
  ASSERT_TRUE(pod.has_value());
  EXPECT_TRUE(pod->at("metadata").at("annotations").contains("kubectl.kubernetes.io/last-applied-configuration"));

  std::string changed = kPodYaml;
  changed.replace(changed.find("nginx:1"), 7, "nginx:2");
  KubectlRun patched = Kubectl("apply -f " + WriteFile("pod2.yaml", changed));
  ASSERT_EQ(patched.exit_code, 0) << patched.err;
  EXPECT_EQ(patched.out, "pod/web configured\n");
  pod = server_->Get("pods", "default", "web");
  const json& container = pod->at("spec").at("containers").at(0);
  EXPECT_EQ(container.at("image"), "nginx:2");
  // kubectl sent only the image; the container merged by name keeps its resources.
  EXPECT_EQ(container.at("resources").at("limits").at("cpu"), "2");
}

TEST_F(KubectlTest, GetFiltersByLabelAndFieldSelectorAndFollowsChunks) {
  for (int i = 0; i < 5; ++i) {
    json pod = {{"metadata", {{"name", fmt::format("p{}", i)}, {"namespace", "default"},
                              {"labels", {{"tier", i % 2 == 0 ? "even" : "odd"}}}}},
                {"spec", {{"nodeName", i < 2 ? "n1" : "n2"}}}};
    ASSERT_TRUE(server_->Create("pods", pod).ok());
  }
  json all = KubectlJson("get pods --chunk-size=2");
  EXPECT_EQ(all["items"].size(), 5u);
  // Chunks of 2: three list requests for five pods.
  EXPECT_EQ(server_->RequestCount("list", "pods"), 3);
  json even = KubectlJson("get pods -l tier=even");
  EXPECT_EQ(even["items"].size(), 3u);
  json on_n1 = KubectlJson("get pods --field-selector spec.nodeName=n1");
  ASSERT_EQ(on_n1["items"].size(), 2u);
  EXPECT_EQ(on_n1["items"][0]["metadata"]["name"], "p0");
  KubectlRun table = Kubectl("get pods p3");
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("p3"), std::string::npos);
}

TEST_F(KubectlTest, MergeAndJsonPatchesApplyAndStaleVersionConflicts) {
  ASSERT_EQ(Kubectl("apply -f " + WriteFile("pod.yaml", kPodYaml)).exit_code, 0);
  KubectlRun merge = Kubectl(R"(patch pod web --type merge -p '{"metadata":{"annotations":{"huygens.io/allocation":"{}"}}}')");
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  KubectlRun jsonpatch = Kubectl(R"(patch pod web --type json -p '[{"op":"add","path":"/metadata/labels/tier","value":"gold"}]')");
  ASSERT_EQ(jsonpatch.exit_code, 0) << jsonpatch.err;
  auto pod = server_->Get("pods", "default", "web");
  EXPECT_EQ(pod->at("metadata").at("annotations").at("huygens.io/allocation"), "{}");
  EXPECT_EQ(pod->at("metadata").at("labels").at("tier"), "gold");

  KubectlRun stale = Kubectl(R"(patch pod web --type merge -p '{"metadata":{"resourceVersion":"1"}}')");
  EXPECT_NE(stale.exit_code, 0);
  EXPECT_NE(stale.err.find("Error from server (Conflict): Operation cannot be fulfilled on pods \"web\": "
                           "the object has been modified"),
            std::string::npos)
      << stale.err;
  KubectlRun failed_test = Kubectl(R"(patch pod web --type json -p '[{"op":"test","path":"/metadata/labels/tier","value":"silver"}]')");
  EXPECT_NE(failed_test.exit_code, 0);
}

TEST_F(KubectlTest, CreateTwiceIsAlreadyExistsAndDeleteThenGetIsNotFound) {
  std::string file = WriteFile("pod.yaml", kPodYaml);
  ASSERT_EQ(Kubectl("create -f " + file).exit_code, 0);
  KubectlRun again = Kubectl("create -f " + file);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("Error from server (AlreadyExists)"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("pods \"web\" already exists"), std::string::npos) << again.err;

  KubectlRun deleted = Kubectl("delete pod web");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "pod \"web\" deleted\n");
  EXPECT_FALSE(server_->Get("pods", "default", "web").has_value());
  KubectlRun missing = Kubectl("get pod web");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(missing.err, "Error from server (NotFound): pods \"web\" not found\n");
}

TEST_F(KubectlTest, GetWatchStreamsAddedModifiedAndDeletedEvents) {
  ASSERT_EQ(Kubectl("apply -f " + WriteFile("pod.yaml", kPodYaml)).exit_code, 0);
  std::string watch_out = (dir_ / "watch.out").string();
  std::string command =
      fmt::format("HOME='{0}' KUBECONFIG='{0}/kubeconfig' timeout 5 {1} get pods --watch -o json "
                  "--output-watch-events >'{2}' 2>&1",
                  dir_.string(), kKubectl, watch_out);
  std::thread watcher([&] { (void)std::system(command.c_str()); });
  // The watch is open once the fake counts it; then write.
  for (int i = 0; i < 100 && server_->ActiveWatches() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(server_->ActiveWatches(), 1);
  ASSERT_EQ(Kubectl(R"(patch pod web --type merge -p '{"metadata":{"labels":{"x":"y"}}}')").exit_code, 0);
  ASSERT_EQ(Kubectl("delete pod web").exit_code, 0);
  watcher.join();

  std::ifstream in(watch_out);
  std::vector<std::string> types;
  while (in >> std::ws && in.peek() != EOF) {
    json event;
    in >> event;
    types.push_back(event.at("type").get<std::string>());
    EXPECT_EQ(event.at("object").at("metadata").at("name"), "web");
  }
  EXPECT_EQ(types, (std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"}));
}

TEST_F(KubectlTest, AppliesNodesAndNodeResourceTopologiesFromTheFixture) {
  std::string node = WriteFile("node.yaml", R"(apiVersion: v1
kind: Node
metadata:
  name: ip-192-167-190-41.us-gov-west-1.compute.internal
  labels: {kubernetes.io/os: linux}
)");
  ASSERT_EQ(Kubectl("apply -f " + node).exit_code, 0);
  KubectlRun nrt = Kubectl(std::string("apply -f ") + HUYGENS_FIXTURES +
                    "/nrt/nrt-v1alpha2.nfd-topology-updater.aws-govcloud-2numa.yaml");
  ASSERT_EQ(nrt.exit_code, 0) << nrt.err;
  EXPECT_EQ(nrt.out,
            "noderesourcetopology.topology.node.k8s.io/ip-192-167-190-41.us-gov-west-1.compute.internal "
            "created\n");
  json nodes = KubectlJson("get nodes");
  ASSERT_EQ(nodes["items"].size(), 1u);
  json topologies = KubectlJson("get node-res-topo");
  ASSERT_EQ(topologies["items"].size(), 1u);
  const json& stored = topologies["items"][0];
  EXPECT_EQ(stored["zones"].size(), 2u);
  EXPECT_EQ(stored["attributes"][0]["value"], "single-numa-node");
  // The fixture's own resourceVersion is the old cluster's: the fake assigned a fresh one.
  EXPECT_NE(stored["metadata"]["resourceVersion"], "13307");
  KubectlRun patched = Kubectl(
      R"(patch noderesourcetopology ip-192-167-190-41.us-gov-west-1.compute.internal --type merge -p '{"metadata":{"annotations":{"huygens.io/pools":"{}"}}}')");
  EXPECT_EQ(patched.exit_code, 0) << patched.err;
}

TEST_F(KubectlTest, StandaloneServerAnswersVersionAndDiscovery) {
  std::string url_file = (dir_ / "url").string();
  std::string command = fmt::format("{} >'{}' & echo $!", HUYGENS_FAKE_APISERVER_BIN, url_file);
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  int pid = 0;
  ASSERT_EQ(fscanf(pipe, "%d", &pid), 1);
  pclose(pipe);
  std::string url;
  for (int i = 0; i < 100 && url.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream(url_file) >> url;
  }
  ASSERT_FALSE(url.empty());
  WriteKubeconfig(url);
  KubectlRun version = Kubectl("get --raw /version");
  KubectlRun resources = Kubectl("api-resources --api-group=topology.node.k8s.io");
  kill(pid, SIGTERM);
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(json::parse(version.out).at("major"), "1");
  ASSERT_EQ(resources.exit_code, 0) << resources.err;
  EXPECT_NE(resources.out.find("noderesourcetopologies"), std::string::npos) << resources.out;
  EXPECT_NE(resources.out.find("NodeResourceTopology"), std::string::npos) << resources.out;
}

}  // namespace
}  // namespace huygens::kube::testing
