#include "kube/resource.h"

#include "gtest/gtest.h"

namespace huygens::kube {
namespace {

TEST(ResourceVersionNumber, ReadsAnEtcdRevision) {
  EXPECT_EQ(ResourceVersionNumber("0"), 0u);
  EXPECT_EQ(ResourceVersionNumber("184467"), 184467u);
  EXPECT_EQ(ResourceVersionNumber("18446744073709551615"), UINT64_MAX);
}

TEST(ResourceVersionNumber, RefusesWhatIsNotAPlainDecimalNumber) {
  for (const char* v : {"", "-1", "+1", " 1", "1 ", "12a", "0x10", "18446744073709551616", "abc"}) {
    EXPECT_EQ(ResourceVersionNumber(v), std::nullopt) << "'" << v << "'";
  }
}

}  // namespace
}  // namespace huygens::kube
