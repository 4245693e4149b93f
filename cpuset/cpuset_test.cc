#include "cpuset/cpuset.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<int> Iota(int first, int last, int step = 1) {
  std::vector<int> out;
  for (int i = first; i <= last; i += step) out.push_back(i);
  return out;
}

// Names each parameterised case after its `name` field.
struct CaseName {
  template <typename Param>
  std::string operator()(const ::testing::TestParamInfo<Param>& p) const {
    return p.param.name;
  }
};

// ",00000000" repeated n times: n all-zero low-order mask groups.
std::string ZeroGroups(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += ",00000000";
  return s;
}

// ---- cpu-list parsing -------------------------------------------------------------------------

struct ParseCase {
  const char* name;
  std::string text;
  std::vector<int> members;
  std::string canonical;  // ToString() of the parsed set
};
void PrintTo(const ParseCase& c, std::ostream* os) { *os << c.name; }

class ParseValid : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseValid, ParsesToTheExpectedMembersAndCanonicalForm) {
  const ParseCase& c = GetParam();
  absl::StatusOr<CpuSet> s = CpuSet::Parse(c.text);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->ToVector(), ElementsAreArray(c.members));
  EXPECT_EQ(s->ToString(), c.canonical);
  // The canonical form parses back to the same set.
  absl::StatusOr<CpuSet> again = CpuSet::Parse(s->ToString());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *s);
}

INSTANTIATE_TEST_SUITE_P(
    CpuList, ParseValid,
    ::testing::Values(
        ParseCase{"EmptyStringIsTheEmptySet", "", {}, ""},
        ParseCase{"NewlineOnlyIsTheEmptySet", "\n", {}, ""},
        ParseCase{"SingleCpu", "5", {5}, "5"},
        ParseCase{"ListWithRanges", "0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
        ParseCase{"TwoConsecutiveIdsBecomeARange", "4,5", {4, 5}, "4-5"},
        ParseCase{"UnsortedAndOverlappingEntriesAreMerged", "8,0-3,2-5,1", {0, 1, 2, 3, 4, 5, 8},
                  "0-5,8"},
        ParseCase{"SysfsTrailingNewlineIsAccepted", "0-3\n", {0, 1, 2, 3}, "0-3"},
        ParseCase{"SurroundingWhitespaceIsAccepted", "  2-3 \t", {2, 3}, "2-3"},
        ParseCase{"SingleElementRange", "7-7", {7}, "7"},
        ParseCase{"LeadingZerosAreDecimal", "010", {10}, "10"},
        ParseCase{"KernelStridedRange", "0-15:2/4", {0, 1, 4, 5, 8, 9, 12, 13},
                  "0-1,4-5,8-9,12-13"},
        ParseCase{"StridedRangeWhoseLastGroupIsCut", "100-126:2/25", {100, 101, 125, 126},
                  "100-101,125-126"},
        ParseCase{"StrideUsingTheWholeGroupIsAPlainRange", "0-5:3/3", {0, 1, 2, 3, 4, 5}, "0-5"},
        ParseCase{"StrideOfOneInEight", "0-31:1/8", {0, 8, 16, 24}, "0,8,16,24"},
        ParseCase{"StridedRangeMixedWithPlainEntries", "1,4-11:1/2,20", {1, 4, 6, 8, 10, 20},
                  "1,4,6,8,10,20"},
        ParseCase{"LargestCpuIs8191", "8191", {8191}, "8191"},
        ParseCase{"RangeUpToTheLargestCpu", "8188-8191", {8188, 8189, 8190, 8191}, "8188-8191"},
        ParseCase{"RangeAcrossAWordBoundary", "62-65", {62, 63, 64, 65}, "62-65"}),
    CaseName());

TEST(CpuSetParse, WholeRangeIsEveryCpu) {
  absl::StatusOr<CpuSet> s = CpuSet::Parse("0-8191");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->Size(), CpuSet::kMaxCpus);
  EXPECT_EQ(s->Min(), 0);
  EXPECT_EQ(s->Max(), 8191);
  EXPECT_EQ(s->ToString(), "0-8191");
}

struct BadCase {
  const char* name;
  std::string text;
  std::string token;     // the quoted token the error must name
  size_t position;       // its byte position
  std::string problem;   // words the error must contain
};
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class ParseInvalid : public ::testing::TestWithParam<BadCase> {};

// Checks that `parse(c.text)` fails with InvalidArgument quoting the token at its position.
void ExpectNamedError(const BadCase& c, absl::StatusOr<CpuSet> (*parse)(std::string_view)) {
  absl::StatusOr<CpuSet> s = parse(c.text);
  ASSERT_FALSE(s.ok()) << "parsed as " << *s;
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(s.status().message());
  EXPECT_THAT(msg, HasSubstr("\"" + c.token + "\" at position " + std::to_string(c.position)));
  EXPECT_THAT(msg, HasSubstr(c.problem));
}

TEST_P(ParseInvalid, IsAnErrorNamingTheTokenAndItsPosition) {
  ExpectNamedError(GetParam(), &CpuSet::Parse);
}

INSTANTIATE_TEST_SUITE_P(
    CpuList, ParseInvalid,
    ::testing::Values(
        BadCase{"ReversedRange", "3-1", "3-1", 0, "reversed range"},
        BadCase{"ReversedRangeAfterOtherEntries", "0,5-2", "5-2", 2, "reversed range"},
        BadCase{"EmptyEntryBetweenCommas", "1,,2", "", 2, "empty entry"},
        BadCase{"LeadingComma", ",1", "", 0, "empty entry"},
        BadCase{"TrailingComma", "1,", "", 2, "empty entry"},
        BadCase{"Letter", "a", "a", 0, "bad cpu id"},
        BadCase{"NegativeId", "-1", "-1", 0, "bad range"},
        BadCase{"IdAboveTheMaximum", "99999", "99999", 0, "above the maximum 8191"},
        BadCase{"FirstIdAboveTheMaximum", "8192", "8192", 0, "above the maximum 8191"},
        BadCase{"RangeEndAboveTheMaximum", "0-8192", "0-8192", 0, "above the maximum"},
        BadCase{"HugeNumberDoesNotOverflow", "99999999999999999999", "99999999999999999999", 0,
                "bad cpu id"},
        BadCase{"TrailingGarbageAfterRange", "0-3x", "0-3x", 0, "bad range"},
        BadCase{"TrailingGarbageAfterId", "0,7;", "7;", 2, "bad cpu id"},
        BadCase{"SpaceInsideTheList", "1, 2", " 2", 2, "bad cpu id"},
        BadCase{"PositionCountsLeadingWhitespace", "  1,x", "x", 4, "bad cpu id"},
        BadCase{"HexPrefix", "0x3", "0x3", 0, "bad cpu id"},
        BadCase{"DoubleDash", "1--3", "1--3", 0, "bad range"},
        BadCase{"StrideWithoutGroup", "0-15:2", "0-15:2", 0, "malformed stride"},
        BadCase{"StrideWithEmptyGroup", "0-15:2/", "0-15:2/", 0, "malformed stride"},
        BadCase{"StrideWithLetters", "0-15:a/4", "0-15:a/4", 0, "malformed stride"},
        BadCase{"StrideWithTwoColons", "0-15:2/4:1", "0-15:2/4:1", 0, "malformed stride"},
        BadCase{"StrideGroupOfZero", "0-15:0/0", "0-15:0/0", 0, "0 < used <= group"},
        BadCase{"StrideUsingNothing", "0-15:0/4", "0-15:0/4", 0, "0 < used <= group"},
        BadCase{"StrideUsingMoreThanTheGroup", "0-15:5/4", "0-15:5/4", 0, "0 < used <= group"},
        BadCase{"StrideOnASingleCpu", "3:1/2", "3:1/2", 0, "stride without a range"},
        BadCase{"StrideOnAReversedRange", "9-1:1/2", "9-1:1/2", 0, "reversed range"},
        BadCase{"StrideBeyondTheMaximum", "0-9000:1/2", "0-9000:1/2", 0, "above the maximum"}),
    CaseName());

TEST(CpuSetParse, ErrorQuotesTheWholeInput) {
  absl::StatusOr<CpuSet> s = CpuSet::Parse("0-3,x");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("cpu-list \"0-3,x\""));
}

TEST(CpuSetParse, ErrorEscapesControlCharacters) {
  absl::StatusOr<CpuSet> s = CpuSet::Parse(std::string("1,\x01"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("\"\\x01\" at position 2"));
}

// ---- mask parsing -----------------------------------------------------------------------------

struct MaskCase {
  const char* name;
  std::string mask;
  std::vector<int> members;
};
void PrintTo(const MaskCase& c, std::ostream* os) { *os << c.name; }

class MaskValid : public ::testing::TestWithParam<MaskCase> {};

TEST_P(MaskValid, ParsesToTheExpectedMembers) {
  const MaskCase& c = GetParam();
  absl::StatusOr<CpuSet> s = CpuSet::ParseMask(c.mask);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->ToVector(), ElementsAreArray(c.members));
  // ToMask with as many groups as the input reproduces it (lower-case, zero-padded).
  const int groups = static_cast<int>(std::count(c.mask.begin(), c.mask.end(), ',')) + 1;
  absl::StatusOr<CpuSet> back = CpuSet::ParseMask(s->ToMask(groups));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *s);
}

INSTANTIATE_TEST_SUITE_P(
    Mask, MaskValid,
    ::testing::Values(
        MaskCase{"AllZeroIsEmpty", "00000000", {}},
        MaskCase{"SysfsTwoGroups", "00000000,0000ffff", Iota(0, 15)},
        MaskCase{"FortyEightBitsWide", "0000ffff,ffffffff", Iota(0, 47)},
        MaskCase{"ShortFirstGroup", "ff,00000001", {0, 32, 33, 34, 35, 36, 37, 38, 39}},
        MaskCase{"SingleShortGroup", "5", {0, 2}},
        MaskCase{"UpperCaseHex", "0000FFFF", Iota(0, 15)},
        MaskCase{"TrailingNewline", "00000003\n", {0, 1}},
        MaskCase{"BitsInTheHighHalfOfAWord", "80000000,00000000", {63}},
        MaskCase{"ThirdGroup", "00000001,00000000,00000000", {64}},
        MaskCase{"HighestCpuIs8191", "80000000" + ZeroGroups(255), {8191}},
        MaskCase{"ManyLeadingZeroGroupsBeyondTheMaximum", "0" + ZeroGroups(300), {}},
        MaskCase{"LeadingZeroGroupsAboveTheMaximumBeforeOneBit",
                 "00000000" + ZeroGroups(299) + ",00000001", {0}}),
    CaseName());

class MaskInvalid : public ::testing::TestWithParam<BadCase> {};

TEST_P(MaskInvalid, IsAnErrorNamingTheGroupAndItsPosition) {
  ExpectNamedError(GetParam(), &CpuSet::ParseMask);
}

INSTANTIATE_TEST_SUITE_P(
    Mask, MaskInvalid,
    ::testing::Values(
        BadCase{"Empty", "", "", 0, "empty mask"},
        BadCase{"HexPrefix", "0xff", "0xff", 0, "not a hex digit"},
        BadCase{"NonHexLetter", "0000000g", "0000000g", 0, "not a hex digit"},
        BadCase{"GroupOfNineDigits", "000000000", "000000000", 0, "1 to 8 hex digits"},
        BadCase{"EmptyGroup", "ff,,00000000", "", 3, "1 to 8 hex digits"},
        BadCase{"TrailingComma", "000000ff,", "", 9, "1 to 8 hex digits"},
        BadCase{"InnerSpace", "00ff 00ff", "00ff 00ff", 0, "1 to 8 hex digits"},
        BadCase{"NegativeSign", "-1", "-1", 0, "not a hex digit"},
        BadCase{"BitAbove8191", "00000001" + ZeroGroups(256), "00000001", 0,
                "bit above cpu 8191"}),
    CaseName());

// ---- formatting -------------------------------------------------------------------------------

TEST(CpuSetToMask, PadsToTheRequestedGroupsAndGrowsWhenNeeded) {
  EXPECT_EQ(CpuSet().ToMask(), "00000000");
  EXPECT_EQ(CpuSet::Range(0, 15).ToMask(2), "00000000,0000ffff");
  EXPECT_EQ(CpuSet::Range(0, 47).ToMask(), "0000ffff,ffffffff");
  EXPECT_EQ(CpuSet({32}).ToMask(1), "00000001,00000000");
  EXPECT_EQ(CpuSet({1}).ToMask(0), "00000002");
  EXPECT_EQ(CpuSet({0, 65}).ToMask(), "00000002,00000000,00000001");
}

TEST(CpuSetToString, FormatsCanonicalRanges) {
  EXPECT_EQ(CpuSet().ToString(), "");
  EXPECT_EQ(CpuSet({0, 1}).ToString(), "0-1");
  EXPECT_EQ(CpuSet({0, 2, 4}).ToString(), "0,2,4");
  EXPECT_EQ(CpuSet({63, 64}).ToString(), "63-64");
  EXPECT_EQ(CpuSet({8190, 8191}).ToString(), "8190-8191");
  EXPECT_EQ(CpuSet::Range(0, 8191).ToString(), "0-8191");
}

TEST(CpuSetStream, PrintsTheQuotedList) {
  std::ostringstream os;
  os << CpuSet({1, 2, 3});
  EXPECT_EQ(os.str(), "\"1-3\"");
}

// ---- construction -----------------------------------------------------------------------------

TEST(CpuSetRange, CoversEveryWordBoundaryCase) {
  struct Case {
    int first, last;
  };
  for (Case c : {Case{0, 0}, Case{0, 63}, Case{63, 64}, Case{1, 62}, Case{64, 127},
                 Case{5, 700}, Case{8191, 8191}, Case{0, 8191}}) {
    SCOPED_TRACE(testing::Message() << c.first << "-" << c.last);
    EXPECT_THAT(CpuSet::Range(c.first, c.last).ToVector(), ElementsAreArray(Iota(c.first, c.last)));
  }
  EXPECT_TRUE(CpuSet::Range(5, 4).Empty());
}

TEST(CpuSetFromIds, AcceptsIdsInRangeAndRejectsOthers) {
  const std::vector<int> ok = {3, 1, 8191, 1};
  absl::StatusOr<CpuSet> s = CpuSet::FromIds(ok);
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->ToVector(), ElementsAre(1, 3, 8191));
  for (int bad : {-1, 8192, 1 << 30}) {
    const std::vector<int> ids = {0, bad};
    absl::StatusOr<CpuSet> r = CpuSet::FromIds(ids);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(std::to_string(bad)));
  }
}

// ---- bitmap (word) access ------------------------------------------------------------------

TEST(CpuSetBitmap, BitBOfWordWIsCpu64WPlusB) {
  const CpuSet s = {0, 5, 63, 64, 130};
  EXPECT_THAT(s.Bitmap(), ElementsAre((uint64_t{1} << 63) | (uint64_t{1} << 5) | 1, uint64_t{1},
                                     uint64_t{1} << 2));
}

TEST(CpuSetBitmap, HaveNoTrailingZeroWord) {
  EXPECT_TRUE(CpuSet().Bitmap().empty());
  // 700 is in word 10; removing it leaves only word 0.
  const CpuSet s = CpuSet({1, 700}).Difference(CpuSet({700}));
  EXPECT_THAT(s.Bitmap(), ElementsAre(uint64_t{2}));
  EXPECT_EQ(CpuSet::Range(0, CpuSet::kMaxCpus - 1).Bitmap().size(), CpuSet::kMaxWords);
}

TEST(CpuSetFromBitmap, IsTheInverseOfBitmapAndDropsTrailingZeroWords) {
  for (const CpuSet& s : {CpuSet(), CpuSet({0}), CpuSet({63, 64, 511, 512}),
                          CpuSet::Range(0, CpuSet::kMaxCpus - 1)}) {
    SCOPED_TRACE(s.ToString());
    EXPECT_EQ(CpuSet::FromBitmap(s.Bitmap()), s);
  }
  const std::vector<uint64_t> padded = {0, uint64_t{1} << 3, 0, 0};
  const CpuSet s = CpuSet::FromBitmap(padded);
  EXPECT_EQ(s, CpuSet({67}));
  EXPECT_EQ(s.Bitmap().size(), 2u);  // equal sets have equal storage
  EXPECT_TRUE(CpuSet::FromBitmap(std::vector<uint64_t>(3, 0)).Empty());
}

TEST(CpuSetDeathTest, FromBitmapBeyondTheLargestSetAborts) {
  const std::vector<uint64_t> too_many(CpuSet::kMaxWords + 1, 1);
  EXPECT_DEATH(CpuSet::FromBitmap(too_many), "kMaxWords");
}

TEST(CpuSetDeathTest, LiteralWithAnIdOutOfRangeAborts) {
  EXPECT_DEATH(CpuSet({8192}), "out of range");
  EXPECT_DEATH(CpuSet({-1}), "out of range");
}

// ---- set algebra ------------------------------------------------------------------------------

struct AlgebraCase {
  const char* name;
  CpuSet a, b;
  CpuSet union_, intersection, difference;
  bool a_subset_of_b;
  bool intersects;
};
void PrintTo(const AlgebraCase& c, std::ostream* os) { *os << c.name; }

class Algebra : public ::testing::TestWithParam<AlgebraCase> {};

TEST_P(Algebra, MatchesTheExpectedSets) {
  const AlgebraCase& c = GetParam();
  EXPECT_EQ(c.a.Union(c.b), c.union_);
  EXPECT_EQ(c.b.Union(c.a), c.union_);
  EXPECT_EQ(c.a.Intersection(c.b), c.intersection);
  EXPECT_EQ(c.b.Intersection(c.a), c.intersection);
  EXPECT_EQ(c.a.Difference(c.b), c.difference);
  EXPECT_EQ(c.a.IsSubsetOf(c.b), c.a_subset_of_b);
  EXPECT_EQ(c.a.Intersects(c.b), c.intersects);
  EXPECT_EQ(c.a.IntersectionSize(c.b), c.intersection.Size());
  const CpuSet both[] = {c.a, c.b};
  EXPECT_EQ(CpuSet::UnionAll(both), c.union_);
  // Results are canonical: equal sets compare equal and hash equally whatever built them.
  absl::flat_hash_set<CpuSet> hashed = {c.a.Intersection(c.b), c.intersection};
  EXPECT_EQ(hashed.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    CpuSet, Algebra,
    ::testing::Values(
        AlgebraCase{"BothEmpty", {}, {}, {}, {}, {}, true, false},
        AlgebraCase{"EmptyAndNonEmpty", {}, {1, 2}, {1, 2}, {}, {}, true, false},
        AlgebraCase{"Disjoint", {0, 1}, {2, 3}, {0, 1, 2, 3}, {}, {0, 1}, false, false},
        AlgebraCase{"Overlapping", {0, 1, 2}, {2, 3}, {0, 1, 2, 3}, {2}, {0, 1}, false, true},
        AlgebraCase{"ProperSubset", {1}, {0, 1, 2}, {0, 1, 2}, {1}, {}, true, true},
        AlgebraCase{"Equal", {4, 5}, {4, 5}, {4, 5}, {4, 5}, {}, true, true},
        AlgebraCase{"DifferentWordCounts", {1, 600}, {1}, {1, 600}, {1}, {600}, false, true},
        AlgebraCase{"HighWordsCancelOut", {1, 8191}, {8191}, {1, 8191}, {8191}, {1}, false, true},
        AlgebraCase{"LongerSetIsNotASubsetOfShorter", {1, 700}, {1, 2}, {1, 2, 700}, {1}, {700},
                    false, true}),
    CaseName());

TEST(CpuSetAlgebra, DifferenceThatEmptiesHighWordsTrimsStorage) {
  const CpuSet a = CpuSet({0, 1000}).Difference(CpuSet({1000}));
  EXPECT_EQ(a, CpuSet({0}));
  EXPECT_EQ(a.Max(), 0);
  EXPECT_EQ(a.ToMask(), "00000001");
  EXPECT_TRUE(CpuSet({1000}).Difference(CpuSet({1000})).Empty());
  EXPECT_TRUE(CpuSet({1000}).Intersection(CpuSet({1001})).Empty());
}

TEST(CpuSetAlgebra, UnionAllOfNothingIsEmpty) {
  EXPECT_TRUE(CpuSet::UnionAll({}).Empty());
  const CpuSet sets[] = {{1}, {200}, {}, {8191}};
  EXPECT_EQ(CpuSet::UnionAll(sets), CpuSet({1, 200, 8191}));
}

// ---- queries ----------------------------------------------------------------------------------

TEST(CpuSetQueries, SizeMinMaxContains) {
  const CpuSet s = {3, 64, 8191};
  EXPECT_EQ(s.Size(), 3);
  EXPECT_EQ(s.Min(), 3);
  EXPECT_EQ(s.Max(), 8191);
  EXPECT_TRUE(s.Contains(64));
  EXPECT_FALSE(s.Contains(65));
  EXPECT_FALSE(s.Contains(-1));
  EXPECT_FALSE(s.Contains(8192));
  EXPECT_FALSE(s.Contains(1 << 30));
  EXPECT_TRUE(CpuSet().Empty());
  EXPECT_EQ(CpuSet().Size(), 0);
}

TEST(CpuSetDeathTest, MinAndMaxOfTheEmptySetAbort) {
  EXPECT_DEATH((void)CpuSet().Min(), "empty set");
  EXPECT_DEATH((void)CpuSet().Max(), "empty set");
}

TEST(CpuSetFirst, TakesTheSmallestMembers) {
  const CpuSet s = {2, 5, 63, 64, 100, 8191};
  EXPECT_EQ(s.First(0), CpuSet());
  EXPECT_EQ(s.First(1), CpuSet({2}));
  EXPECT_EQ(s.First(3), CpuSet({2, 5, 63}));
  EXPECT_EQ(s.First(4), CpuSet({2, 5, 63, 64}));
  EXPECT_EQ(s.First(6), s);
  EXPECT_EQ(CpuSet::Range(0, 8191).First(8191), CpuSet::Range(0, 8190));
}

TEST(CpuSetDeathTest, FirstMoreThanSizeAborts) {
  EXPECT_DEATH((void)CpuSet({1}).First(2), "First");
  EXPECT_DEATH((void)CpuSet({1}).First(-1), "First");
}

TEST(CpuSetIteration, VisitsMembersInAscendingOrder) {
  const CpuSet s = {8191, 0, 64, 63, 127, 128};
  std::vector<int> seen;
  for (int cpu : s) seen.push_back(cpu);
  EXPECT_THAT(seen, ElementsAre(0, 63, 64, 127, 128, 8191));
  EXPECT_EQ(s.ToVector(), seen);
  EXPECT_EQ(std::distance(s.begin(), s.end()), 6);
  EXPECT_EQ(CpuSet().begin(), CpuSet().end());
  auto it = s.begin();
  EXPECT_EQ(*it++, 0);
  EXPECT_EQ(*it, 63);
}

TEST(CpuSetIteration, WorksWithStandardAlgorithms) {
  const CpuSet s = CpuSet::Range(10, 20);
  EXPECT_EQ(std::count_if(s.begin(), s.end(), [](int c) { return c % 2 == 0; }), 6);
  EXPECT_EQ(*std::find(s.begin(), s.end(), 15), 15);
}

TEST(CpuSetOrdering, ComparesLikeMasksAsNumbers) {
  // {3} is 0b1000, {0,1,2} is 0b0111: the set with the larger highest member is larger.
  EXPECT_TRUE(CpuSet({0, 1, 2}) < CpuSet({3}));
  EXPECT_FALSE(CpuSet({3}) < CpuSet({0, 1, 2}));
  EXPECT_TRUE(CpuSet() < CpuSet({0}));
  EXPECT_TRUE(CpuSet({0, 5}) < CpuSet({1, 5}));
  EXPECT_TRUE(CpuSet({63}) < CpuSet({64}));
  EXPECT_TRUE(CpuSet({1, 8000}) < CpuSet({0, 8001}));
  EXPECT_FALSE(CpuSet({4}) < CpuSet({4}));
  // A strict weak order usable as a map key.
  std::map<CpuSet, int> m = {{CpuSet({3}), 1}, {CpuSet({0, 1, 2}), 2}, {CpuSet({3}), 3}};
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.begin()->first, CpuSet({0, 1, 2}));
}

// ---- Builder ----------------------------------------------------------------------------------

TEST(CpuSetBuilder, AddsAndRemovesMembersAndSets) {
  CpuSet::Builder b;
  b.Add(5).Add(1000).Add(CpuSet({1, 2, 3})).Remove(2).Remove(CpuSet({3, 4}));
  EXPECT_TRUE(b.Contains(1000));
  EXPECT_FALSE(b.Contains(2));
  EXPECT_FALSE(b.Contains(-1));
  EXPECT_FALSE(b.Contains(9000));
  EXPECT_EQ(b.Build(), CpuSet({1, 5, 1000}));
  // Removing the highest member gives a canonical set equal to one built directly.
  b.Remove(1000).Remove(-3).Remove(9000);
  EXPECT_EQ(b.Build(), CpuSet({1, 5}));
  EXPECT_FALSE(CpuSet({1, 5}) < b.Build());
  EXPECT_FALSE(b.Build() < CpuSet({1, 5}));
}

TEST(CpuSetBuilder, StartsFromASetAndLeavesItUnchanged) {
  const CpuSet start = {1, 2};
  CpuSet::Builder b(start);
  b.Add(3).Remove(1);
  EXPECT_EQ(b.Build(), CpuSet({2, 3}));
  EXPECT_EQ(start, CpuSet({1, 2}));
}

TEST(CpuSetBuilder, AcceptsTheBoundaryCpus) {
  CpuSet::Builder b;
  b.Add(0).Add(CpuSet::kMaxCpus - 1);
  EXPECT_EQ(b.Build().ToString(), "0,8191");
}

TEST(CpuSetDeathTest, BuilderAddOutOfRangeAborts) {
  CpuSet::Builder b;
  EXPECT_DEATH(b.Add(CpuSet::kMaxCpus), "out of range");
}

TEST(CpuSetValue, CopiesAreIndependent) {
  CpuSet a = {1, 2};
  const CpuSet b = a;
  a = a.Union(CpuSet({700}));
  EXPECT_EQ(b, CpuSet({1, 2}));
  EXPECT_EQ(a, CpuSet({1, 2, 700}));
}

}  // namespace
}  // namespace huygens
