#include "kube/config.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace huygens::kube {
namespace {

namespace fs = std::filesystem;

std::string B64(const std::string& s) {
  std::string out;
  absl::Base64Escape(absl::string_view(s.data(), s.size()), &out);
  return out;
}

constexpr char kTwoContexts[] = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: {CA}
- name: lab
  cluster:
    server: https://lab:6443
    insecure-skip-tls-verify: true
    certificate-authority: certs/ca.pem
contexts:
- name: prod
  context: {cluster: prod, user: admin, namespace: huygens}
- name: lab
  context: {cluster: lab, user: robot}
users:
- name: admin
  user:
    client-certificate-data: {CERT}
    client-key-data: {KEY}
- name: robot
  user:
    tokenFile: token
)";

std::string Fill(std::string text) {
  auto put = [&](const std::string& what, const std::string& value) { text.replace(text.find(what), what.size(), value); };
  put("{CA}", B64("CA PEM"));
  put("{CERT}", B64("CERT PEM"));
  put("{KEY}", B64("KEY PEM"));
  return text;
}

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("huygens-kubeconfig-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "certs");
    std::ofstream(dir_ / "certs" / "ca.pem") << "LAB CA";
    std::ofstream(dir_ / "token") << "robot-token\n";
    std::ofstream(dir_ / "config") << Fill(kTwoContexts);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(KubeconfigTest, CurrentContextUsesEmbeddedCertificatesAndItsNamespace) {
  auto config = LoadKubeconfig((dir_ / "config").string());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, "CA PEM");
  EXPECT_EQ(config->client_certificate_pem, "CERT PEM");
  EXPECT_EQ(config->client_key_pem, "KEY PEM");
  EXPECT_EQ(config->default_namespace, "huygens");
  EXPECT_TRUE(config->bearer_token.empty());
  EXPECT_FALSE(config->insecure_skip_tls_verify);
}

TEST_F(KubeconfigTest, NamedContextReadsFilesRelativeToTheKubeconfig) {
  auto config = LoadKubeconfig((dir_ / "config").string(), "lab");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://lab:6443");
  EXPECT_EQ(config->ca_pem, "LAB CA");
  EXPECT_EQ(config->bearer_token, "robot-token");
  EXPECT_EQ(config->bearer_token_file, (dir_ / "token").string());  // re-read when it rotates
  EXPECT_TRUE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->default_namespace, "default");
}

TEST_F(KubeconfigTest, ErrorsNameTheMissingOrUnsupportedField) {
  auto missing = LoadKubeconfig((dir_ / "config").string(), "staging");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("contexts has no entry named \"staging\""), std::string::npos);
  auto exec = ParseKubeconfig(R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {exec: {command: aws}}}]
)",
                              "");
  EXPECT_EQ(exec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(exec.status().message().find("users[u].user.exec is not supported"), std::string::npos);
  auto bad_b64 = ParseKubeconfig(R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k", certificate-authority-data: "***"}}]
contexts: [{name: c, context: {cluster: k}}]
)",
                                 "");
  EXPECT_NE(bad_b64.status().message().find("certificate-authority-data is not valid base64"), std::string::npos);
  EXPECT_EQ(ParseKubeconfig("- a list", "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(KubeconfigTest, InClusterConfigReadsTheServiceAccountAndEnvironment) {
  std::ofstream(dir_ / "ca.crt") << "SA CA";
  std::ofstream(dir_ / "namespace") << "kube-system\n";
  InClusterSource source;
  source.service_account_dir = dir_.string();
  source.getenv = [](const char* name) -> std::optional<std::string> {
    if (std::string(name) == "KUBERNETES_SERVICE_HOST") return "fd00::1";
    if (std::string(name) == "KUBERNETES_SERVICE_PORT") return "443";
    return std::nullopt;
  };
  auto config = InClusterConfig(source);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
  EXPECT_EQ(config->bearer_token, "robot-token");
  EXPECT_EQ(config->bearer_token_file, (dir_ / "token").string());  // re-read when it rotates
  EXPECT_EQ(config->ca_pem, "SA CA");
  EXPECT_EQ(config->default_namespace, "kube-system");

  source.getenv = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_EQ(InClusterConfig(source).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace huygens::kube
