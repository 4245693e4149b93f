#include "topology/picture.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;

TEST(TopologyPicture, ListsEachCoreWithItsCpusUnderItsNumaNodeAndL3Group) {
  // SingleSocketHT: 4 cores, siblings n / n+4.
  const std::string picture = TopologyPicture(testing::SingleSocketHT());
  EXPECT_THAT(picture, HasSubstr("socket 0\n  NUMA node 0  memory"));
  EXPECT_THAT(picture, HasSubstr("    L3 group 0\n      core 0    cpus 0,4\n"));
  EXPECT_THAT(picture, HasSubstr("      core 3    cpus 3,7\n"));
  EXPECT_THAT(picture, HasSubstr("summary: 1 sockets, 1 NUMA nodes (1 with CPUs), 1 L3 groups, 4 cores, 8 CPUs online"));
}

TEST(TopologyPicture, MarksFollowTheirCpus) {
  const std::string picture = TopologyPicture(testing::SingleSocketHT(), {{1, "a"}, {5, "a"}, {2, "S"}});
  EXPECT_THAT(picture, HasSubstr("      core 0    cpus 0,4\n"));
  EXPECT_THAT(picture, HasSubstr("      core 1    cpus 1(a),5(a)\n"));
  EXPECT_THAT(picture, HasSubstr("      core 2    cpus 2(S),6\n"));
}

}  // namespace
}  // namespace huygens
