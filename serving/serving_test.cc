#include "serving/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "base/version.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "serving/build_info.h"

namespace huygens::serving {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// An independent reader of the text exposition format 0.0.4 (the subset we write): returns every
// sample keyed by "name{l1=v1,l2=v2}" with label values unescaped, plus HELP and TYPE per family.
struct Parsed {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> help;
  std::map<std::string, std::string> type;
  std::vector<std::string> sample_order;
};

std::string UnescapeHelp(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      ++i;
      out += text[i] == 'n' ? '\n' : text[i];
    } else {
      out += text[i];
    }
  }
  return out;
}

Parsed Parse(const std::string& text) {
  Parsed p;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    EXPECT_NE(eol, std::string::npos) << "every line ends with a newline";
    if (eol == std::string::npos) break;
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.rfind("# HELP ", 0) == 0) {
      std::string rest = line.substr(7);
      std::size_t sp = rest.find(' ');
      p.help[rest.substr(0, sp)] = UnescapeHelp(rest.substr(sp + 1));
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::string rest = line.substr(7);
      std::size_t sp = rest.find(' ');
      p.type[rest.substr(0, sp)] = rest.substr(sp + 1);
      continue;
    }
    std::size_t i = 0;
    std::string name;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') name += line[i++];
    std::string key = name;
    if (i < line.size() && line[i] == '{') {
      ++i;
      key += '{';
      bool first = true;
      while (line[i] != '}') {
        std::string label;
        while (line[i] != '=') label += line[i++];
        ++i;
        EXPECT_EQ(line[i], '"');
        ++i;
        std::string value;
        while (line[i] != '"') {
          if (line[i] == '\\') {
            ++i;
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
          ++i;
        }
        ++i;
        if (line[i] == ',') ++i;
        key += (first ? "" : ",") + label + "=" + value;
        first = false;
      }
      key += '}';
      ++i;
    }
    EXPECT_EQ(line[i], ' ') << line;
    std::string value = line.substr(i + 1);
    double v = value == "+Inf" ? INFINITY : value == "-Inf" ? -INFINITY : std::stod(value);
    p.samples[key] = v;
    p.sample_order.push_back(key);
  }
  return p;
}

TEST(MetricsRegistry, CounterWithLabelsRendersHelpTypeAndOneLinePerSeries) {
  MetricsRegistry registry;
  CounterFamily& attempts =
      registry.AddCounter("huygens_attempts_total", "Scheduling attempts.", {"result", "profile"});
  attempts.Inc({"scheduled", "default"});
  attempts.Inc({"scheduled", "default"}, 2);
  attempts.Inc({"error", "default"});
  Parsed p = Parse(registry.Expose());
  EXPECT_EQ(p.help["huygens_attempts_total"], "Scheduling attempts.");
  EXPECT_EQ(p.type["huygens_attempts_total"], "counter");
  EXPECT_EQ(p.samples["huygens_attempts_total{result=scheduled,profile=default}"], 3);
  EXPECT_EQ(p.samples["huygens_attempts_total{result=error,profile=default}"], 1);
  EXPECT_EQ(p.samples.size(), 2u);
}

TEST(BuildInfo, IsAGaugeOfOneLabelledWithTheVersion) {
  MetricsRegistry registry;
  AddBuildInfo(registry);
  Parsed p = Parse(registry.Expose());
  EXPECT_EQ(p.type["huygens_build_info"], "gauge");
  EXPECT_EQ(p.samples["huygens_build_info{version=" + std::string(Version()) + "}"], 1);
  EXPECT_EQ(p.samples.size(), 1u);
}

TEST(MetricsRegistry, ACounterNeverDecreases) {
  MetricsRegistry registry;
  CounterFamily& c = registry.AddCounter("c_total", "c");
  c.Inc({}, 5);
  c.Inc({}, -3);
  EXPECT_EQ(c.Value(), 5);
}

TEST(MetricsRegistry, AMetricWithoutLabelsHasNoBraces) {
  MetricsRegistry registry;
  registry.AddGauge("huygens_pending_pods", "Pods waiting.").Set({}, 7);
  EXPECT_THAT(registry.Expose(), HasSubstr("\nhuygens_pending_pods 7\n"));
}

TEST(MetricsRegistry, LabelValuesEscapeBackslashQuoteAndNewline) {
  MetricsRegistry registry;
  GaugeFamily& g = registry.AddGauge("g", "g", {"path"});
  std::string odd = "C:\\dir \"quoted\"\nnext";
  g.Set({odd}, 1);
  std::string text = registry.Expose();
  EXPECT_THAT(text, HasSubstr(R"(g{path="C:\\dir \"quoted\"\nnext"} 1)"));
  EXPECT_EQ(Parse(text).samples["g{path=" + odd + "}"], 1);
}

TEST(MetricsRegistry, HelpEscapesBackslashAndNewlineButNotQuotes) {
  MetricsRegistry registry;
  registry.AddCounter("c_total", "a \"b\" c\\d\ne");
  std::string text = registry.Expose();
  EXPECT_THAT(text, HasSubstr("# HELP c_total a \"b\" c\\\\d\\ne\n"));
  EXPECT_EQ(Parse(text).help["c_total"], "a \"b\" c\\d\ne");
}

TEST(MetricsRegistry, HistogramBucketsAreCumulativeAndEndWithInf) {
  MetricsRegistry registry;
  HistogramFamily& h = registry.AddHistogram("lat_seconds", "Latency.", {"op"}, {0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 2.0, 20.0}) h.Observe({"bind"}, v);
  Parsed p = Parse(registry.Expose());
  EXPECT_EQ(p.type["lat_seconds"], "histogram");
  // 0.05 and 0.1 are <= 0.1 (upper bounds are inclusive), 0.5 <= 1, 2 <= 10, 20 only in +Inf.
  EXPECT_EQ(p.samples["lat_seconds_bucket{op=bind,le=0.1}"], 2);
  EXPECT_EQ(p.samples["lat_seconds_bucket{op=bind,le=1}"], 3);
  EXPECT_EQ(p.samples["lat_seconds_bucket{op=bind,le=10}"], 4);
  EXPECT_EQ(p.samples["lat_seconds_bucket{op=bind,le=+Inf}"], 5);
  EXPECT_EQ(p.samples["lat_seconds_count{op=bind}"], 5);
  EXPECT_DOUBLE_EQ(p.samples["lat_seconds_sum{op=bind}"], 22.65);
  // Bucket lines come first in bound order, then sum, then count.
  ASSERT_EQ(p.sample_order.size(), 6u);
  EXPECT_EQ(p.sample_order[3], "lat_seconds_bucket{op=bind,le=+Inf}");
  EXPECT_EQ(p.sample_order[4], "lat_seconds_sum{op=bind}");
  EXPECT_EQ(p.sample_order[5], "lat_seconds_count{op=bind}");
}

TEST(MetricsRegistry, ConcurrentIncrementsAreAllCounted) {
  MetricsRegistry registry;
  CounterFamily& c = registry.AddCounter("c_total", "c", {"t"});
  HistogramFamily& h = registry.AddHistogram("h", "h", {}, {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        c.Inc({t % 2 == 0 ? "even" : "odd"});
        h.Observe({}, 0.5);
        if (i % 1000 == 0) (void)registry.Expose();  // rendering while writers run
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value({"even"}), 10000);
  EXPECT_EQ(c.Value({"odd"}), 10000);
  EXPECT_EQ(h.Count(), 20000u);
  EXPECT_EQ(Parse(registry.Expose()).samples["h_bucket{le=1}"], 20000);
}

TEST(FormatSampleValue, WritesShortestDecimalsAndPrometheusInfinities) {
  EXPECT_EQ(FormatSampleValue(1), "1");
  EXPECT_EQ(FormatSampleValue(0.25), "0.25");
  EXPECT_EQ(FormatSampleValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatSampleValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatSampleValue(NAN), "NaN");
}

TEST(ParseHostPort, AcceptsHostPortEmptyHostAndBracketedV6) {
  EXPECT_EQ(*ParseHostPort("127.0.0.1:8080"), std::make_pair(std::string("127.0.0.1"), 8080));
  EXPECT_EQ(*ParseHostPort(":9"), std::make_pair(std::string("0.0.0.0"), 9));
  EXPECT_EQ(*ParseHostPort("[::1]:0"), std::make_pair(std::string("::1"), 0));
}

TEST(ParseHostPort, RejectsAMissingOrOutOfRangePortNamingTheAddress) {
  for (std::string_view bad : {"localhost", "h:", "h:x1", "h:70000", "h:-1"}) {
    auto r = ParseHostPort(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr(std::string(bad)));
  }
}

TEST(HttpServer, ServesMetricsHealthAndReadinessOnAnEphemeralPort) {
  MetricsRegistry registry;
  registry.AddCounter("served_total", "s").Inc();
  std::atomic<bool> ready{false};
  HttpServer server({.address = "127.0.0.1:0"}, &registry);
  server.AddHealthCheck("ping", [] { return absl::OkStatus(); });
  server.AddReadyCheck("cache-synced", [&] {
    return ready ? absl::OkStatus() : absl::UnavailableError("informers not synced");
  });
  ASSERT_TRUE(server.Start().ok());
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());

  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), ExpositionContentType());
  EXPECT_EQ(Parse(metrics->body).samples["served_total"], 1);

  auto healthz = client.Get("/healthz");
  ASSERT_TRUE(healthz);
  EXPECT_EQ(healthz->status, 200);
  EXPECT_EQ(healthz->body, "ok");

  auto not_ready = client.Get("/readyz");
  ASSERT_TRUE(not_ready);
  EXPECT_EQ(not_ready->status, 503);
  EXPECT_THAT(not_ready->body, HasSubstr("[-]cache-synced failed: informers not synced"));

  ready = true;
  auto now_ready = client.Get("/readyz?verbose");
  ASSERT_TRUE(now_ready);
  EXPECT_EQ(now_ready->status, 200);
  EXPECT_THAT(now_ready->body, HasSubstr("[+]ping ok\n[+]cache-synced ok\n"));
  server.Stop();
}

TEST(HttpServer, AFailingHealthCheckFailsBothEndpoints) {
  HttpServer server({}, nullptr);
  server.AddHealthCheck("leader-renew", [] { return absl::DeadlineExceededError("lease lost"); });
  ASSERT_TRUE(server.Start().ok());
  httplib::Client client("127.0.0.1", server.port());
  for (const auto& [path, failed_status] : {std::pair{"/healthz", 500}, std::pair{"/readyz", 503}}) {
    auto r = client.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, failed_status) << path;
    EXPECT_THAT(r->body, HasSubstr("[-]leader-renew failed: lease lost")) << path;
  }
  auto metrics = client.Get("/metrics");  // no registry: no /metrics
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 404);
}

TEST(HttpServer, ExtraPostHandlersReceiveTheBody) {
  HttpServer server({}, nullptr);
  server.HandlePost("/echo", [](const std::string& body) {
    return HttpReply{.status = 201, .content_type = "text/plain", .body = "got " + body};
  });
  ASSERT_TRUE(server.Start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto r = client.Post("/echo", "hello", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "got hello");
}

// The TCP_NODELAY option of each socket of this process that `port` accepted (local port
// `port`, with a peer: not the listening socket).
std::vector<int> AcceptedSocketsNodelay(int port) {
  std::vector<int> nodelay;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_in local{}, peer{};
    socklen_t local_length = sizeof(local), peer_length = sizeof(peer);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != port ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) {
      continue;
    }
    int value = 0;
    socklen_t length = sizeof(value);
    if (::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, &length) == 0) nodelay.push_back(value);
  }
  return nodelay;
}

TEST(HttpServer, EveryAcceptedConnectionIsTcpNodelay) {
  HttpServer server({}, nullptr);
  server.HandlePost("/filter", [](const std::string&) { return HttpReply{.body = "{}"}; });
  ASSERT_TRUE(server.Start().ok());
  // Two kept-alive connections, as kube-scheduler keeps them; each stays open past its answer.
  httplib::Client first("127.0.0.1", server.port()), second("127.0.0.1", server.port());
  first.set_keep_alive(true);
  second.set_keep_alive(true);
  ASSERT_TRUE(first.Post("/filter", "{}", "application/json"));
  ASSERT_TRUE(second.Get("/healthz"));
  EXPECT_THAT(AcceptedSocketsNodelay(server.port()), ::testing::ElementsAre(1, 1));
}

TEST(ReplaceHost, PutsTheIpInPlaceOfTheHostBracketingIpv6) {
  EXPECT_EQ(*ReplaceHost("0.0.0.0:9464", "10.0.0.7"), "10.0.0.7:9464");
  EXPECT_EQ(*ReplaceHost(":9464", "fd00::7"), "[fd00::7]:9464");
  EXPECT_EQ(*ReplaceHost("[::]:0", "[fd00::7]"), "[fd00::7]:0");
}

TEST(ReplaceHost, RejectsWhatIsNotAnIpAddressNamingIt) {
  for (std::string_view bad : {"$(POD_IP)", "localhost", "", "10.0.0.256"}) {
    auto r = ReplaceHost("0.0.0.0:9464", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(fmt::format("{:?}", bad)));
  }
  EXPECT_FALSE(ReplaceHost("0.0.0.0", "10.0.0.7").ok()) << "no port";
}

// A TCP connection to `to`:port from the loopback address `from` (Linux routes all of 127/8 to
// lo, so each address is another client of the same server). Sends time out after 10 s.
class RawConnection {
 public:
  explicit RawConnection(int port, const std::string& from = "127.0.0.1", const std::string& to = "127.0.0.1")
      : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in local{.sin_family = AF_INET};
    ::inet_pton(AF_INET, from.c_str(), &local.sin_addr);
    sockaddr_in remote{.sin_family = AF_INET, .sin_port = htons(static_cast<uint16_t>(port))};
    ::inet_pton(AF_INET, to.c_str(), &remote.sin_addr);
    timeval timeout{.tv_sec = 10, .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    connected_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) == 0 &&
                 ::connect(fd_, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) == 0;
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  // Sends all of `bytes`; false when the connection is closed (or a send times out).
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  struct Received {
    std::string bytes;
    bool closed = false;  // the server closed the connection (else `within` passed)
  };
  // What the server sends until it closes the connection, waiting at most `within`.
  Received ReadUntilClosed(std::chrono::milliseconds within) {
    Received r;
    const auto deadline = std::chrono::steady_clock::now() + within;
    for (;;) {
      const int64_t left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return r;
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        r.closed = true;
        return r;
      }
      r.bytes.append(buffer, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

// Sends one byte on each of `connections` every `interval` until destroyed: slow clients that
// never finish a request, each byte well within any per-read timeout.
class Dripper {
 public:
  Dripper(std::vector<RawConnection*> connections, std::chrono::milliseconds interval)
      : thread_([this, connections, interval] {
          std::unique_lock<std::mutex> lock(mu_);
          while (!stop_) {
            for (RawConnection* c : connections) c->Send("a");
            wakeup_.wait_for(lock, interval, [this] { return stop_; });
          }
        }) {}
  ~Dripper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wakeup_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable wakeup_;
  bool stop_ = false;
  std::thread thread_;
};

constexpr char kHealthzRequest[] = "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

// This process's peak resident set size, in bytes (VmHWM).
int64_t PeakRss() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

TEST(HttpServer, ListensOnlyOnItsBindAddress) {
  auto address = ReplaceHost("0.0.0.0:0", "127.0.0.2");
  ASSERT_TRUE(address.ok()) << address.status();
  HttpServer server({.address = *address}, nullptr);
  ASSERT_TRUE(server.Start().ok());
  RawConnection bound(server.port(), "127.0.0.1", "127.0.0.2");
  ASSERT_TRUE(bound.connected());
  ASSERT_TRUE(bound.Send(kHealthzRequest));
  EXPECT_THAT(bound.ReadUntilClosed(std::chrono::seconds(5)).bytes, StartsWith("HTTP/1.1 200"));
  // The same port on another local address: nobody listens there (connection refused).
  RawConnection other(server.port(), "127.0.0.1", "127.0.0.1");
  EXPECT_FALSE(other.connected());
}

TEST(HttpServer, AnOversizedBodyIsRefusedWith413WithoutBeingRead) {
  HttpServer server({.max_body_bytes = 1 << 20}, nullptr);
  std::atomic<int> handled{0};
  server.HandlePost("/echo", [&](const std::string&) {
    ++handled;
    return HttpReply{};
  });
  ASSERT_TRUE(server.Start().ok());
  const int64_t peak_before = PeakRss();
  constexpr std::size_t kBody = 256u << 20;
  RawConnection c(server.port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(fmt::format("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", kBody)));
  // The client sends its body while the server answers; the server reads none of it and closes,
  // so the sends fail once the kernel's buffers are full.
  std::size_t sent = 0;
  std::thread sender([&] {
    const std::string chunk(1 << 20, 'x');
    while (sent < kBody && c.Send(chunk)) sent += chunk.size();
  });
  const RawConnection::Received reply = c.ReadUntilClosed(std::chrono::seconds(10));
  sender.join();
  EXPECT_THAT(reply.bytes, StartsWith("HTTP/1.1 413"));
  EXPECT_THAT(reply.bytes, HasSubstr("over this server's limit of 1048576 bytes"));
  EXPECT_TRUE(reply.closed);
  EXPECT_EQ(handled, 0);
  EXPECT_LT(sent, kBody / 4) << "the server stopped taking the body";
  EXPECT_LT(PeakRss() - peak_before, int64_t{64} << 20) << "the body was not buffered";
}

TEST(HttpServer, ABodyWithoutContentLengthIsRefusedWith411) {
  HttpServer server({}, nullptr);
  std::atomic<int> handled{0};
  server.HandlePost("/echo", [&](const std::string&) {
    ++handled;
    return HttpReply{};
  });
  ASSERT_TRUE(server.Start().ok());
  RawConnection c(server.port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"));
  const RawConnection::Received reply = c.ReadUntilClosed(std::chrono::seconds(5));
  EXPECT_THAT(reply.bytes, StartsWith("HTTP/1.1 411"));
  EXPECT_TRUE(reply.closed);
  EXPECT_EQ(handled, 0);
}

TEST(HttpServer, HeadersOverTheLimitAreRefused) {
  HttpServer server({}, nullptr);
  ASSERT_TRUE(server.Start().ok());
  // Each line is short enough for cpp-httplib; all of them are not.
  std::string request = "GET /healthz HTTP/1.1\r\nHost: t\r\n";
  while (request.size() <= kMaxHeaderBytes) request += "X-Filler: " + std::string(1000, 'a') + "\r\n";
  request += "Connection: close\r\n\r\n";
  RawConnection c(server.port());
  ASSERT_TRUE(c.connected());
  c.Send(request);  // may fail part-way: the server stops reading at the limit
  const RawConnection::Received reply = c.ReadUntilClosed(std::chrono::seconds(5));
  EXPECT_THAT(reply.bytes, StartsWith("HTTP/1.1 400"));
  EXPECT_TRUE(reply.closed);
}

TEST(HttpServer, SlowClientsDoNotStarveHealthz) {
  HttpServer server({}, nullptr);
  server.AddHealthCheck("ping", [] { return absl::OkStatus(); });
  ASSERT_TRUE(server.Start().ok());
  // Twice the connections one client may hold: half are served (each on its own thread), the
  // others closed; each sends a header byte every 200 ms and never ends its request.
  std::vector<std::unique_ptr<RawConnection>> slow;
  std::vector<RawConnection*> drip;
  for (int i = 0; i < 16; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server.port()));
    slow.back()->Send("GET /healthz HTTP/1.1\r\nX-Slow: ");
    drip.push_back(slow.back().get());
  }
  Dripper dripper(drip, std::chrono::milliseconds(200));
  // A probe from another address (the kubelet's) is answered at once.
  RawConnection probe(server.port(), "127.0.0.2");
  ASSERT_TRUE(probe.connected());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(probe.Send(kHealthzRequest));
  const RawConnection::Received reply = probe.ReadUntilClosed(std::chrono::seconds(5));
  EXPECT_THAT(reply.bytes, StartsWith("HTTP/1.1 200"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(HttpServer, ARequestThatDoesNotArriveWithinTheTimeoutIsCutOff) {
  HttpServer server({.request_timeout = std::chrono::milliseconds(300)}, nullptr);
  ASSERT_TRUE(server.Start().ok());
  RawConnection slow(server.port());
  ASSERT_TRUE(slow.connected());
  Dripper dripper({&slow}, std::chrono::milliseconds(50));
  EXPECT_TRUE(slow.ReadUntilClosed(std::chrono::seconds(5)).closed);
}

TEST(HttpServer, ConnectionsOverTheClientAndServerLimitsAreClosedUnanswered) {
  HttpServer server({.max_connections = 3, .max_connections_per_client = 2}, nullptr);
  ASSERT_TRUE(server.Start().ok());
  // Admitted in the order they connect: two of 127.0.0.1, one of 127.0.0.2 (all idle).
  RawConnection first(server.port()), second(server.port()), other_client(server.port(), "127.0.0.2");
  ASSERT_TRUE(first.connected() && second.connected() && other_client.connected());
  RawConnection third(server.port());  // over 127.0.0.1's limit
  ASSERT_TRUE(third.connected());
  third.Send(kHealthzRequest);
  RawConnection::Received refused = third.ReadUntilClosed(std::chrono::seconds(5));
  EXPECT_TRUE(refused.closed);
  EXPECT_EQ(refused.bytes, "");
  RawConnection fourth(server.port(), "127.0.0.3");  // over the server's limit
  ASSERT_TRUE(fourth.connected());
  fourth.Send(kHealthzRequest);
  refused = fourth.ReadUntilClosed(std::chrono::seconds(5));
  EXPECT_TRUE(refused.closed);
  EXPECT_EQ(refused.bytes, "");
  // The admitted ones are served.
  ASSERT_TRUE(other_client.Send(kHealthzRequest));
  EXPECT_THAT(other_client.ReadUntilClosed(std::chrono::seconds(5)).bytes, StartsWith("HTTP/1.1 200"));
}

// A CA, a server certificate for 127.0.0.1 and two client certificates (common names
// "system:kube-scheduler" and "intruder") signed by it, and a client certificate of another CA,
// made with the openssl command in a fresh folder; PEM files DIR/<name>.{crt,key}.
class TlsFiles {
 public:
  TlsFiles() : dir_(std::filesystem::temp_directory_path() / ("huygens-tls-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ok_ = Run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.crt") &&
          Run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other-ca -keyout other-ca.key -out other-ca.crt") &&
          Signed("server", "127.0.0.1", "ca", "subjectAltName=IP:127.0.0.1") &&
          Signed("scheduler", "system:kube-scheduler", "ca", "") && Signed("intruder", "intruder", "ca", "") &&
          Signed("stranger", "system:kube-scheduler", "other-ca", "");
  }
  ~TlsFiles() { std::filesystem::remove_all(dir_); }
  bool ok() const { return ok_; }
  std::string Path(const std::string& file) const { return (dir_ / file).string(); }

 private:
  bool Run(const std::string& command) const {
    return std::system(("cd '" + dir_.string() + "' && " + command + " >/dev/null 2>&1").c_str()) == 0;
  }
  bool Signed(const std::string& name, const std::string& cn, const std::string& ca, const std::string& ext) const {
    std::string command = "openssl req -new -newkey rsa:2048 -nodes -subj '/CN=" + cn + "' -keyout " + name +
                          ".key -out " + name + ".csr && openssl x509 -req -in " + name + ".csr -CA " + ca +
                          ".crt -CAkey " + ca + ".key -CAcreateserial -days 1 -out " + name + ".crt";
    if (!ext.empty()) command += " -extfile <(printf '" + ext + "')";
    return Run("bash -c \"" + command + "\"");
  }
  std::filesystem::path dir_;
  bool ok_ = false;
};

// An HTTPS client of `server` presenting `client` (a TlsFiles name; "" for none).
httplib::Result TlsGet(const TlsFiles& files, int port, const std::string& client, const std::string& path) {
  httplib::SSLClient c("127.0.0.1", port, client.empty() ? std::string() : files.Path(client + ".crt"),
                       client.empty() ? std::string() : files.Path(client + ".key"));
  c.set_ca_cert_path(files.Path("ca.crt").c_str());
  c.enable_server_certificate_verification(true);
  c.set_connection_timeout(std::chrono::seconds(5));
  return c.Get(path.c_str());
}

TEST(HttpServer, TlsWithClientCertificatesAcceptsOnlyTheAllowedNamesOfTheClientCa) {
  TlsFiles files;
  ASSERT_TRUE(files.ok()) << "openssl failed";
  HttpServer server({.tls = TlsOptions{.cert_file = files.Path("server.crt"),
                                       .key_file = files.Path("server.key"),
                                       .client_ca_file = files.Path("ca.crt"),
                                       .allowed_client_names = {"system:kube-scheduler"}}},
                    nullptr);
  server.HandlePost("/filter", [](const std::string&) { return HttpReply{.body = "{}"}; });
  ASSERT_TRUE(server.Start().ok());
  auto allowed = TlsGet(files, server.port(), "scheduler", "/healthz");
  ASSERT_TRUE(allowed) << httplib::to_string(allowed.error());
  EXPECT_EQ(allowed->status, 200);
  // The CA's client with another name: refused on every path.
  auto intruder = TlsGet(files, server.port(), "intruder", "/healthz");
  ASSERT_TRUE(intruder) << httplib::to_string(intruder.error());
  EXPECT_EQ(intruder->status, 403);
  EXPECT_THAT(intruder->body, HasSubstr("\"intruder\""));
  // No certificate, or one of another CA: the handshake fails.
  EXPECT_FALSE(TlsGet(files, server.port(), "", "/healthz"));
  EXPECT_FALSE(TlsGet(files, server.port(), "stranger", "/healthz"));
  // Plain HTTP gets no answer either.
  httplib::Client plain("127.0.0.1", server.port());
  plain.set_connection_timeout(std::chrono::seconds(5));
  auto r = plain.Get("/healthz");
  EXPECT_TRUE(!r || r->status != 200);
}

TEST(HttpServer, TlsFilesThatDoNotLoadAreAnErrorNamingThem) {
  TlsFiles files;
  ASSERT_TRUE(files.ok()) << "openssl failed";
  // The key of another certificate.
  HttpServer server({.tls = TlsOptions{.cert_file = files.Path("server.crt"), .key_file = files.Path("intruder.key")}},
                    nullptr);
  absl::Status status = server.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("server.crt"));
  HttpServer missing({.tls = TlsOptions{.cert_file = "/nonexistent.crt", .key_file = "/nonexistent.key"}}, nullptr);
  EXPECT_EQ(missing.Start().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HttpServer, ATlsHandshakeThatDoesNotFinishWithinTheTimeoutIsCutOff) {
  TlsFiles files;
  ASSERT_TRUE(files.ok()) << "openssl failed";
  HttpServer server({.request_timeout = std::chrono::milliseconds(300),
                     .tls = TlsOptions{.cert_file = files.Path("server.crt"), .key_file = files.Path("server.key")}},
                    nullptr);
  ASSERT_TRUE(server.Start().ok());
  RawConnection slow(server.port());
  ASSERT_TRUE(slow.connected());
  // A TLS record header announcing 16 KiB of handshake, whose bytes then come slowly.
  ASSERT_TRUE(slow.Send(std::string("\x16\x03\x01\x40\x00", 5)));
  Dripper dripper({&slow}, std::chrono::milliseconds(50));
  EXPECT_TRUE(slow.ReadUntilClosed(std::chrono::seconds(5)).closed);
  auto healthz = TlsGet(files, server.port(), "", "/healthz");  // a client that does not dawdle
  ASSERT_TRUE(healthz) << httplib::to_string(healthz.error());
  EXPECT_EQ(healthz->status, 200);
}

TEST(HttpServer, StopDoesNotWaitOutAClientsKeptAliveConnection) {
  // kube-scheduler keeps its connection to the extender open between calls.
  HttpServer server({}, nullptr);
  ASSERT_TRUE(server.Start().ok());
  httplib::Client client("127.0.0.1", server.port());
  client.set_keep_alive(true);
  ASSERT_TRUE(client.Get("/healthz"));
  auto start = std::chrono::steady_clock::now();
  server.Stop();
  // cpp-httplib's default would hold Stop for its 5 s keep-alive timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(HttpServer, ABusyPortIsAnUnavailableErrorNamingTheAddress) {
  HttpServer first({}, nullptr);
  ASSERT_TRUE(first.Start().ok());
  std::string address = "127.0.0.1:" + std::to_string(first.port());
  HttpServer second({.address = address}, nullptr);
  absl::Status s = second.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr(address));
}

}  // namespace
}  // namespace huygens::serving
