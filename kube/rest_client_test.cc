#include "kube/rest_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "kube/api_error.h"
#include "kube/testing/fake_apiserver.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace huygens::kube {
namespace {

namespace fs = std::filesystem;
using testing::FakeApiServer;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A self-signed certificate for 127.0.0.1, made with the openssl tool at test time.
class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("huygens-tls-{}", getpid());
    fs::create_directories(dir_);
    std::string command = fmt::format(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext "
        "subjectAltName=IP:127.0.0.1 -keyout '{0}/key.pem' -out '{0}/cert.pem' >/dev/null 2>&1",
        dir_.string());
    if (std::system(command.c_str()) != 0) GTEST_SKIP() << "the openssl tool is not available";
    testing::FakeApiServerOptions options;
    options.tls_cert_file = (dir_ / "cert.pem").string();
    options.tls_key_file = (dir_ / "key.pem").string();
    auto server = FakeApiServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override { fs::remove_all(dir_); }

  absl::Status GetNodes(RestConfig config) {
    config.server = server_->url();
    auto rest = RestClient::Create(config);
    if (!rest.ok()) return rest.status();
    return (*rest)->Send(HttpRequest{"GET", "/api/v1/nodes", {}, "", ""}).status();
  }

  fs::path dir_;
  std::unique_ptr<FakeApiServer> server_;
};

TEST_F(TlsTest, ServerCertificateIsVerifiedAgainstTheConfiguredCa) {
  EXPECT_EQ(server_->url().rfind("https://", 0), 0u);
  RestConfig with_ca;
  with_ca.ca_pem = Slurp(dir_ / "cert.pem");
  EXPECT_TRUE(GetNodes(with_ca).ok());

  absl::Status untrusted = GetNodes(RestConfig{});
  EXPECT_EQ(untrusted.code(), absl::StatusCode::kUnavailable) << untrusted;
  EXPECT_EQ(HttpCode(untrusted), 0);

  RestConfig insecure;
  insecure.insecure_skip_tls_verify = true;
  EXPECT_TRUE(GetNodes(insecure).ok());
}

TEST(RestClientTest, SlowAnswersTimeOut) {
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok());
  (*server)->SetDelay(std::chrono::milliseconds(1500));
  RestConfig config;
  config.server = (*server)->url();
  config.timeout = std::chrono::milliseconds(300);
  auto rest = RestClient::Create(config);
  ASSERT_TRUE(rest.ok());
  auto answer = (*rest)->Send(HttpRequest{"GET", "/api/v1/nodes", {}, "", ""});
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kDeadlineExceeded) << answer.status();
  EXPECT_TRUE(IsRetryable(answer.status()));
}

TEST(RestClientTest, AStreamSaysWhenTheServerTookItEvenIfNoLineFollows) {
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok());
  RestConfig config;
  config.server = (*server)->url();
  auto rest = RestClient::Create(config);
  ASSERT_TRUE(rest.ok());
  // A quiet watch: nothing changes, so the server sends headers and then nothing until it ends
  // the watch after a second.
  const HttpRequest watch{"GET", "/api/v1/nodes", {{"watch", "true"}, {"timeoutSeconds", "1"}}, "", ""};
  int opened = 0;
  int lines = 0;
  absl::Status s = (*rest)->Stream(
      watch, [&](std::string_view) { return ++lines > 0; }, nullptr, [&] { ++opened; });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(lines, 0);
  // An error answer is not taken.
  (*server)->FailNext("watch", "nodes", 1, 500);
  s = (*rest)->Stream(watch, [&](std::string_view) { return true; }, nullptr, [&] { ++opened; });
  EXPECT_EQ(HttpCode(s), 500) << s;
  EXPECT_EQ(opened, 1);
}

TEST(RestClientTest, FailuresAreLoggedWithVerbPathAndStatusButNoToken) {
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok());
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  RestConfig config;
  config.server = (*server)->url();
  config.bearer_token = "very-secret-token";
  auto rest = RestClient::Create(config);
  ASSERT_TRUE(rest.ok());
  auto missing = (*rest)->Send(HttpRequest{"GET", "/api/v1/namespaces/default/pods/web", {}, "", ""});
  RestConfig unreachable = config;
  unreachable.server = "http://127.0.0.1:1";
  auto refused = (*RestClient::Create(unreachable))->Send(HttpRequest{"DELETE", "/api/v1/nodes/n1", {}, "", ""});
  spdlog::set_default_logger(previous);

  EXPECT_TRUE(IsApiNotFound(missing.status()));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  std::string text = log.str();
  EXPECT_NE(text.find("GET /api/v1/namespaces/default/pods/web failed: HTTP 404 NotFound"), std::string::npos) << text;
  EXPECT_NE(text.find("DELETE /api/v1/nodes/n1 failed"), std::string::npos) << text;
  EXPECT_EQ(text.find("very-secret-token"), std::string::npos);
  EXPECT_EQ(std::string(missing.status().message()).find("very-secret-token"), std::string::npos);
}

// Answers `count` requests on 127.0.0.1 with 200 {} and one connection each, recording the
// Authorization header of each: what the client authenticated with.
class HeaderRecorder {
 public:
  explicit HeaderRecorder(int count) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length);
    ::listen(fd_, 4);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this, count] {
      for (int i = 0; i < count; ++i) {
        const int c = ::accept(fd_, nullptr, nullptr);
        std::string request;
        char buffer[4096];
        while (request.find("\r\n\r\n") == std::string::npos) {
          const ssize_t n = ::recv(c, buffer, sizeof(buffer), 0);
          if (n <= 0) break;
          request.append(buffer, static_cast<size_t>(n));
        }
        const size_t at = request.find("Authorization: ");
        authorizations_.push_back(at == std::string::npos ? "" : request.substr(at + 15, request.find("\r\n", at) - at - 15));
        const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
        ::send(c, answer.data(), answer.size(), 0);
        ::close(c);
      }
    });
  }
  ~HeaderRecorder() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  // The Authorization header of each request, in order; waits for all `count` of them.
  std::vector<std::string> Take() {
    thread_.join();
    return authorizations_;
  }

 private:
  int fd_;
  int port_;
  std::thread thread_;
  std::vector<std::string> authorizations_;
};

TEST(RestClientTest, ARotatedServiceAccountTokenIsSentFromTheNextRequestOn) {
  const fs::path dir = fs::path(::testing::TempDir()) / fmt::format("huygens-token-{}", getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "token", std::ios::trunc) << "token-1\n";
  HeaderRecorder server(2);
  RestConfig config;
  config.server = server.url();
  config.bearer_token = "token-1";
  config.bearer_token_file = (dir / "token").string();
  auto rest = RestClient::Create(config);
  ASSERT_TRUE(rest.ok());
  EXPECT_TRUE((*rest)->Send(HttpRequest{"GET", "/api/v1/nodes"}).ok());
  std::ofstream(dir / "token", std::ios::trunc) << "token-2-rotated\n";
  EXPECT_TRUE((*rest)->Send(HttpRequest{"GET", "/api/v1/nodes"}).ok());
  EXPECT_EQ(server.Take(), (std::vector<std::string>{"Bearer token-1", "Bearer token-2-rotated"}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace huygens::kube
