#include "agent/sock_diag.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::agent {
namespace {

using ::testing::HasSubstr;

template <typename T>
std::string Bytes(const T& value) {
  return std::string(reinterpret_cast<const char*>(&value), sizeof(T));
}

// A netlink message of `type` around `payload`, padded to NLMSG_ALIGN.
std::string Message(uint16_t type, const std::string& payload) {
  nlmsghdr header{};
  header.nlmsg_len = static_cast<uint32_t>(NLMSG_HDRLEN + payload.size());
  header.nlmsg_type = type;
  std::string out = Bytes(header) + payload;
  out.resize(NLMSG_ALIGN(out.size()), '\0');
  return out;
}

// A route attribute of `type` around `payload`, padded to RTA_ALIGN.
std::string Attribute(uint16_t type, const std::string& payload) {
  rtattr attr{};
  attr.rta_len = static_cast<uint16_t>(RTA_LENGTH(payload.size()));
  attr.rta_type = type;
  std::string out = Bytes(attr) + payload;
  out.resize(RTA_ALIGN(out.size()), '\0');
  return out;
}

std::string TcpInfo(uint64_t acked, uint64_t received) {
  tcp_info info{};
  info.tcpi_bytes_acked = acked;
  info.tcpi_bytes_received = received;
  return Bytes(info);
}

// inet_diag_msg for an IPv4 socket 10.0.0.1:sport -> 10.0.0.2:dport.
inet_diag_msg V4Msg(uint16_t sport, uint16_t dport, uint32_t inode) {
  inet_diag_msg msg{};
  msg.idiag_family = AF_INET;
  msg.idiag_state = 1;
  msg.id.idiag_sport = htons(sport);
  msg.id.idiag_dport = htons(dport);
  const uint8_t src[4] = {10, 0, 0, 1}, dst[4] = {10, 0, 0, 2};
  std::memcpy(msg.id.idiag_src, src, 4);
  std::memcpy(msg.id.idiag_dst, dst, 4);
  msg.idiag_inode = inode;
  return msg;
}

std::string Socket(const inet_diag_msg& msg, const std::string& attributes) {
  std::string payload = Bytes(msg);
  payload.resize(NLMSG_ALIGN(payload.size()), '\0');
  return Message(SOCK_DIAG_BY_FAMILY, payload + attributes);
}

std::string Done() { return Message(NLMSG_DONE, Bytes(0)); }

std::string Error(int error) {
  nlmsgerr e{};
  e.error = error;
  return Message(NLMSG_ERROR, Bytes(e));
}

TEST(SockDiagRequest, AsksForEveryEstablishedTcpSocketOfTheFamilyWithItsTcpInfo) {
  const std::string bytes = BuildTcpDumpRequest(AF_INET6, 7);
  ASSERT_EQ(bytes.size(), sizeof(nlmsghdr) + sizeof(inet_diag_req_v2));
  nlmsghdr header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  EXPECT_EQ(header.nlmsg_len, bytes.size());
  EXPECT_EQ(header.nlmsg_type, SOCK_DIAG_BY_FAMILY);
  EXPECT_EQ(header.nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
  EXPECT_EQ(header.nlmsg_seq, 7u);
  inet_diag_req_v2 request;
  std::memcpy(&request, bytes.data() + sizeof(header), sizeof(request));
  EXPECT_EQ(request.sdiag_family, AF_INET6);
  EXPECT_EQ(request.sdiag_protocol, IPPROTO_TCP);
  EXPECT_EQ(request.idiag_ext, 1U << (INET_DIAG_INFO - 1));
  EXPECT_EQ(request.idiag_states, 1U << 1);  // TCP_ESTABLISHED
}

TEST(SockDiagParse, ReadsEndpointsCountersAndInodeOfEachSocket) {
  inet_diag_msg v6{};
  v6.idiag_family = AF_INET6;
  v6.id.idiag_sport = htons(443);
  v6.id.idiag_dport = htons(50000);
  const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 3};
  const uint8_t fd00[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  std::memcpy(v6.id.idiag_src, fd00, 16);
  std::memcpy(v6.id.idiag_dst, mapped, 16);
  v6.idiag_inode = 99;
  const std::string reply =
      Socket(V4Msg(80, 40000, 1234),
             Attribute(INET_DIAG_MEMINFO, std::string(16, '\1')) +
                 Attribute(INET_DIAG_INFO, TcpInfo(1000, 2000))) +
      Socket(v6, Attribute(INET_DIAG_INFO, TcpInfo(5, 6))) + Done();
  absl::StatusOr<std::vector<TcpConnection>> got = ParseSockDiagDump(reply);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].local.ToString(), "10.0.0.1:80");
  EXPECT_EQ((*got)[0].remote.ToString(), "10.0.0.2:40000");
  EXPECT_EQ((*got)[0].bytes_acked, 1000u);
  EXPECT_EQ((*got)[0].bytes_received, 2000u);
  EXPECT_EQ((*got)[0].inode, 1234u);
  EXPECT_EQ((*got)[1].local.ToString(), "[fd00::1]:443");
  // An IPv4 peer of an AF_INET6 socket is the IPv4 address.
  EXPECT_EQ((*got)[1].remote.ToString(), "10.0.0.3:50000");
  EXPECT_EQ((*got)[1].remote.ip, *ParseIpAddress("10.0.0.3"));
  EXPECT_EQ((*got)[1].bytes_acked, 5u);
  EXPECT_EQ((*got)[1].inode, 99u);
}

TEST(SockDiagParse, AcceptsATcpInfoJustLongEnoughForTheCounters) {
  const std::string info =
      TcpInfo(3, 4).substr(0, offsetof(tcp_info, tcpi_bytes_received) + sizeof(uint64_t));
  auto got = ParseSockDiagDump(Socket(V4Msg(1, 2, 3), Attribute(INET_DIAG_INFO, info)) + Done());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].bytes_received, 4u);
}

TEST(SockDiagParse, AChunkWithoutDoneIsIncompleteAndOneWithDoneIsComplete) {
  const std::string socket = Socket(V4Msg(1, 2, 3), Attribute(INET_DIAG_INFO, TcpInfo(0, 0)));
  auto first = ParseSockDiagChunk(socket);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->done);
  EXPECT_EQ(first->connections.size(), 1u);
  auto last = ParseSockDiagChunk(Message(NLMSG_NOOP, "") + Done());
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(last->done);
  EXPECT_TRUE(last->connections.empty());
}

TEST(SockDiagParse, AnEmptyDumpIsNoConnections) {
  auto got = ParseSockDiagDump(Done());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->empty());
}

TEST(SockDiagParse, KernelErrorsKeepTheirErrno) {
  auto missing = ParseSockDiagDump(Error(-ENOENT));
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr("sock_diag: kernel error"));
  auto denied = ParseSockDiagDump(Message(NLMSG_DONE, Bytes(-EPERM)));
  EXPECT_TRUE(absl::IsPermissionDenied(denied.status())) << denied.status();
  auto odd = ParseSockDiagDump(Error(-100000));
  EXPECT_TRUE(absl::IsUnknown(odd.status())) << odd.status();
  // An acknowledgement (error 0) is no error.
  EXPECT_TRUE(ParseSockDiagDump(Error(0) + Done()).ok());
}

struct MalformedCase {
  std::string name;
  std::string bytes;
  std::string error;
};

std::vector<MalformedCase> MalformedCases() {
  const std::string good = Socket(V4Msg(1, 2, 3), Attribute(INET_DIAG_INFO, TcpInfo(1, 2)));
  std::string long_len = good;
  long_len[0] = static_cast<char>(0xff);  // nlmsg_len beyond the data
  std::string short_len = good;
  std::memset(short_len.data(), 0, 4);
  short_len[0] = 8;  // nlmsg_len below the header's size
  inet_diag_msg unix_family = V4Msg(1, 2, 3);
  unix_family.idiag_family = AF_UNIX;
  std::string overrun = Attribute(INET_DIAG_INFO, TcpInfo(1, 2));
  overrun[0] = static_cast<char>(0xf0);  // rta_len beyond the message
  overrun[1] = static_cast<char>(0xff);
  return {
      {"a reply without NLMSG_DONE is truncated", good, "reply ends without NLMSG_DONE"},
      {"a header cut short is truncated", good.substr(0, 10),
       "message 0 at byte 0: 10 bytes left, a header needs 16"},
      {"a length beyond the data is truncated", long_len, "does not fit"},
      {"a length shorter than the header is malformed", short_len, "nlmsg_len 8 does not fit"},
      {"a second message cut short is reported with its position", good + good.substr(0, 40),
       "message 1 at byte " + std::to_string(good.size())},
      {"an inet_diag_msg cut short is malformed", Message(SOCK_DIAG_BY_FAMILY, std::string(20, 0)),
       "inet_diag_msg needs 72 bytes, the message has 20"},
      {"a family other than IP is malformed",
       Socket(unix_family, Attribute(INET_DIAG_INFO, TcpInfo(1, 2))) + Done(),
       "idiag_family 1 is neither AF_INET nor AF_INET6"},
      {"an attribute overrunning its message is malformed", Socket(V4Msg(1, 2, 3), overrun),
       "rta_len"},
      {"an attribute header cut short is malformed",
       Socket(V4Msg(1, 2, 3), Attribute(INET_DIAG_INFO, TcpInfo(1, 2))).substr(0, 16 + 72 + 2),
       "does not fit"},
      {"a socket without tcp_info is malformed",
       Socket(V4Msg(1, 2, 3), Attribute(INET_DIAG_MEMINFO, std::string(16, 0))) + Done(),
       "no INET_DIAG_INFO attribute"},
      {"a tcp_info without the byte counters is malformed",
       Socket(V4Msg(1, 2, 3), Attribute(INET_DIAG_INFO, TcpInfo(1, 2).substr(0, 104))) + Done(),
       "INET_DIAG_INFO holds 104 bytes of tcp_info"},
      {"an unknown message type is malformed", Message(77, "") + Done(),
       "unexpected message type 77"},
      {"an error message without its code is malformed", Message(NLMSG_ERROR, "ab"),
       "NLMSG_ERROR without an error code"},
      {"data after NLMSG_DONE is malformed", Done() + good, "data after NLMSG_DONE"},
  };
}

TEST(SockDiagParse, MalformedRepliesAreErrorsNamingTheProblem) {
  for (const MalformedCase& c : MalformedCases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::vector<TcpConnection>> got = ParseSockDiagDump(c.bytes);
    ASSERT_FALSE(got.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(got.status())) << got.status();
    EXPECT_THAT(got.status().message(), HasSubstr(c.error));
    EXPECT_THAT(got.status().message(), HasSubstr("sock_diag: "));
  }
}

TEST(IpAddress, ParsesBothFamiliesAndPrintsThemBack) {
  EXPECT_EQ(ParseIpAddress("10.1.2.3")->ToString(), "10.1.2.3");
  EXPECT_EQ(ParseIpAddress("FD00:0::1")->ToString(), "fd00::1");
  EXPECT_EQ(*ParseIpAddress("::ffff:10.1.2.3"), *ParseIpAddress("10.1.2.3"));
  EXPECT_TRUE(ParseIpAddress("127.0.0.53")->IsLoopback());
  EXPECT_TRUE(ParseIpAddress("::1")->IsLoopback());
  EXPECT_FALSE(ParseIpAddress("10.0.0.1")->IsLoopback());
  auto bad = ParseIpAddress("10.1.2");
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(bad.status().message(), HasSubstr("\"10.1.2\" is not an IP address"));
}

}  // namespace
}  // namespace huygens::agent
