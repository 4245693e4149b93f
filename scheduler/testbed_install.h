// Test helper for the `cluster` tests that install Huygens on the real testbed cluster
// (testbed/cluster.sh, docs/testbed.md): runs the documented `kubectl apply` commands with the
// pinned kubectl, makes ServiceAccount token kubeconfigs, starts and stops the services as local
// processes, reads the apiserver's audit log and the RBAC rules a ServiceAccount holds.
//
// The testbed is named by HUYGENS_TESTBED_DIR (CMake sets it for tests of label `cluster`);
// its `env` file names the pinned binaries. Every call talks to the real apiserver as the
// testbed's admin (DIR/admin.kubeconfig) unless it says otherwise.
//
// Thread-safety: one test thread.
#ifndef HUYGENS_SCHEDULER_TESTBED_INSTALL_H_
#define HUYGENS_SCHEDULER_TESTBED_INSTALL_H_

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "kube/config.h"
#include "kube/rest_client.h"
#include "kube/testing/process.h"
#include "nlohmann/json.hpp"

namespace huygens::scheduler::testing {

using kube::testing::Slurp;

// One permission as the apiserver's authorizer sees a request: API group ("" = core), resource
// with "/<subresource>" when there is one ("pods/binding"), verb.
using Permission = std::tuple<std::string, std::string, std::string>;

// The `kubectl apply ...` lines of the fenced code blocks of `markdown`, in order, without
// trailing `# comments`.
inline std::vector<std::string> DocumentedApplyCommands(const std::string& markdown) {
  std::vector<std::string> commands;
  std::istringstream in(markdown);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("```")) {
      fenced = !fenced;
      continue;
    }
    if (!fenced || !line.starts_with("kubectl apply ")) continue;
    if (std::size_t hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    commands.push_back(line);
  }
  return commands;
}

// The paths after each `-f` of a kubectl command line.
inline std::vector<std::string> AppliedPaths(const std::string& command) {
  std::vector<std::string> paths;
  std::istringstream words(command);
  for (std::string w; words >> w;) {
    if (w == "-f" && words >> w) paths.push_back(w);
  }
  return paths;
}

using kube::testing::FreePort;
using kube::testing::Process;

// The testbed cluster of HUYGENS_TESTBED_DIR.
class Testbed {
 public:
  // nullopt when HUYGENS_TESTBED_DIR is unset or names no running testbed.
  static std::optional<Testbed> FromEnvironment() {
    const char* dir = std::getenv("HUYGENS_TESTBED_DIR");
    if (dir == nullptr || !std::filesystem::exists(std::filesystem::path(dir) / "env")) return std::nullopt;
    Testbed t;
    t.dir_ = dir;
    std::istringstream env(Slurp(t.dir_ / "env"));
    for (std::string line; std::getline(env, line);) {
      if (line.starts_with("HUYGENS_TESTBED_KUBE_BIN=")) t.kube_bin_ = line.substr(line.find('=') + 1);
    }
    std::string server = Slurp(t.dir_ / "server");
    while (!server.empty() && server.back() == '\n') server.pop_back();
    t.server_ = server;
    return t;
  }

  const std::filesystem::path& dir() const { return dir_; }
  std::string admin_kubeconfig() const { return (dir_ / "admin.kubeconfig").string(); }
  std::string kube_bin(const std::string& name) const { return kube_bin_ + "/" + name; }

  // Runs `command` (a shell line starting with `kubectl`) in `cwd` as the admin, with the
  // pinned kubectl first on PATH; stdout+stderr in `output`. Returns the exit code.
  int Kubectl(const std::string& command, const std::string& cwd, std::string* output = nullptr) const {
    const std::filesystem::path out = dir_ / "kubectl.out";
    std::string line = fmt::format("cd '{}' && HOME='{}' KUBECONFIG='{}' PATH='{}':\"$PATH\" timeout 60 {} >'{}' 2>&1",
                                   cwd, dir_.string(), admin_kubeconfig(), kube_bin_, command, out.string());
    int status = std::system(line.c_str());
    if (output != nullptr) *output = Slurp(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // A kubeconfig (written to DIR/<sa>[-<node>].token.kubeconfig) with a fresh TokenRequest
  // token of ServiceAccount `ns`/`sa` (`kubectl create token`). With `node`, the token is bound
  // to a placeholder pod of that ServiceAccount on `node` (created if absent; nothing runs it),
  // as a DaemonSet pod's projected token is, so that it names the node (the user's extra
  // authentication.kubernetes.io/node-name) for the agent's ValidatingAdmissionPolicy.
  // Errors: the kubectl output.
  absl::StatusOr<std::string> ServiceAccountKubeconfig(const std::string& ns, const std::string& sa,
                                                       const std::string& node = "") const {
    std::string token;
    std::string bound;
    if (!node.empty()) {
      const std::string pod = sa + "-on-" + node;
      const std::filesystem::path manifest = dir_ / (pod + ".json");
      std::ofstream(manifest) << nlohmann::json{
          {"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", pod}, {"namespace", ns}}},
          {"spec",
           {{"serviceAccountName", sa},
            {"nodeName", node},
            {"containers", {{{"name", "placeholder"}, {"image", "huygens.local/placeholder"}}}}}}}
                                     .dump();
      if (Kubectl(fmt::format("kubectl apply -f '{}'", manifest.string()), dir_.string(), &token) != 0) {
        return absl::FailedPreconditionError("kubectl apply (token pod): " + token);
      }
      bound = fmt::format(" --bound-object-kind Pod --bound-object-name {}", pod);
    }
    // Up to three tries: once in CI (a loaded machine) a TokenRequest hung until `timeout 60`
    // killed kubectl, with no output, while the apiserver served everything else.
    int exit_code = 1;
    for (int attempt = 0; attempt < 3 && exit_code != 0; ++attempt) {
      exit_code = Kubectl(fmt::format("kubectl create token {} -n {} --duration 1h{}", sa, ns, bound), dir_.string(),
                          &token);
    }
    if (exit_code != 0) return absl::FailedPreconditionError("kubectl create token: " + token);
    while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
    const std::filesystem::path path = dir_ / (sa + (node.empty() ? "" : "-" + node) + ".token.kubeconfig");
    std::ofstream(path) << fmt::format(R"(apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster: {{server: "{}", certificate-authority: "{}"}}
users:
- name: {}
  user: {{token: "{}"}}
contexts:
- name: testbed
  context: {{cluster: testbed, user: {}}}
current-context: testbed
)",
                                       server_, (dir_ / "pki/ca.crt").string(), sa, token, sa);
    return path.string();
  }

  // Where the audit log ends now: give it to Audit to read only what came after.
  std::uintmax_t AuditMark() const {
    std::error_code ec;
    std::uintmax_t size = std::filesystem::file_size(dir_ / "logs/audit.log", ec);
    return ec ? 0 : size;
  }
  // The audit events (cluster.sh's policy: every service-account request, stage
  // ResponseComplete) after `mark` whose user is `username`.
  std::vector<nlohmann::json> Audit(std::uintmax_t mark, const std::string& username) const {
    std::vector<nlohmann::json> events;
    std::ifstream in(dir_ / "logs/audit.log");
    in.seekg(static_cast<std::streamoff>(mark));
    for (std::string line; std::getline(in, line);) {
      nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
      if (e.is_discarded() || e["user"].value("username", "") != username) continue;
      events.push_back(std::move(e));
    }
    return events;
  }

 private:
  std::filesystem::path dir_;
  std::string kube_bin_;
  std::string server_;
};

// The permission an audit event's request needed.
inline Permission PermissionOf(const nlohmann::json& audit_event) {
  nlohmann::json ref = audit_event.value("objectRef", nlohmann::json::object());
  std::string resource = ref.value("resource", "");
  if (std::string sub = ref.value("subresource", ""); !sub.empty()) resource += "/" + sub;
  return {ref.value("apiGroup", ""), resource, audit_event.value("verb", "")};
}

// Every permission the identity of `kubeconfig` holds in namespace `ns` (cluster-wide rules
// included), from a SelfSubjectRulesReview sent with that identity, skipping the review APIs
// that every authenticated user may call (authorization.k8s.io, authentication.k8s.io).
// resourceNames-restricted rules count like others. Errors: the API call's.
inline absl::StatusOr<std::set<Permission>> GrantedPermissions(const std::string& kubeconfig, const std::string& ns) {
  auto config = kube::LoadKubeconfig(kubeconfig);
  if (!config.ok()) return config.status();
  auto rest = kube::RestClient::Create(*config);
  if (!rest.ok()) return rest.status();
  nlohmann::json review = {{"apiVersion", "authorization.k8s.io/v1"},
                           {"kind", "SelfSubjectRulesReview"},
                           {"spec", {{"namespace", ns}}}};
  auto answer = (*rest)->Send({.verb = "POST",
                               .path = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                               .body = review.dump()});
  if (!answer.ok()) return answer.status();
  std::set<Permission> granted;
  for (const nlohmann::json& rule : (*answer)["status"]["resourceRules"]) {
    for (const auto& group : rule["apiGroups"]) {
      const std::string g = group.get<std::string>();
      if (g == "authorization.k8s.io" || g == "authentication.k8s.io") continue;
      for (const auto& resource : rule["resources"]) {
        for (const auto& verb : rule["verbs"]) granted.insert({g, resource.get<std::string>(), verb.get<std::string>()});
      }
    }
  }
  return granted;
}

// "group/resource verb" for messages.
inline std::string ToString(const Permission& p) {
  return fmt::format("{}{}{} {}", std::get<0>(p), std::get<0>(p).empty() ? "" : "/", std::get<1>(p), std::get<2>(p));
}

}  // namespace huygens::scheduler::testing

#endif  // HUYGENS_SCHEDULER_TESTBED_INSTALL_H_
