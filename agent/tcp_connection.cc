#include "agent/tcp_connection.h"

#include <arpa/inet.h>

#include <algorithm>
#include <string>

#include "fmt/format.h"

namespace huygens::agent {
namespace {

constexpr std::array<uint8_t, 12> kV4MappedPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

}  // namespace

IpAddress IpAddress::FromV4(const uint8_t (&v4)[4]) {
  IpAddress a;
  std::copy(kV4MappedPrefix.begin(), kV4MappedPrefix.end(), a.bytes.begin());
  std::copy(v4, v4 + 4, a.bytes.begin() + 12);
  return a;
}

IpAddress IpAddress::FromV6(const uint8_t (&v6)[16]) {
  IpAddress a;
  std::copy(v6, v6 + 16, a.bytes.begin());
  return a;
}

bool IpAddress::IsV4() const {
  return std::equal(kV4MappedPrefix.begin(), kV4MappedPrefix.end(), bytes.begin());
}

bool IpAddress::IsLoopback() const {
  if (IsV4()) return bytes[12] == 127;
  static constexpr std::array<uint8_t, 16> kV6Loopback = {0, 0, 0, 0, 0, 0, 0, 0,
                                                         0, 0, 0, 0, 0, 0, 0, 1};
  return bytes == kV6Loopback;
}

std::string IpAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (IsV4()) {
    inet_ntop(AF_INET, bytes.data() + 12, text, sizeof(text));
  } else {
    inet_ntop(AF_INET6, bytes.data(), text, sizeof(text));
  }
  return text;
}

absl::StatusOr<IpAddress> ParseIpAddress(std::string_view text) {
  const std::string s(text);
  uint8_t v4[4];
  if (inet_pton(AF_INET, s.c_str(), v4) == 1) return IpAddress::FromV4(v4);
  uint8_t v6[16];
  if (inet_pton(AF_INET6, s.c_str(), v6) == 1) return IpAddress::FromV6(v6);
  return absl::InvalidArgumentError(fmt::format("\"{}\" is not an IP address", text));
}

std::string Endpoint::ToString() const {
  if (ip.IsV4()) return fmt::format("{}:{}", ip.ToString(), port);
  return fmt::format("[{}]:{}", ip.ToString(), port);
}

}  // namespace huygens::agent
