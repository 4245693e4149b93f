#include "agent/status.h"

#include "gtest/gtest.h"

namespace huygens::agent {
namespace {

TEST(StatusToJsonTest, WritesTheWireFormInOrder) {
  const AllocationStatus status{.state = AllocationState::kApplied, .observed = {{"app", "4-7"}}};
  EXPECT_EQ(StatusToJson(status),
            R"({"version":1,"state":"applied","reason":"","observed":{"containers":{"app":"4-7"}}})");
}

TEST(StatusToJsonTest, AReasonThatIsNotUtf8IsWrittenWithReplacementCharacters) {
  // A runtime's error text cut inside "é": dump() would throw and end the reconcile pass.
  const AllocationStatus status{.state = AllocationState::kFailed, .reason = "runtime: caf\xC3"};
  EXPECT_EQ(StatusToJson(status),
            "{\"version\":1,\"state\":\"failed\",\"reason\":\"runtime: caf\xEF\xBF\xBD\","
            "\"observed\":{\"containers\":{}}}");
}

}  // namespace
}  // namespace huygens::agent
