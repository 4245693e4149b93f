#include "agent/capacity.h"

#include <charconv>
#include <cmath>
#include <string>

#include "agent/read_file.h"
#include "fmt/format.h"
#include "kube/rest_client.h"
#include "nlohmann/json.hpp"

namespace huygens::agent {
namespace {

absl::Status Bad(std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(fmt::format("capacity factors: {}: {}", field, problem));
}

absl::StatusOr<std::map<int, double>> FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Bad("(root)", "expected a JSON object");
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1) {
    return Bad("version", "must be 1");
  }
  auto nodes = j.find("numaNodes");
  if (nodes == j.end() || !nodes->is_object()) return Bad("numaNodes", "expected an object");
  std::map<int, double> out;
  for (const auto& [key, value] : nodes->items()) {
    const std::string field = fmt::format("numaNodes[{:?}]", key);
    int id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (key.empty() || ec != std::errc() || end != key.data() + key.size() || id < 0) {
      return Bad(field, "the key is not a NUMA node id");
    }
    if (!value.is_number()) return Bad(field, "expected a number in [0, 1]");
    const double factor = value.get<double>();
    if (!std::isfinite(factor) || factor < 0 || factor > 1) {
      return Bad(field, fmt::format("{} is not in [0, 1]", factor));
    }
    out[id] = factor;
  }
  return out;
}

}  // namespace

absl::StatusOr<std::map<int, double>> ParseCapacityFactors(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("(root)", "not JSON");
  return FromJson(j);
}

absl::StatusOr<std::map<int, double>> ReadCapacityFactors(const CapacitySourceConfig& source,
                                                         std::chrono::milliseconds timeout) {
  if (!source.file.empty()) {
    absl::StatusOr<std::string> text = ReadTextFile(source.file);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::map<int, double>> parsed = ParseCapacityFactors(*text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {}", source.file, std::string(parsed.status().message())));
    }
    return parsed;
  }
  if (source.url.empty()) return std::map<int, double>();
  // http://host:port/path -> server http://host:port, path /path.
  const std::string_view url = source.url;
  const std::size_t slash = url.find('/', std::string_view("http://").size());
  kube::RestConfig config;
  config.server = std::string(url.substr(0, slash));
  config.qps = 0;
  config.timeout = timeout;
  config.connect_timeout = timeout;
  absl::StatusOr<std::unique_ptr<kube::RestClient>> rest = kube::RestClient::Create(config);
  if (!rest.ok()) return rest.status();
  kube::HttpRequest request;
  request.path = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  absl::StatusOr<nlohmann::json> body = (*rest)->Send(request);
  if (!body.ok()) {
    return absl::Status(body.status().code(), fmt::format("{}: {}", source.url,
                                                          std::string(body.status().message())));
  }
  absl::StatusOr<std::map<int, double>> parsed = FromJson(*body);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", source.url, std::string(parsed.status().message())));
  }
  return parsed;
}

}  // namespace huygens::agent
