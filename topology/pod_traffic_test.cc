#include "topology/pod_traffic.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/nrt.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;

constexpr char kField[] = "metadata.annotations[\"huygens.io/pod-traffic\"]";

TEST(PodTraffic, EncodesTheDocumentedFormInCanonicalOrder) {
  const PodTraffic traffic{.window_seconds = 30,
                           .pairs = {{"shop/web-0", "shop/db-0", 100},
                                     {"a/x", "b/y", 500},
                                     {"a/x", "a/w", 100}}};
  EXPECT_EQ(EncodePodTraffic(traffic),
            R"({"version":1,"windowSeconds":30,"pairs":[)"
            R"({"a":"a/x","b":"b/y","bytesPerSecond":500},)"
            R"({"a":"a/w","b":"a/x","bytesPerSecond":100},)"
            R"({"a":"shop/db-0","b":"shop/web-0","bytesPerSecond":100}]})");
}

TEST(PodTraffic, ParsesWhatItEncodesBackInCanonicalForm) {
  const PodTraffic traffic{.window_seconds = 20,
                           .pairs = {{"ns/b", "ns/a", 7}, {"ns/c", "ns/d", 9}}};
  absl::StatusOr<PodTraffic> back = ParsePodTraffic(EncodePodTraffic(traffic), kField);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, CanonicalPodTraffic(traffic));
  EXPECT_EQ(back->pairs[0].a, "ns/c");
  EXPECT_EQ(back->pairs[1].a, "ns/a");
}

TEST(PodTraffic, AcceptsNoPairs) {
  absl::StatusOr<PodTraffic> got =
      ParsePodTraffic(R"({"version":1,"windowSeconds":10,"pairs":[]})", kField);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->window_seconds, 10);
  EXPECT_TRUE(got->pairs.empty());
}

struct BadCase {
  std::string name;
  std::string text;
  std::string error;
};

TEST(PodTraffic, RejectsMalformedTextNamingTheField) {
  const std::vector<BadCase> cases = {
      {"text that is not JSON is an error", "{", ": "},
      {"a document that is not an object is an error", "[]", "expected an object, got array"},
      {"an unknown field is an error",
       R"({"version":1,"windowSeconds":30,"pairs":[],"extra":1})", ".extra: unknown field"},
      {"a missing version is an error", R"({"windowSeconds":30,"pairs":[]})", ".version: missing"},
      {"another version is an error", R"({"version":2,"windowSeconds":30,"pairs":[]})",
       ".version: unsupported version 2"},
      {"a missing window is an error", R"({"version":1,"pairs":[]})", ".windowSeconds: missing"},
      {"a window of zero seconds is an error", R"({"version":1,"windowSeconds":0,"pairs":[]})",
       ".windowSeconds: 0 is not a positive number of seconds"},
      {"missing pairs are an error", R"({"version":1,"windowSeconds":30})", ".pairs: missing"},
      {"pairs that are not an array are an error",
       R"({"version":1,"windowSeconds":30,"pairs":{}})", ".pairs: expected an array"},
      {"a pair that is not an object is an error",
       R"({"version":1,"windowSeconds":30,"pairs":[1]})", ".pairs[0]: expected an object"},
      {"a pod name without a namespace is an error",
       R"({"version":1,"windowSeconds":30,"pairs":[{"a":"web","b":"ns/db","bytesPerSecond":1}]})",
       R"(.pairs[0].a: "web" is not a pod name of the form namespace/name)"},
      {"a pod name with two slashes is an error",
       R"({"version":1,"windowSeconds":30,"pairs":[{"a":"ns/x","b":"ns/d/b","bytesPerSecond":1}]})",
       R"(.pairs[0].b: "ns/d/b" is not a pod name)"},
      {"a pair of one pod with itself is an error",
       R"({"version":1,"windowSeconds":30,"pairs":[{"a":"ns/x","b":"ns/x","bytesPerSecond":1}]})",
       R"(.pairs[0].b: the same pod as a ("ns/x"))"},
      {"a pair given twice in either order is an error",
       R"({"version":1,"windowSeconds":30,"pairs":[{"a":"ns/x","b":"ns/y","bytesPerSecond":1},)"
       R"({"a":"ns/y","b":"ns/x","bytesPerSecond":2}]})",
       R"(.pairs[1]: the pair "ns/y" and "ns/x" is given twice)"},
      {"a rate given as text is an error",
       R"({"version":1,"windowSeconds":30,"pairs":[{"a":"ns/x","b":"ns/y","bytesPerSecond":"1"}]})",
       ".pairs[0].bytesPerSecond: expected a non-negative integer, got string"},
      {"a negative rate is an error",
       R"({"version":1,"windowSeconds":30,"pairs":[{"a":"ns/x","b":"ns/y","bytesPerSecond":-1}]})",
       ".pairs[0].bytesPerSecond: expected a non-negative integer, got -1"},
      {"a pair without a rate is an error",
       R"({"version":1,"windowSeconds":30,"pairs":[{"a":"ns/x","b":"ns/y"}]})",
       ".pairs[0].bytesPerSecond: missing"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<PodTraffic> got = ParsePodTraffic(c.text, kField);
    ASSERT_FALSE(got.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(got.status())) << got.status();
    EXPECT_THAT(got.status().message(), HasSubstr(kField));
    EXPECT_THAT(got.status().message(), HasSubstr(c.error));
  }
}

TEST(PodTrafficFromNrt, IsAbsentWhenTheObjectHasNoAnnotation) {
  NrtObject nrt;
  nrt.name = "n1";
  absl::StatusOr<std::optional<PodTraffic>> got = PodTrafficFromNrt(nrt);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->has_value());
}

TEST(PodTrafficFromNrt, ReadsTheAnnotationAndNamesTheObjectInErrors) {
  NrtObject nrt;
  nrt.name = "n1";
  nrt.annotations[kPodTrafficAnnotation] =
      R"({"version":1,"windowSeconds":30,"pairs":[{"a":"ns/x","b":"ns/y","bytesPerSecond":5}]})";
  absl::StatusOr<std::optional<PodTraffic>> got = PodTrafficFromNrt(nrt);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->pairs, (std::vector<PodTrafficPair>{{"ns/x", "ns/y", 5}}));

  nrt.annotations[kPodTrafficAnnotation] = R"({"version":1,"pairs":[]})";
  got = PodTrafficFromNrt(nrt);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "NodeResourceTopology \"n1\": metadata.annotations[\"huygens.io/pod-traffic\"]."
            "windowSeconds: missing");
}

}  // namespace
}  // namespace huygens
